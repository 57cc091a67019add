//! Asking the MCP client: a policy inquiry or a tool's own question becomes `elicitation/create`
//! when the client declared elicitation (form mode, on a protocol version that allows server
//! requests); otherwise nobody is asked and the request is denied at once with the reason.

use std::time::Duration;

use jp_core::BoxFuture;
use jp_core::host::{Inquirer, Inquiry, InquiryAnswer};
use jp_core::state::{AnswerType, Question};
use rmcp::model::{
    ClientResult, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema, EnumSchema,
    RequestId, ServerRequest,
};
use rmcp::service::{ElicitationMode, OriginatingRequestId, PeerRequestOptions, RequestContext};
use rmcp::{Peer, RoleServer};
use serde_json::Value;

use super::mrtr::Questions;
use crate::app::Answerer;
use crate::terminal::{escape, shown};

/// How long the client has to answer one elicitation.
pub const ASK_TIMEOUT: Duration = Duration::from_secs(300);

const ALLOW_ONCE: &str = "allow once";
const ALLOW_CALL: &str = "allow for the rest of this call";
const DENY: &str = "deny";

/// The client of one call, when it can be asked: by an `elicitation/create` request, or — on
/// protocol 2026-07-28, which has no server-to-client requests — by an `input_required` result
/// of the call ([`mrtr`](super::mrtr)).
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
            return super::mrtr::ask(questions, params).await;
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

/// Policy inquiries of one call, asked of the client.
pub struct ElicitInquirer {
    client: Client,
}

impl ElicitInquirer {
    /// For the call `ctx` belongs to; its questions go through `questions` when given (MRTR).
    pub(crate) fn new(ctx: &RequestContext<RoleServer>, questions: Option<Questions>) -> Self {
        Self { client: Client::new(ctx, questions) }
    }
}

impl Inquirer for ElicitInquirer {
    fn ask<'a>(&'a self, inquiry: &'a Inquiry) -> BoxFuture<'a, InquiryAnswer> {
        Box::pin(async move {
            if !self.client.can_ask() {
                return InquiryAnswer::Deny(
                    "nobody could be asked: the MCP client does not support elicitation; allow it in the tool's configuration".into(),
                );
            }
            let choice = EnumSchema::builder(vec![ALLOW_ONCE.into(), ALLOW_CALL.into(), DENY.into()])
                .title("Decision")
                .description("Allow this request of the tool?")
                .build();
            let Ok(schema) = ElicitationSchema::builder().required_enum_schema("decision", choice).build() else {
                return InquiryAnswer::Deny("the question could not be built".into());
            };
            // Everything but jp's own words is escaped: a tool cannot forge another request's
            // text (line breaks, bidi and invisible characters are shown as escapes).
            let message = format!(
                "Tool {} asks for {} {}. Policy: {}",
                shown(&inquiry.tool),
                inquiry.method,
                shown(&inquiry.target),
                escape(&inquiry.reason)
            );
            let Some(answer) = self.client.ask(message, schema).await else {
                return InquiryAnswer::Deny("the MCP client did not answer".into());
            };
            match (answer.action, answer.content.as_ref().and_then(|c| c.get("decision")).and_then(Value::as_str)) {
                (ElicitationAction::Accept, Some(ALLOW_ONCE)) => InquiryAnswer::Allow,
                (ElicitationAction::Accept, Some(ALLOW_CALL)) => InquiryAnswer::AllowAll,
                (ElicitationAction::Accept, _) => InquiryAnswer::Deny("denied by the user".into()),
                _ => InquiryAnswer::Deny("the user declined".into()),
            }
        })
    }
}

/// A tool's own questions of one call, asked of the client.
pub struct Elicitor {
    client: Client,
}

impl Elicitor {
    /// For the call `ctx` belongs to; its questions go through `questions` when given (MRTR).
    pub(crate) fn new(ctx: &RequestContext<RoleServer>, questions: Option<Questions>) -> Self {
        Self { client: Client::new(ctx, questions) }
    }
}

impl Answerer for Elicitor {
    fn answer<'a>(&'a self, tool: &'a str, question: &'a Question) -> BoxFuture<'a, Option<Value>> {
        Box::pin(async move {
            let builder = ElicitationSchema::builder();
            let builder = match &question.answer_type {
                AnswerType::Boolean => builder.required_bool("answer"),
                AnswerType::Text => builder.required_string("answer"),
                AnswerType::Select { options } => {
                    builder.required_enum_schema("answer", EnumSchema::builder(options.clone()).build())
                }
            };
            let schema = builder.build().ok()?;
            let message = format!("Tool {} asks: {}", shown(tool), escape(&question.text));
            let answer = self.client.ask(message, schema).await?;
            match answer.action {
                ElicitationAction::Accept => answer.content.and_then(|c| c.get("answer").cloned()),
                _ => None,
            }
        })
    }
}
