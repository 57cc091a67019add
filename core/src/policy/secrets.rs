//! `access.secrets`: a host variable bound to the origins its value may be sent to.
//!
//! ```toml
//! [mcp.servers.github.access]
//! network = { allow = ["https://api.github.com"] }
//! secrets = { GITHUB_TOKEN = ["https://api.github.com"] }
//! ```
//!
//! - A request jp makes itself (`http.*` of a VFS tool or a component, native, page or edge)
//!   may carry `${GITHUB_TOKEN}` in a header to those origins only
//!   ([`check_header_env_for`](AccessPolicy::check_header_env_for)).
//! - A process that reaches the network itself (a stdio tool, an MCP server, a `process.run`
//!   child) gets a placeholder in `GITHUB_TOKEN`, never the value: jp's egress proxy terminates
//!   TLS for those origins and puts the value in place of the placeholder in requests to them
//!   only (`native/src/egress/secrets.rs`). Since jp sees those requests, method, path and header
//!   rules hold there too ([`inspected`](AccessPolicy::inspected)).
//!
//! A binding grants no network access of its own: the network rules still decide every request.

use super::error::NetRuleError;
use super::network::UrlPrefix;
use super::{AccessPolicy, Decision};

/// One `access.secrets` entry: a host variable and the origins it may be sent to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretBinding {
    /// The variable's name in jp's environment (and the process's, holding a placeholder).
    pub name: String,
    /// Where its value may go.
    pub origins: Vec<Origin>,
}

/// `scheme://host:port`, as compared (lower-case host, the scheme's default port filled in).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Origin {
    /// `http` or `https`.
    pub scheme: String,
    /// The host as the policy compares it (lower case, IDNA applied, no brackets on IPv6).
    pub host: String,
    /// The port, explicit or the scheme's default.
    pub port: u16,
}

impl Origin {
    /// An origin as written in `access.secrets`: `scheme://host[:port]`, nothing after.
    pub fn parse(text: &str) -> Result<Self, String> {
        let prefix = UrlPrefix::parse(text).map_err(|e| match e {
            NetRuleError::NotAbsolute { .. } => format!("{text:?} is not an origin; write it as https://host[:port]"),
            other => other.to_string(),
        })?;
        if !prefix.path.is_empty() || text.contains(['?', '#']) {
            return Err(format!(
                "{text:?} is not an origin: a secret is bound to scheme://host[:port]; drop the path (network rules narrow where it may go)"
            ));
        }
        Self::of(&prefix).ok_or_else(|| format!("{text:?} has no port"))
    }

    /// The origin of a URL, when it is an http(s) URL with a host.
    pub fn of_url(url: &str) -> Option<Self> {
        Self::of(&UrlPrefix::parse(url).ok()?)
    }

    fn of(prefix: &UrlPrefix) -> Option<Self> {
        Some(Self {
            scheme: prefix.scheme.clone(),
            host: prefix.host.trim_start_matches('[').trim_end_matches(']').to_owned(),
            port: prefix.port?,
        })
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let default = if self.scheme == "https" { 443 } else { 80 };
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        if self.port == default {
            write!(f, "{}://{host}", self.scheme)
        } else {
            write!(f, "{}://{host}:{}", self.scheme, self.port)
        }
    }
}

/// Whether `name` can be an environment variable's name (letters, digits, `_`, not first a digit).
pub(super) fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Compile `access.secrets`; the error names what is wrong and how to write it.
pub(super) fn compile(
    table: &std::collections::BTreeMap<String, Vec<String>>,
) -> Result<Vec<SecretBinding>, (String, String)> {
    let mut out = Vec::with_capacity(table.len());
    for (name, origins) in table {
        let key = format!("access.secrets.{name}");
        if !valid_name(name) {
            return Err((key, format!("{name:?} is not an environment variable's name (letters, digits and _)")));
        }
        if origins.is_empty() {
            return Err((
                key,
                format!("{name} is bound to no origin; list where it may be sent, e.g. [\"https://api.example.com\"]"),
            ));
        }
        let mut parsed = Vec::with_capacity(origins.len());
        for (i, text) in origins.iter().enumerate() {
            let origin = Origin::parse(text).map_err(|e| (format!("{key}[{i}]"), e))?;
            if !parsed.contains(&origin) {
                parsed.push(origin);
            }
        }
        out.push(SecretBinding { name: name.clone(), origins: parsed });
    }
    Ok(out)
}

impl AccessPolicy {
    /// The `access.secrets` bindings of this policy (its own; a ceiling bounds them when the
    /// policy is made, see `ceiling.rs`).
    pub fn secret_bindings(&self) -> &[SecretBinding] {
        &self.secrets
    }

    /// Whether jp sees inside connections to `host:port` of a process under this policy: an
    /// `https` origin a secret is bound to, whose TLS jp's egress proxy terminates. There every
    /// request is decided by [`check_request`](Self::check_request), so rules finer than an
    /// origin hold for a process that reaches the network itself.
    pub fn inspected(&self, host: &str, port: u16) -> bool {
        let host = super::canonical_host(host.trim_start_matches('[').trim_end_matches(']'));
        self.secrets.iter().flat_map(|b| &b.origins).any(|o| o.scheme == "https" && o.port == port && o.host == host)
    }

    /// Decide whether `${name}` in a header of a request to `url` may be substituted:
    /// `network.envs` allows it everywhere the rules allow a request, `access.secrets` to the
    /// origins it binds `name` to.
    pub fn check_header_env_for(&self, name: &str, url: &str) -> Decision {
        let own = self.check_header_env_for_own(name, url);
        self.bounded(own, |c| c.check_header_env_for(name, url))
    }

    fn check_header_env_for_own(&self, name: &str, url: &str) -> Decision {
        if self.net_envs.contains(name) {
            return Decision::Allow(format!("${{{name}}} allowed by network.envs"));
        }
        let Some(binding) = self.secrets.iter().find(|b| b.name == name) else {
            return Decision::Deny(format!(
                "Access denied: header variable ${{{name}}} is not in the tool's network.envs or access.secrets; bind it to the origins it is for, e.g. secrets = {{ {name} = [\"https://api.example.com\"] }}"
            ));
        };
        let origin = Origin::of_url(url);
        if let Some(origin) = origin.as_ref().filter(|o| binding.origins.contains(o)) {
            return Decision::Allow(format!("${{{name}}} allowed to {origin} by access.secrets"));
        }
        let bound: Vec<String> = binding.origins.iter().map(Origin::to_string).collect();
        Decision::Deny(format!(
            "Access denied: ${{{name}}} is bound to {} by access.secrets, not to {}; a secret goes only where it is bound",
            bound.join(", "),
            origin.map_or_else(|| url.to_owned(), |o| o.to_string())
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::policy::AccessConfig;

    fn policy(secrets: &[(&str, &[&str])]) -> Result<AccessPolicy, String> {
        let table: BTreeMap<String, Vec<String>> =
            secrets.iter().map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect())).collect();
        let access = AccessConfig { secrets: Some(table), ..Default::default() };
        AccessPolicy::from_config(None, Some(&access)).map_err(|e| e.to_string())
    }

    #[test]
    fn origins_are_compared_as_the_policy_compares_hosts() {
        let o = Origin::parse("https://API.GitHub.com.").unwrap();
        assert_eq!((o.scheme.as_str(), o.host.as_str(), o.port), ("https", "api.github.com", 443));
        assert_eq!(o.to_string(), "https://api.github.com");
        assert_eq!(Origin::parse("http://[::1]:8080").unwrap().to_string(), "http://[::1]:8080");
        assert_eq!(Origin::of_url("https://api.github.com:443/repos?x=1"), Some(o));
        for bad in ["https://api.github.com/repos", "api.github.com", "ftp://x", "https://u:p@x", "https://x/?q"] {
            assert!(Origin::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_bound_variable_is_substituted_only_for_its_origins() {
        let p = policy(&[("GITHUB_TOKEN", &["https://api.github.com"])]).unwrap();
        assert!(p.check_header_env_for("GITHUB_TOKEN", "https://api.github.com/user").is_allow());
        for elsewhere in ["https://evil.example/user", "http://api.github.com/user", "https://api.github.com:8443/"] {
            let d = p.check_header_env_for("GITHUB_TOKEN", elsewhere);
            assert!(!d.is_allow(), "{elsewhere}");
            assert!(d.reason().contains("bound to https://api.github.com"), "{}", d.reason());
        }
        assert!(!p.check_header_env_for("OTHER", "https://api.github.com/").is_allow());
        assert!(p.inspected("API.github.com", 443));
        assert!(!p.inspected("api.github.com", 80));
        assert!(p.resolvable_env().any(|v| v == "GITHUB_TOKEN"), "its value is scrubbed like any secret");
    }

    #[test]
    fn bad_bindings_say_what_to_write() {
        let e = policy(&[("GITHUB_TOKEN", &["https://api.github.com/repos"])]).unwrap_err();
        assert!(e.contains("access.secrets.GITHUB_TOKEN[0]") && e.contains("drop the path"), "{e}");
        let e = policy(&[("GITHUB-TOKEN", &["https://api.github.com"])]).unwrap_err();
        assert!(e.contains("not an environment variable"), "{e}");
        let e = policy(&[("T", &[])]).unwrap_err();
        assert!(e.contains("bound to no origin"), "{e}");
    }

    #[test]
    fn a_bound_variable_cannot_also_be_handed_out() {
        for other in ["network = { envs = [\"TOKEN\"] }", "env = [\"TOKEN\"]", "commands.sh = { envs = [\"TOKEN\"] }"] {
            let text = format!("{other}\nsecrets = {{ TOKEN = [\"https://api.example.com\"] }}");
            let access: AccessConfig = toml::from_str(&text).unwrap();
            let e = AccessPolicy::from_config(None, Some(&access)).unwrap_err().to_string();
            assert!(e.contains("access.secrets.TOKEN") && e.contains("would hand out its value"), "{other}: {e}");
        }
    }
}
