//! Asking the MCP client: a policy inquiry or a tool's own question becomes `elicitation/create`
//! when the client declared elicitation (form mode, on a protocol version that allows server
//! requests); otherwise nobody is asked and the request is denied at once with the reason.

use jp_core::BoxFuture;
use jp_core::host::{Inquirer, Inquiry, InquiryAnswer};
use jp_core::state::{AnswerType, Question};
use rmcp::RoleServer;
use rmcp::model::{ElicitationAction, ElicitationSchema, EnumSchema};
use rmcp::service::RequestContext;
use serde_json::Value;

use crate::app::Answerer;
use crate::runtime::mcp::ask::{Client, Questions};
use crate::terminal::{escape, shown};

use jp_core::agent::surface::{ALLOW_CALL, ALLOW_ONCE, DENY, inquiry_message};

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
            let message = inquiry_message(&inquiry.tool, &inquiry.method, &inquiry.target, &inquiry.reason);
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
