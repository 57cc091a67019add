//! Small JS helpers: errors, plain objects, and typed values between Rust and JS
//! (serde-wasm-bindgen, for the page's agent, the agent surface and the call path).

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

/// A JS value as `T` (serde-wasm-bindgen: no JSON text in between; a safe integer is an
/// integer, `undefined` a missing field).
pub(crate) fn from_js<T: serde::de::DeserializeOwned>(what: &str, value: &JsValue) -> Result<T, JsValue> {
    serde_wasm_bindgen::from_value(value.clone()).map_err(|e| err(format!("{what}: {e}")).into())
}

/// A Rust value as a plain JS value (objects as objects, not `Map`s).
pub(crate) fn to_js(value: &impl serde::Serialize) -> JsValue {
    value.serialize(&serde_wasm_bindgen::Serializer::json_compatible()).unwrap_or(JsValue::NULL)
}
