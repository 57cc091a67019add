//! Small JS helpers: errors, plain objects, and JSON values between Rust and JS (for the page's
//! agent and the agent surface) through `JSON.stringify`/`JSON.parse`, so what crosses is exactly
//! what JS would serialize.

use serde_json::Value;
use wasm_bindgen::prelude::*;

/// A JS `Error` with `e` as its message.
pub(crate) fn err(e: impl std::fmt::Display) -> JsError {
    JsError::new(&e.to_string())
}

/// A plain JS object of `fields`.
pub(crate) fn obj(fields: &[(&str, JsValue)]) -> JsValue {
    let o = js_sys::Object::new();
    for (k, v) in fields {
        let _ = js_sys::Reflect::set(&o, &JsValue::from_str(k), v);
    }
    o.into()
}

pub(crate) fn from_js<T: serde::de::DeserializeOwned>(what: &str, value: &JsValue) -> Result<T, JsValue> {
    let text: String =
        js_sys::JSON::stringify(value).map_err(|_| JsValue::from(err(format!("{what} is not JSON"))))?.into();
    serde_json::from_str(&text).map_err(|e| err(format!("{what}: {e}")).into())
}

pub(crate) fn to_js(value: &Value) -> JsValue {
    js_sys::JSON::parse(&value.to_string()).unwrap_or(JsValue::NULL)
}
