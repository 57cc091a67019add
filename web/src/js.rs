//! JSON values between Rust and JS, for the page's agent and the agent surface: through
//! `JSON.stringify`/`JSON.parse`, so what crosses is exactly what JS would serialize.

use serde_json::Value;
use wasm_bindgen::prelude::*;

fn err(e: impl std::fmt::Display) -> JsValue {
    JsError::new(&e.to_string()).into()
}

pub(crate) fn from_js<T: serde::de::DeserializeOwned>(what: &str, value: &JsValue) -> Result<T, JsValue> {
    let text: String = js_sys::JSON::stringify(value).map_err(|_| err(format!("{what} is not JSON")))?.into();
    serde_json::from_str(&text).map_err(|e| err(format!("{what}: {e}")))
}

pub(crate) fn to_js(value: &Value) -> JsValue {
    js_sys::JSON::parse(&value.to_string()).unwrap_or(JsValue::NULL)
}
