//! The agent's client as the MCP runtime reaches it: the way a question goes to whoever called
//! the tool through `jp mcp` — an `elicitation/create` request, or, on protocol 2026-07-28 (no
//! server-to-client requests), a question handed over a channel to become an `input_required`
//! result of the call. A wrapped server's forwarded requests ([`forward`](super::forward),
//! [`wrapped`](super::wrapped)) and `jp mcp`'s own inquiries ask through it.

use std::time::Duration;

use rmcp::model::{
    ClientResult, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationSchema, RequestId, ServerRequest,
};
use rmcp::service::{ElicitationMode, OriginatingRequestId, PeerRequestOptions, RequestContext};
use rmcp::{Peer, RoleServer};
use tokio::sync::{mpsc, oneshot};

/// How long the client has to answer one elicitation.
pub const ASK_TIMEOUT: Duration = Duration::from_secs(300);

/// A question of a running call, and where its answer goes.
pub(crate) struct Asked {
    pub(crate) request: ElicitRequestParams,
    pub(crate) answer: oneshot::Sender<Option<ElicitResult>>,
}

/// How a call's questions leave it (the sending side is the call's inquirer and answerer).
pub(crate) type Questions = mpsc::Sender<Asked>;

/// The sending side for a call's inquirer and answerer, and the receiving side `jp mcp` reads (`mrtr::drive`).
pub(crate) fn channel() -> (Questions, mpsc::Receiver<Asked>) {
    mpsc::channel(1)
}

/// Ask through `questions` and wait for the client's answer (`None`: nobody answered).
pub(crate) async fn ask(questions: &Questions, request: ElicitRequestParams) -> Option<ElicitResult> {
    let (answer, answered) = oneshot::channel();
    questions.send(Asked { request, answer }).await.ok()?;
    tokio::time::timeout(ASK_TIMEOUT, answered).await.ok()?.ok()?
}

/// The client of one call, when it can be asked: by an `elicitation/create` request, or — on
/// protocol 2026-07-28, which has no server-to-client requests — by an `input_required` result
/// of the call ([`crate::mcp`]'s `mrtr`).
#[derive(Clone)]
pub(crate) struct Client {
    peer: Option<Peer<RoleServer>>,
    /// The call's questions on their way to an `input_required` result.
    questions: Option<Questions>,
    /// The `tools/call` the question belongs to.
    origin: Option<RequestId>,
}

impl Client {
    pub(crate) fn new(ctx: &RequestContext<RoleServer>, questions: Option<Questions>) -> Self {
        let declared = ctx.peer.supported_elicitation_modes().contains(&ElicitationMode::Form);
        // Protocol 2026-07-28 has no server-to-client requests.
        let allowed = ctx.protocol_version().is_some_and(|v| v.has_initialize());
        let peer = (declared && allowed && questions.is_none()).then(|| ctx.peer.clone());
        Self { peer, questions, origin: Some(ctx.id.clone()) }
    }

    /// The client behind `peer`, asked outside of any call (a wrapped server's question while
    /// none of its calls runs), when it declared form elicitation.
    pub(crate) fn for_peer(peer: Peer<RoleServer>) -> Self {
        let declared = peer.supported_elicitation_modes().contains(&ElicitationMode::Form);
        let allowed = peer.peer_info().is_some_and(|i| i.protocol_version.has_initialize());
        Self { peer: (declared && allowed).then_some(peer), questions: None, origin: None }
    }

    pub(crate) fn can_ask(&self) -> bool {
        self.peer.is_some() || self.questions.is_some()
    }

    pub(crate) async fn ask(&self, message: String, schema: ElicitationSchema) -> Option<ElicitResult> {
        let params = ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema: schema };
        if let Some(questions) = &self.questions {
            return ask(questions, params).await;
        }
        let peer = self.peer.as_ref()?;
        let mut request = ElicitRequest::new(params);
        // Tied to its call explicitly: tools ask from tasks of their own, where rmcp's
        // task-local association does not reach, and over Streamable HTTP the question must
        // travel on that call's response stream.
        if let Some(origin) = &self.origin {
            request.extensions.insert(OriginatingRequestId(origin.clone()));
        }
        let mut options = PeerRequestOptions::no_options();
        options.timeout = Some(ASK_TIMEOUT);
        let asked = async {
            let handle = peer.send_request_with_option(ServerRequest::ElicitRequest(request), options).await?;
            handle.await_response().await
        };
        match asked.await {
            Ok(ClientResult::ElicitResult(r)) => Some(r),
            Ok(other) => {
                eprintln!("jp mcp: the client answered an elicitation with {other:?}");
                None
            }
            Err(e) => {
                eprintln!("jp mcp: asking the client failed: {e}");
                None
            }
        }
    }
}
