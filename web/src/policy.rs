//! The policy text a [`JpHost`](crate::JpHost) is given and the edge's ceiling: TOML or JSON
//! with the `access` and `sandbox` tables of `.jp/config.toml`, parsed into one `AccessPolicy`.

use jp_core::policy::{AccessConfig, AccessPolicy, Need, PolicyConfigError, SandboxConfig, widen};
use std::cell::RefCell;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

use crate::js::err;

/// The policy text a host is given: TOML or JSON with optional `access` (RFD 076) and
/// `sandbox` (RFD 016 / D11) tables. Empty: the workspace read-write, no network, no processes.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct PolicyText {
    access: Option<AccessConfig>,
    sandbox: Option<SandboxConfig>,
}

/// Why a policy text does not give a policy.
#[derive(Debug, thiserror::Error)]
enum PolicyTextError {
    /// Text starting with `{` that is not JSON of the two tables.
    #[error("the policy is not valid JSON: {0}")]
    NotJson(serde_json::Error),
    /// Other text that is not TOML of the two tables.
    #[error("the policy is not valid TOML: {0}")]
    NotToml(toml::de::Error),
    /// The tables do not compile.
    #[error("the policy is invalid: {0}")]
    Invalid(PolicyConfigError),
}

/// The host's own policy (a page's, or a host's the operator gave no ceiling).
pub(crate) fn parse_policy(text: &str) -> Result<Arc<AccessPolicy>, JsError> {
    shared((text, None), || policy_from_text(text, HOST_DEFAULT).map_err(err))
}

/// How many policies parsed from text [`shared`] keeps.
const KEPT: usize = 8;

/// A policy's (policy, ceiling) text.
type PolicyKey = (String, Option<String>);

thread_local! {
    /// The policies last parsed, by their text: an edge function makes a host for every project
    /// it opens, each with the operator's policy (parsing and compiling it again was a tenth of
    /// a cold call). A policy is never changed once made, so hosts share it.
    static PARSED: RefCell<Vec<(PolicyKey, Arc<AccessPolicy>)>> = const { RefCell::new(Vec::new()) };
}

/// The policy of `key`, made by `make` unless it was made before; an error is not kept.
fn shared(
    key: (&str, Option<&str>),
    make: impl FnOnce() -> Result<AccessPolicy, JsError>,
) -> Result<Arc<AccessPolicy>, JsError> {
    let found = PARSED.with_borrow(|kept| {
        kept.iter().find(|((p, c), _)| p == key.0 && c.as_deref() == key.1).map(|(_, policy)| policy.clone())
    });
    if let Some(policy) = found {
        return Ok(policy);
    }
    let policy = Arc::new(make()?);
    PARSED.with_borrow_mut(|kept| {
        if kept.len() >= KEPT {
            kept.remove(0);
        }
        kept.push(((key.0.to_owned(), key.1.map(str::to_owned)), policy.clone()));
    });
    Ok(policy)
}

/// What a decision of the default policy says allowed it: the host's own policy (the page's
/// Policy panel), not a stdio tool's default.
const HOST_DEFAULT: &str = "the host's default policy (workspace read-write)";
/// The same at the edge, where the default is the operator's policy.
const OPERATOR_DEFAULT: &str = "the operator's default policy (workspace read-write)";

fn policy_from_text(text: &str, default: &str) -> Result<AccessPolicy, PolicyTextError> {
    Ok(policy_tables(text)?.unwrap_or_else(|| AccessPolicy::workspace_read_write(default)))
}

/// The policy `text` configures, or `None` when it has no `access` or `sandbox` table (empty
/// text included): the default, or at the edge the operator's policy as it is.
fn policy_tables(text: &str) -> Result<Option<AccessPolicy>, PolicyTextError> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Ok(None);
    }
    let parsed: PolicyText = if trimmed.starts_with('{') {
        serde_json::from_str(trimmed).map_err(PolicyTextError::NotJson)?
    } else {
        toml::from_str(trimmed).map_err(PolicyTextError::NotToml)?
    };
    if parsed.access.is_none() && parsed.sandbox.is_none() {
        return Ok(None);
    }
    AccessPolicy::from_config(parsed.sandbox.as_ref(), parsed.access.as_ref())
        .map(Some)
        .map_err(PolicyTextError::Invalid)
}

/// `policy` bounded by `ceiling` (issue 24: the operator's policy at the edge): a `policy` with
/// no table of its own is the ceiling itself; one that grants more is refused with every such
/// right named.
pub(crate) fn bounded_policy(policy: &str, ceiling: &str) -> Result<Arc<AccessPolicy>, JsError> {
    shared((policy, Some(ceiling)), || bounded(policy, ceiling))
}

fn bounded(policy: &str, ceiling: &str) -> Result<AccessPolicy, JsError> {
    let ceiling =
        policy_from_text(ceiling, OPERATOR_DEFAULT).map_err(|e| err(format!("the operator's policy: {e}")))?;
    match policy_tables(policy).map_err(err)? {
        None => Ok(ceiling),
        Some(own) => own.within(ceiling).map_err(|refused| {
            err(format!("the policy grants more than the operator's policy allows: {}", refused.join("; ")))
        }),
    }
}

/// A proposal of learning from the event log (issue 38): `text`, the policy widened by just
/// what one refused request needed, and `added`, that in words.
#[derive(Serialize)]
struct Proposal {
    text: String,
    added: Vec<String>,
}

/// The policy text `policy` widened so that a refused request (`method` on `target`, as the
/// event log shows it) would be allowed: `{ text, added }`, for the page to offer ("allow it for
/// this project?") and the user to accept; `null` when no rule can allow it (jp's own
/// directory, a request this does not learn) or the policy is a `sandbox` table. `exists`: the
/// path exists (a write to it then needs `update`, else `create`).
#[wasm_bindgen(js_name = suggestPolicy)]
pub fn suggest_policy(policy: &str, method: &str, target: &str, exists: bool) -> Result<JsValue, JsError> {
    let trimmed = policy.trim();
    let parsed: PolicyText = if trimmed.is_empty() {
        PolicyText::default()
    } else if trimmed.starts_with('{') {
        serde_json::from_str(trimmed).map_err(|e| err(PolicyTextError::NotJson(e)))?
    } else {
        toml::from_str(trimmed).map_err(|e| err(PolicyTextError::NotToml(e)))?
    };
    if parsed.sandbox.is_some() {
        return Ok(JsValue::NULL);
    }
    let current = policy_from_text(policy, HOST_DEFAULT).map_err(err)?;
    let Some(need) = Need::from_trace(method, target, &|_| exists) else { return Ok(JsValue::NULL) };
    let Some(w) = widen(parsed.access.as_ref(), &current, &[need]).filter(|w| !w.added.is_empty()) else {
        return Ok(JsValue::NULL);
    };
    #[derive(Serialize)]
    struct Text {
        access: AccessConfig,
    }
    let text = toml::to_string(&Text { access: w.access }).map_err(err)?;
    serde_wasm_bindgen::to_value(&Proposal { text, added: w.added }).map_err(err)
}

/// What `policy` grants beyond `ceiling`, one line per right (empty: it only narrows it); an
/// error when either does not parse. The edge answers 403 naming these.
#[wasm_bindgen(js_name = policyExceeds)]
pub fn policy_exceeds(policy: &str, ceiling: &str) -> Result<Vec<String>, JsError> {
    let ceiling =
        policy_from_text(ceiling, OPERATOR_DEFAULT).map_err(|e| err(format!("the operator's policy: {e}")))?;
    Ok(match policy_tables(policy).map_err(err)? {
        None => Vec::new(),
        Some(own) => own.within(ceiling).err().unwrap_or_default(),
    })
}
