//! One tool call in the page and at the edge, through the core's call path — the same one the
//! native `App` takes: the arguments checked against the tool's whole schema
//! (`jp_core::runtime::call::check_arguments`), the component run — a `ToolRuntime` of its own,
//! `JcoRuntime` — on a call session whose requests the core dispatcher decides, its answer mapped once (`state::component::WitOutcome`),
//! a question of the tool's own answered and the tool run again (`run_answered`), and the
//! session's files committed only when the call succeeded.
//!
//! What stays in JS is the runner (`www/jp.js`): instantiating a jco component, its imports,
//! the deadline and the Worker.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use jp_core::BoxFuture;
use jp_core::runtime::call::{Answerer, NoAnswerer, check_arguments, run_answered};
use jp_core::runtime::{Execution, ExecutionOutcome, RuntimeError, ToolCall, ToolConfig, ToolRuntime};
use jp_core::schema::{ArgumentSchema, StatefulAction, ToolDefinition, ToolSchema, flat_stateful_schema};
use jp_core::state::Question;
use jp_core::state::component::{WitOutcome, WitSuccess};
use js_sys::{Array, Function, Object, Promise};
use serde::Serialize;
use serde_json::{Map, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use crate::JpHost;
use crate::js::{err, obj};

/// The largest result a component may give, as it is sent on (natively: the output limit).
pub const MAX_OUTPUT: usize = 10 << 20;

/// A registered tool: its component, its compiled argument schema (or why it has none) — a
/// stateful tool's is that of `spawn` — and the RFD 009 actions it offers (none: one-shot).
#[derive(Clone)]
pub(crate) struct WebTool {
    component: String,
    schema: Result<Rc<ArgumentSchema>, String>,
    pub(crate) actions: Vec<StatefulAction>,
}

impl WebTool {
    /// The component that serves it.
    pub(crate) fn component(&self) -> &str {
        &self.component
    }
}

/// A component's registered tools, taken from one host for others ([`JpHost::tool_set`]).
#[wasm_bindgen]
pub struct ToolSet {
    component: String,
    tools: Vec<(String, WebTool)>,
    listing: Array,
}

/// The registered tools, by name.
pub(crate) type Tools = Rc<RefCell<BTreeMap<String, WebTool>>>;

/// A JS value from a Rust one, objects as plain objects.
pub(crate) fn to_value(value: &impl Serialize) -> Result<JsValue, JsValue> {
    value.serialize(&serde_wasm_bindgen::Serializer::json_compatible()).map_err(|e| err(e.to_string()).into())
}

pub(crate) fn message_of(e: &JsValue) -> String {
    js_sys::Reflect::get(e, &JsValue::from_str("message"))
        .ok()
        .and_then(|m| m.as_string())
        .or_else(|| e.as_string())
        .unwrap_or_else(|| format!("{e:?}"))
}

/// A tool's own questions answered by `callback({tool, question: {id, text, answerType,
/// default}})` → (a promise of) the answer, or `undefined`/`null` for none.
pub(crate) struct JsAnswerer(pub(crate) Function);

impl Answerer for JsAnswerer {
    fn answer<'a>(&'a self, tool: &'a str, question: &'a Question) -> BoxFuture<'a, Option<Value>> {
        Box::pin(async move {
            let q = to_value(question).ok()?;
            let asked = obj(&[("tool", JsValue::from_str(tool)), ("question", q)]);
            let answer = self.0.call1(&JsValue::NULL, &asked).ok()?;
            let answer = match answer.dyn_into::<Promise>() {
                Ok(p) => JsFuture::from(p).await.ok()?,
                Err(v) => v,
            };
            if answer.is_undefined() || answer.is_null() {
                return None;
            }
            serde_wasm_bindgen::from_value(answer).ok()
        })
    }
}

/// A core outcome in the shape `Host.callTool` resolves to (jco's, plus `result` — MCP's
/// `CallToolResult` — for a component's content blocks), with the paths the call changed.
pub(crate) fn outcome_js(outcome: &ExecutionOutcome, blocks: bool, changed: &[String]) -> Result<JsValue, JsValue> {
    let changed: Array = changed.iter().map(|p| JsValue::from_str(p)).collect();
    let error = |message: &str, trace: &[String], transient: bool| -> Result<JsValue, JsValue> {
        Ok(obj(&[
            ("tag", JsValue::from_str("error")),
            (
                "val",
                obj(&[
                    ("message", JsValue::from_str(message)),
                    ("trace", trace.iter().map(|t| JsValue::from_str(t)).collect::<Array>().into()),
                    ("transient", JsValue::from_bool(transient)),
                ]),
            ),
            ("changed", changed.clone().into()),
        ]))
    };
    match outcome {
        ExecutionOutcome::Completed { result: Ok(result), .. } => {
            let mut fields =
                vec![("tag", JsValue::from_str("success")), ("val", JsValue::from_str(&result.to_shown()))];
            if blocks {
                fields.push(("result", to_value(result)?));
            } else if let [jp_core::state::ContentBlock::Text { text, .. }] = result.content.as_slice() {
                fields[1].1 = JsValue::from_str(text);
            }
            fields.push(("changed", changed.into()));
            Ok(obj(&fields))
        }
        ExecutionOutcome::Completed { result: Err(e), .. } => error(&e.message, &e.trace, e.transient),
        ExecutionOutcome::NeedsInput { question, .. } => {
            let val = obj(&[
                ("id", JsValue::from_str(&question.id)),
                ("text", JsValue::from_str(&question.text)),
                ("answerType", to_value(&question.answer_type)?),
                (
                    "default",
                    question
                        .default
                        .as_ref()
                        .map_or(Ok(JsValue::UNDEFINED), |d| Ok::<_, JsValue>(JsValue::from_str(&d.to_string())))?,
                ),
            ]);
            Ok(obj(&[("tag", JsValue::from_str("needs-input")), ("val", val), ("changed", changed.into())]))
        }
        ExecutionOutcome::Cancelled { .. } => error("the call was cancelled; nothing it did was written", &[], false),
    }
}

#[wasm_bindgen]
impl JpHost {
    /// Register the tools of `component`: `tools` are D06 descriptions (`{name, summary,
    /// description, parameters}`, as `jp:tool/describe` gives them) or carry their own
    /// `inputSchema`. Each call is checked against the tool's whole schema, compiled here once.
    /// Returns the listing: each tool with its `inputSchema` and `component`.
    #[wasm_bindgen(js_name = addTools)]
    pub fn add_tools(&self, component: String, tools: JsValue) -> Result<Array, JsValue> {
        let tools: Vec<Map<String, Value>> = serde_wasm_bindgen::from_value(tools)
            .map_err(|e| err(format!("the tools of component '{component}' are not a list of tool objects: {e}")))?;
        let listing = Array::new();
        for mut tool in tools {
            let name = tool.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
            if name.is_empty() {
                return Err(err(format!("a tool of component '{component}' has no name")).into());
            }
            // A tool keeps its name: a later component cannot take it over (nor the approvals
            // given to it by name).
            if let Some(other) = self.tools.borrow().get(&name).filter(|t| t.component != component) {
                return Err(err(format!(
                    "tool '{name}' of component '{component}' is served already by component '{}'; rename one of them",
                    other.component
                ))
                .into());
            }
            // A stateful tool listed before (`listTools`) carries its spawn schema beside the
            // flat one it is listed with.
            let input_schema = match tool.get("spawnSchema").or_else(|| tool.get("inputSchema")) {
                Some(s) => s.clone(),
                None => {
                    let d06: ToolSchema = serde_json::from_value::<ToolSchema>(Value::Object(tool.clone()))
                        .map_err(|e| err(format!("tool '{name}': its description is not D06-shaped: {e}")))?
                        .with_required_defaults();
                    ToolDefinition {
                        name: d06.name,
                        summary: d06.summary,
                        description: d06.description,
                        parameters: d06.parameters,
                        input_schema: None,
                    }
                    .to_json_schema()
                }
            };
            let schema = ArgumentSchema::compile(&input_schema).map(Rc::new).map_err(|e| e.to_string());
            // A stateful component's tool (`jp:tool/stateful`'s `actions`): listed in RFD
            // 009's flat form, its spawn parameters checked on `spawn`.
            let actions: Vec<StatefulAction> = match tool.get("actions") {
                None | Some(Value::Null) => Vec::new(),
                Some(a) => serde_json::from_value(a.clone()).map_err(|e| {
                    err(format!(
                        "tool '{name}' of component '{component}': its actions must be a list of \"spawn\", \"fetch\", \"apply\", \"abort\" ({e})"
                    ))
                })?,
            };
            if !actions.is_empty() && !actions.contains(&StatefulAction::Spawn) {
                return Err(err(format!(
                    "tool '{name}' of component '{component}' offers actions without \"spawn\"; a stateful tool starts with spawn"
                ))
                .into());
            }
            if actions.is_empty() {
                tool.insert("inputSchema".into(), input_schema);
            } else {
                tool.insert("inputSchema".into(), flat_stateful_schema(&input_schema, &actions));
                tool.insert("spawnSchema".into(), input_schema);
            }
            tool.insert("component".into(), Value::String(component.clone()));
            listing.push(&to_value(&tool)?);
            self.tools.borrow_mut().insert(name, WebTool { component: component.clone(), schema, actions });
        }
        Ok(listing)
    }

    /// The tools of `component` as registered on this host, with their listing, to register on
    /// other hosts without describing and compiling them again (`addToolSet`): an edge function
    /// makes a host per project, with the same components.
    #[wasm_bindgen(js_name = toolSet)]
    pub fn tool_set(&self, component: &str, listing: Array) -> ToolSet {
        let tools = self
            .tools
            .borrow()
            .iter()
            .filter(|(_, t)| t.component == component)
            .map(|(n, t)| (n.clone(), t.clone()))
            .collect();
        ToolSet { component: component.to_owned(), tools, listing }
    }

    /// Register a [`ToolSet`] taken from another host: the same tools, schemas and listing, the
    /// same refusal of a name another component serves. Returns the listing.
    #[wasm_bindgen(js_name = addToolSet)]
    pub fn add_tool_set(&self, set: &ToolSet) -> Result<Array, JsValue> {
        let mut tools = self.tools.borrow_mut();
        if let Some((name, other)) = set
            .tools
            .iter()
            .find_map(|(n, _)| tools.get(n).filter(|t| t.component != set.component).map(|t| (n, t.component.clone())))
        {
            return Err(err(format!(
                "tool '{name}' of component '{}' is served already by component '{other}'; rename one of them",
                set.component
            ))
            .into());
        }
        for (name, tool) in &set.tools {
            tools.insert(name.clone(), tool.clone());
        }
        Ok(set.listing.clone())
    }

    /// Why `args` do not fit tool `name`'s schema (the core's check, as `jp` makes it), or
    /// `undefined` when they do or the tool is not registered.
    #[wasm_bindgen(js_name = checkArguments)]
    pub fn check_arguments_of(&self, name: &str, args: JsValue) -> Option<String> {
        self.argument_problem(name, &args).err()
    }

    /// One call of tool `name` with `args`, the core's call path: the arguments checked, then
    /// `runner(session, arguments, answers)` — the JS that runs the tool's component on
    /// `session` (a [`CallSession`](crate::CallSession)) with the arguments and answers as JSON
    /// text and resolves to jco's outcome, or rejects with the message of a trap or a stop — is
    /// called until the tool no longer asks: a question of its own goes to `answerer({tool,
    /// question})` (none: it is the outcome). `files` are written into each run's snapshot and
    /// committed with a successful one; `inquirer` answers the policy's questions.
    ///
    /// Resolves to `{tag, val, result?, changed}`; rejects only when the caller's `files` are
    /// refused (`FilesRefused`) or the project could not be read or written (`ProjectChanged`, a
    /// storage failure).
    pub async fn call(
        &self,
        name: String,
        args: JsValue,
        files: Option<Object>,
        inquirer: Option<Function>,
        answerer: Option<Function>,
        runner: Function,
    ) -> Result<JsValue, JsValue> {
        let arguments = match self.argument_problem(&name, &args) {
            Ok(arguments) => arguments,
            Err(problem) => {
                let failed = ExecutionOutcome::failed("", problem);
                return outcome_js(&failed, false, &[]);
            }
        };
        let component = self.tools.borrow().get(&name).map(|t| t.component.clone()).unwrap_or_default();
        let answerer: Box<dyn Answerer> = match answerer {
            Some(f) => Box::new(JsAnswerer(f)),
            None => Box::new(NoAnswerer),
        };
        let runtime = JcoRuntime {
            host: self.clone(),
            component,
            files,
            inquirer,
            runner,
            changed: RefCell::default(),
            blocks: RefCell::new(false),
            failure: RefCell::default(),
        };
        let config: ToolConfig = toml::from_str("").map_err(|e| err(format!("the tool's configuration: {e}")))?;
        let call = ToolCall::new(name, "", arguments);
        let run = |call: ToolCall| runtime.execute(call, &config);
        let outcome = run_answered(call, answerer.as_ref(), run)
            .await
            .unwrap_or_else(|e| ExecutionOutcome::failed("", e.to_string()));
        if let Some(e) = runtime.failure.take() {
            return Err(e);
        }
        outcome_js(&outcome, *runtime.blocks.borrow(), &runtime.changed.borrow())
    }
}

/// A jco component as the core's [`ToolRuntime`]: each execution is one run of the component —
/// by the JS `runner` (instantiate, imports, deadline, Worker) — on a fresh call session of
/// `host`, whose files are committed only when the run succeeded. What the last run left (the
/// paths it changed, whether its result was blocks, a failure to write the project) is kept for
/// the caller.
pub(crate) struct JcoRuntime {
    pub(crate) host: JpHost,
    pub(crate) component: String,
    pub(crate) files: Option<Object>,
    pub(crate) inquirer: Option<Function>,
    pub(crate) runner: Function,
    pub(crate) changed: RefCell<Vec<String>>,
    pub(crate) blocks: RefCell<bool>,
    pub(crate) failure: RefCell<Option<JsValue>>,
}

impl ToolRuntime for JcoRuntime {
    fn execute<'a>(&'a self, call: ToolCall, _config: &'a ToolConfig) -> Execution<'a> {
        Box::pin(async move {
            let name = &call.name;
            // A refusal of the caller's files (`FilesRefused`) or a storage failure is the
            // caller's to see as it is.
            let session = match self.host.begin_call(name.clone(), self.files.clone(), self.inquirer.clone()).await {
                Ok(s) => s,
                Err(e) => {
                    let message = message_of(&e);
                    *self.failure.borrow_mut() = Some(e);
                    return Err(RuntimeError::Other(message));
                }
            };
            let arguments = Value::Object(call.arguments.clone()).to_string();
            let answers = Value::Object(call.answers.clone()).to_string();
            let ran = self
                .runner
                .call3(&JsValue::NULL, &session.clone().into(), &arguments.into(), &answers.into())
                .and_then(|p| p.dyn_into::<Promise>().map_err(|_| err("the runner must return a promise").into()));
            let raw = match ran {
                Ok(p) => JsFuture::from(p).await,
                Err(e) => Err(e),
            };
            let outcome = match raw {
                Err(e) => ExecutionOutcome::failed("", message_of(&e)),
                Ok(raw) => match serde_wasm_bindgen::from_value::<WitOutcome>(raw) {
                    Ok(plain) => {
                        *self.blocks.borrow_mut() = matches!(plain, WitOutcome::Success(WitSuccess::Content(_)));
                        plain.into_outcome("", name, MAX_OUTPUT)
                    }
                    Err(e) => ExecutionOutcome::failed(
                        "",
                        format!(
                            "tool '{name}' of component '{}' answered with an outcome jp cannot read: {e}",
                            self.component
                        ),
                    ),
                },
            };
            let commit = matches!(outcome, ExecutionOutcome::Completed { result: Ok(_), .. });
            match session.finish(commit).await {
                Ok(paths) => *self.changed.borrow_mut() = paths,
                Err(e) => *self.failure.borrow_mut() = Some(e),
            }
            Ok(outcome)
        })
    }
}

impl JpHost {
    /// `args` as arguments of tool `name`, or why they do not fit its schema.
    pub(crate) fn argument_problem(&self, name: &str, args: &JsValue) -> Result<Map<String, Value>, String> {
        let arguments: Map<String, Value> = serde_wasm_bindgen::from_value(args.clone())
            .map_err(|e| format!("tool '{name}': the arguments must be an object of the tool's parameters ({e})"))?;
        self.check_parameters(name, &arguments)?;
        Ok(arguments)
    }

    /// Why `arguments` do not fit tool `name`'s schema (a stateful tool's: that of `spawn`).
    /// A stateful command (`action` given) is checked as the core's session checks it: a
    /// `spawn` by its arguments without `action`, the other commands by the session itself.
    pub(crate) fn check_parameters(&self, name: &str, arguments: &Map<String, Value>) -> Result<(), String> {
        let tools = self.tools.borrow();
        let Some(tool) = tools.get(name) else { return Ok(()) };
        let mut spawn = None;
        if !tool.actions.is_empty()
            && let Some(action) = arguments.get("action")
        {
            if action != "spawn" {
                return Ok(());
            }
            let mut args = arguments.clone();
            args.remove("action");
            spawn = Some(args);
        }
        match &tool.schema {
            Ok(schema) => {
                check_arguments(name, schema, spawn.as_ref().unwrap_or(arguments), "").map_err(|e| e.to_string())
            }
            Err(why) => Err(format!(
                "tool '{name}': the tool's argument schema cannot be used ({why}); fix the tool's parameters"
            )),
        }
    }
}
