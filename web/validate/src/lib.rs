//! The argument validator of jp-web (crate `jp-validate`, wasm32 only): jp-core's own check
//! (`jp_core::schema::ArgumentSchema`, with the `jsonschema` crate) as a module of its own.
//!
//! jp-web is built without the `jsonschema` feature, which would grow a page's first download by
//! about a third, and hands each check to this module through the JS global
//! `jpValidateArguments` (set by `www/jp.js` once this module is loaded). The page loads it after
//! it is ready, before its first call; an edge function loads both at once. Same code, same
//! words as `jp` checks with.

#![cfg(target_arch = "wasm32")]

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use jp_core::schema::{ArgumentError, ArgumentSchema};
use wasm_bindgen::prelude::*;

/// At most this many compiled schemas are kept (a page or an edge isolate has a few tools).
const KEPT: usize = 256;

thread_local! {
    /// Schemas compiled so far, by their JSON text.
    static COMPILED: RefCell<HashMap<String, Rc<Result<ArgumentSchema, String>>>> = RefCell::default();
}

/// Check `arguments` (JSON text) against `schema` (a JSON Schema as JSON text): a JSON array of
/// `[path, message]` pairs, empty when they fit. Throws with why the schema cannot be used, or
/// that a text is not JSON.
#[wasm_bindgen]
pub fn validate(schema: &str, arguments: &str) -> Result<String, JsError> {
    let compiled = COMPILED.with(|kept| {
        if let Some(c) = kept.borrow().get(schema) {
            return Ok::<_, JsError>(c.clone());
        }
        let value: serde_json::Value =
            serde_json::from_str(schema).map_err(|e| JsError::new(&format!("the schema is not JSON: {e}")))?;
        let c = Rc::new(ArgumentSchema::compile(&value).map_err(|e| match e {
            ArgumentError::Schema(why) => why,
            other => other.to_string(),
        }));
        let mut kept = kept.borrow_mut();
        if kept.len() >= KEPT {
            kept.clear();
        }
        kept.insert(schema.to_owned(), c.clone());
        Ok(c)
    })?;
    let schema = compiled.as_ref().as_ref().map_err(|why| JsError::new(why))?;
    let arguments: serde_json::Value =
        serde_json::from_str(arguments).map_err(|e| JsError::new(&format!("the arguments are not JSON: {e}")))?;
    let problems = match schema.check_value(&arguments) {
        Ok(()) => Vec::new(),
        Err(ArgumentError::Invalid { problems }) => problems,
        Err(ArgumentError::Schema(why)) => return Err(JsError::new(&why)),
    };
    let pairs: Vec<[&str; 2]> = problems.iter().map(|p| [p.path.as_str(), p.message.as_str()]).collect();
    Ok(serde_json::to_string(&pairs).unwrap_or_else(|_| "[]".into()))
}
