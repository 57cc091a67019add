//! Tool argument schemas for JS: the core's check of a call's arguments against the tool's
//! whole JSON Schema (`jp_core::schema::ArgumentSchema`) and the schema a D06 description stands for,
//! so the page and the edge check and show exactly what `jp` does.
//!
//! jp-web is built without the core's in-process validator (the `jsonschema` crate, a third of
//! what this module would weigh): a check goes to jp-core's own, built with it, in the module of
//! `web/validate`, which `www/jp.js` loads and installs as the JS global `jpValidateArguments`.
//! Until it is loaded a check fails, saying so (jp.js awaits it before every call).

use jp_core::schema::{ArgumentProblem, ArgumentSchema, ToolDefinition};
use serde_json::Value;
use wasm_bindgen::prelude::*;

use crate::js::err;

#[wasm_bindgen]
extern "C" {
    /// `validate` of the `jp-validate` module: `[[path, message], …]` as JSON, or it throws.
    #[wasm_bindgen(js_namespace = globalThis, js_name = jpValidateArguments, catch)]
    fn js_validate(schema: &str, arguments: &str) -> Result<String, JsValue>;
}

/// The core's external validator: the `jp-validate` module through its JS global.
fn validate(schema: &str, arguments: &str) -> Result<Vec<ArgumentProblem>, String> {
    let answer = js_validate(schema, arguments).map_err(|e| {
        let why = js_sys::Error::from(e).message().as_string().unwrap_or_default();
        if why.contains("jpValidateArguments") {
            format!("the argument validator is not loaded ({why}); load it first (loadJp in www/jp.js)")
        } else {
            why
        }
    })?;
    let pairs: Vec<(String, String)> =
        serde_json::from_str(&answer).map_err(|e| format!("the argument validator answered {answer:?}: {e}"))?;
    Ok(pairs.into_iter().map(|(path, message)| ArgumentProblem { path, message }).collect())
}

/// Installs [`validate`] as the core's validator when the module starts (a build with the
/// in-process validator, as jp-web's own tests are, never uses it).
#[wasm_bindgen(start)]
fn start() {
    jp_core::schema::set_validator(validate);
}

/// A tool's argument schema compiled once (`new ArgumentSchema(inputSchema)`): the core's
/// check of a call's arguments against the whole JSON Schema, the same as `jp` makes.
/// `Host.registerComponent` keeps one per tool and `Host.callTool` checks every call with it.
#[wasm_bindgen(js_name = ArgumentSchema)]
pub struct JsArgumentSchema(ArgumentSchema);

#[wasm_bindgen(js_class = ArgumentSchema)]
impl JsArgumentSchema {
    /// Compile `schema` (a JSON Schema object); throws when it is not one the core can check with.
    #[wasm_bindgen(constructor)]
    pub fn new(schema: JsValue) -> Result<JsArgumentSchema, JsError> {
        let schema: Value =
            serde_wasm_bindgen::from_value(schema).map_err(|e| err(format!("the schema is not JSON: {e}")))?;
        ArgumentSchema::compile(&schema).map(JsArgumentSchema).map_err(err)
    }

    /// `undefined` when `args` fit, else the message naming each argument and the fix (e.g.
    /// "argument 'path' must be a string, got 3; see the tool's schema").
    pub fn check(&self, args: JsValue) -> Option<String> {
        let value: Value = serde_wasm_bindgen::from_value(args).unwrap_or(Value::Null);
        self.0.check_value(&value).err().map(|e| e.to_string())
    }
}

/// The JSON Schema of a tool's arguments from its D06 description (`{name, summary,
/// description, parameters}`, as a component's `jp:tool/describe` gives it) — the schema every
/// other jp-host surface shows for it.
#[wasm_bindgen(js_name = toolInputSchema)]
pub fn tool_input_schema(tool: JsValue) -> Result<JsValue, JsError> {
    let schema = serde_wasm_bindgen::from_value::<jp_core::schema::ToolSchema>(tool)
        .map_err(|e| err(format!("the tool description is not D06-shaped: {e}")))?
        .with_required_defaults();
    let definition = ToolDefinition {
        name: schema.name,
        summary: schema.summary,
        description: schema.description,
        parameters: schema.parameters,
        input_schema: None,
    };
    serde::Serialize::serialize(&definition.to_json_schema(), &serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| err(format!("the schema cannot be handed over: {e}")))
}
