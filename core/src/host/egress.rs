//! [`EgressGate`]: the decisions of a process that reaches the network itself (a stdio tool, an
//! MCP server, a `process.run` child), whose traffic leaves through jp's egress proxy. Each
//! `CONNECT host:port` is decided by [`AccessPolicy::check_connect`], each plain-HTTP request by
//! [`AccessPolicy::check_request`] — asked about and traced exactly like a tool's own requests
//! (the [`Settler`] the dispatcher uses too), so `--trace`, `--json` and the MCP log show them.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::policy::{AccessPolicy, Decision, HttpCheck};
use crate::protocol::Id;

use super::{DispatchEvents, Inquirer, Inquiry, InquiryAnswer, NoEvents, TraceEvent};

/// The trace method of a tunnel (`CONNECT host:port`).
pub const CONNECT_METHOD: &str = "net.connect";
/// The trace method of a plain-HTTP request through the proxy (target `METHOD URL`).
pub const HTTP_METHOD: &str = "net.http";
/// The trace method of a placeholder sent where its secret is not bound (target the URL): it
/// went as the placeholder.
pub const PLACEHOLDER_METHOD: &str = "net.placeholder";

/// Why a request or connection was refused ([`EgressGate::connect`], [`EgressGate::request`],
/// and the dispatcher's own decisions). The text is the reason traced and reported.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// The policy denies it.
    #[error("{reason}")]
    Denied {
        /// The policy's reason: the rule that denies it, or that none allows it, and the fix.
        reason: String,
    },
    /// The policy asked and the inquirer (the user, or a non-interactive default) said no.
    #[error("Access denied: {reason}; {why}")]
    Declined {
        /// What was asked: why the policy does not cover it.
        reason: String,
        /// The inquirer's answer.
        why: String,
    },
}

/// One decision settled: allowed, denied, or asked and answered; then traced.
pub(super) struct Settler<'a> {
    pub(super) tool: &'a str,
    pub(super) inquirer: &'a dyn Inquirer,
    pub(super) approve_all: &'a AtomicBool,
}

impl Settler<'_> {
    /// Settle `decision` about `method` on `target`: `Ok` with the rule that allowed it, `Err`
    /// with why it was refused. `id` is the request a `pending` notice refers to, if any.
    pub(super) async fn settle(
        &self,
        method: &str,
        target: &str,
        decision: Decision,
        id: Option<&Id>,
        events: &dyn DispatchEvents,
    ) -> Result<String, Refused> {
        let kind = decision.kind();
        let rule = decision.reason().to_owned();
        let result = match decision {
            Decision::Allow(_) => Ok(()),
            Decision::Deny(reason) => Err(Refused::Denied { reason }),
            Decision::Ask(reason) => {
                if self.approve_all.load(Ordering::SeqCst) {
                    Ok(())
                } else {
                    if let Some(id) = id {
                        events.pending(id, &format!("awaiting user approval: {reason}"));
                    }
                    let inquiry = Inquiry {
                        tool: self.tool.to_owned(),
                        method: method.into(),
                        target: target.into(),
                        reason: reason.clone(),
                    };
                    match self.inquirer.ask(&inquiry).await {
                        InquiryAnswer::Allow => Ok(()),
                        InquiryAnswer::AllowAll => {
                            self.approve_all.store(true, Ordering::SeqCst);
                            Ok(())
                        }
                        InquiryAnswer::Deny(why) => Err(Refused::Declined { reason, why }),
                    }
                }
            }
        };
        // The rule that decided (for an allow or an answered inquiry), or why it was refused.
        let reason = match &result {
            Ok(()) => rule.clone(),
            Err(e) => e.to_string(),
        };
        events.decided(&TraceEvent {
            tool: self.tool.into(),
            method: method.into(),
            target: target.into(),
            decision: kind,
            reason,
            allowed: result.is_ok(),
        });
        result.map(|()| rule)
    }
}

/// Decides the connections of one direct-access process (or of one MCP server for its life):
/// the tool's policy, who answers its inquiries, where decisions are reported.
pub struct EgressGate {
    tool: String,
    policy: Arc<AccessPolicy>,
    inquirer: Arc<dyn Inquirer>,
    trace: Option<Arc<dyn DispatchEvents>>,
    approve_all: Arc<AtomicBool>,
}

impl std::fmt::Debug for EgressGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EgressGate").field("tool", &self.tool).finish_non_exhaustive()
    }
}

impl EgressGate {
    /// The gate of `tool`'s process under `policy`; `approve_all` is shared with the call's
    /// dispatcher, if any (an "allow for the rest of this call" holds for both).
    pub fn new(
        tool: impl Into<String>,
        policy: Arc<AccessPolicy>,
        inquirer: Arc<dyn Inquirer>,
        trace: Option<Arc<dyn DispatchEvents>>,
        approve_all: Arc<AtomicBool>,
    ) -> Self {
        Self { tool: tool.into(), policy, inquirer, trace, approve_all }
    }

    /// The tool whose process this gate decides for.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The policy that decides (also what a kernel sandbox hides from the process: its
    /// sensitive paths).
    pub fn policy(&self) -> &AccessPolicy {
        &self.policy
    }

    fn settler(&self) -> Settler<'_> {
        Settler { tool: &self.tool, inquirer: self.inquirer.as_ref(), approve_all: &self.approve_all }
    }

    fn events(&self) -> &dyn DispatchEvents {
        match &self.trace {
            Some(t) => t.as_ref(),
            None => &NoEvents,
        }
    }

    /// Trace that a request to `url` carried the placeholders of `names`, whose secrets are not
    /// bound to its origin: they went as placeholders (the value never leaves jp for it).
    pub fn note_placeholder(&self, url: &str, names: &[&str]) {
        self.events().decided(&TraceEvent {
            tool: self.tool.clone(),
            method: PLACEHOLDER_METHOD.into(),
            target: url.into(),
            decision: "deny",
            reason: format!(
                "the placeholder of {} was sent to {url}, to which access.secrets does not bind it; it went as the placeholder, without the value",
                names.join(", ")
            ),
            allowed: true,
        });
    }

    /// Decide a tunnel to `host:port` (`CONNECT`): `Ok(rule)` or `Err(why)`.
    pub async fn connect(&self, host: &str, port: u16) -> Result<String, Refused> {
        let target = if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        let decision = self.policy.check_connect(host, port);
        self.settler().settle(CONNECT_METHOD, &target, decision, None, self.events()).await
    }

    /// Decide one plain-HTTP request (absolute URI): `Ok(rule)` or `Err(why)`.
    pub async fn request(&self, request: &HttpCheck<'_>) -> Result<String, Refused> {
        let target = format!("{} {}", request.method, request.url);
        let decision = self.policy.check_request(request);
        self.settler().settle(HTTP_METHOD, &target, decision, None, self.events()).await
    }

    /// [`request`](Self::request) for a request jp will put a bound secret into: as for jp's own
    /// `http.*`, a person is never asked to allow a URL no rule covers when the request carries a
    /// secret they are not shown; it is refused instead.
    pub async fn request_carrying_secret(&self, request: &HttpCheck<'_>) -> Result<String, Refused> {
        let target = format!("{} {}", request.method, request.url);
        let decision = match self.policy.check_request(request) {
            Decision::Ask(reason) => Decision::Deny(format!(
                "Access denied: {reason}; this request carries a secret jp puts in (access.secrets), which goes only to a URL a network rule allows; add it to the network allow list"
            )),
            decision => decision,
        };
        self.settler().settle(HTTP_METHOD, &target, decision, None, self.events()).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::host::DenyInquirer;
    use crate::maybe::BoxFuture;
    use crate::policy::AccessConfig;

    #[derive(Default)]
    struct Recorder(Mutex<Vec<TraceEvent>>);
    impl DispatchEvents for Recorder {
        fn decided(&self, e: &TraceEvent) {
            self.0.lock().unwrap().push(e.clone());
        }
    }

    struct Yes;
    impl Inquirer for Yes {
        fn ask<'a>(&'a self, _: &'a Inquiry) -> BoxFuture<'a, InquiryAnswer> {
            Box::pin(async { InquiryAnswer::Allow })
        }
    }

    fn policy(text: &str) -> Arc<AccessPolicy> {
        let cfg: AccessConfig = toml::from_str(text).unwrap();
        Arc::new(AccessPolicy::from_config(None, Some(&cfg)).unwrap())
    }

    fn block<F: std::future::Future>(f: F) -> F::Output {
        // The futures here never wait on anything but the inquirer, which answers at once.
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        let mut f = std::pin::pin!(f);
        loop {
            if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
                return v;
            }
        }
    }

    #[test]
    fn connections_and_requests_are_decided_and_traced() {
        let trace = Arc::new(Recorder::default());
        let p = policy(r#"network = { allow = ["http://127.0.0.1:8080", "https://127.0.0.1:8080"] }"#);
        let gate = EgressGate::new("t", p, Arc::new(DenyInquirer), Some(trace.clone()), Arc::default());
        assert!(block(gate.connect("127.0.0.1", 8080)).is_ok());
        let denied = block(gate.connect("127.0.0.2", 8080)).unwrap_err();
        let Refused::Denied { reason } = &denied else { panic!("{denied:?}") };
        assert!(reason.contains("127.0.0.2:8080"), "{denied}");
        assert_eq!(&denied.to_string(), reason);
        assert!(block(gate.connect("127.0.0.1", 8081)).is_err());
        assert!(block(gate.request(&HttpCheck::new("GET", "http://127.0.0.1:8080/x"))).is_ok());
        assert!(block(gate.connect("::1", 8080)).is_err());
        let events = trace.0.lock().unwrap();
        let seen: Vec<(&str, &str, bool)> =
            events.iter().map(|e| (e.method.as_str(), e.target.as_str(), e.allowed)).collect();
        assert_eq!(
            seen,
            [
                (CONNECT_METHOD, "127.0.0.1:8080", true),
                (CONNECT_METHOD, "127.0.0.2:8080", false),
                (CONNECT_METHOD, "127.0.0.1:8081", false),
                (HTTP_METHOD, "GET http://127.0.0.1:8080/x", true),
                (CONNECT_METHOD, "[::1]:8080", false),
            ]
        );
    }

    #[test]
    fn an_unlisted_host_is_asked_about() {
        let p = policy(r#"network = { allow = ["https://a.example"] }"#);
        // The `sandbox` shape: an unlisted URL is an inquiry.
        let cfg: crate::policy::SandboxConfig =
            toml::from_str(r#"network = { allow = ["https://a.example"] }"#).unwrap();
        let asks = Arc::new(AccessPolicy::from_config(Some(&cfg), None).unwrap());
        let no = EgressGate::new("t", asks.clone(), Arc::new(DenyInquirer), None, Arc::default());
        let refused = block(no.connect("b.example", 443)).unwrap_err();
        let Refused::Declined { reason, why } = &refused else { panic!("{refused:?}") };
        assert!(reason.contains("b.example:443") && why.contains("non-interactive"), "{refused}");
        assert_eq!(refused.to_string(), format!("Access denied: {reason}; {why}"));
        let yes = EgressGate::new("t", asks, Arc::new(Yes), None, Arc::default());
        assert!(block(yes.connect("b.example", 443)).is_ok());
        // With `access`, unlisted is denied without asking.
        let never = EgressGate::new("t", p, Arc::new(Yes), None, Arc::default());
        assert!(block(never.connect("b.example", 443)).is_err());
    }
}
