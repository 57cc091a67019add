//! The platform-neutral part of one tool call, shared by the native `App` and jp-web's
//! `JpHost::call` (the page and the edge): the arguments checked against the tool's whole
//! schema, and a tool's own questions (`needs-input`) answered and the tool run again with the
//! answers. Where the tool runs — a process, wasmtime, a jco component — is the caller's.

use serde_json::{Map, Value};

use super::{ExecutionOutcome, RuntimeError, ToolCall};
use crate::BoxFuture;
use crate::maybe::{MaybeSend, MaybeSync};
use crate::schema::{ArgumentError, ArgumentSchema, SchemaError};
use crate::state::Question;

/// Who answers a tool's own questions (`needs-input`): the person at a terminal or in the
/// page, an MCP client — or nobody ([`NoAnswerer`]).
pub trait Answerer: MaybeSend + MaybeSync {
    /// The answer to `question` of `tool`, or `None` when there is none.
    fn answer<'a>(&'a self, tool: &'a str, question: &'a Question) -> BoxFuture<'a, Option<Value>>;
}

/// Nobody answers (non-interactive).
#[derive(Debug, Default, Clone, Copy)]
pub struct NoAnswerer;

impl Answerer for NoAnswerer {
    fn answer<'a>(&'a self, _: &'a str, _: &'a Question) -> BoxFuture<'a, Option<Value>> {
        Box::pin(async { None })
    }
}

/// Whether `arguments` fit tool `name`'s compiled `schema`: the error names every argument that
/// does not and how to see the schema (`schema_hint`, e.g. "`jp tool schema NAME` shows it").
/// A schema that cannot be used is the tool's mistake, said so.
pub fn check_arguments(
    name: &str,
    schema: &ArgumentSchema,
    arguments: &Map<String, Value>,
    schema_hint: &str,
) -> Result<(), RuntimeError> {
    schema.check(arguments).map_err(|e| match e {
        ArgumentError::Invalid { .. } if schema_hint.is_empty() => RuntimeError::Input(format!("tool '{name}': {e}")),
        ArgumentError::Invalid { .. } => RuntimeError::Input(format!("tool '{name}': {e} ({schema_hint})")),
        ArgumentError::Schema(_) => SchemaError::Unusable { tool: name.into(), why: e.to_string() }.into(),
    })
}

/// Run `call` with `run` until it ends: a `needs-input` outcome goes to `answerer`, and the
/// call runs again with the answer added (under the question's id). A question without an
/// answer, or asked again after it was answered, is the outcome.
pub async fn run_answered<'a, F>(
    mut call: ToolCall,
    answerer: &dyn Answerer,
    mut run: F,
) -> Result<ExecutionOutcome, RuntimeError>
where
    F: FnMut(ToolCall) -> BoxFuture<'a, Result<ExecutionOutcome, RuntimeError>>,
{
    let name = call.name.clone();
    loop {
        match run(call.clone()).await? {
            ExecutionOutcome::NeedsInput { id, question } => match answerer.answer(&name, &question).await {
                Some(v) if !call.answers.contains_key(&question.id) => {
                    call.answers.insert(question.id.clone(), v);
                }
                _ => return Ok(ExecutionOutcome::NeedsInput { id, question }),
            },
            other => return Ok(other),
        }
    }
}
