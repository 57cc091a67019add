//! Arguments that fit a plain schema, decided without compiling it.
//!
//! Compiling any schema with the `jsonschema` crate first compiles its draft's meta-schema,
//! about a millisecond once per process: a one-shot `jp tool call` would pay it on every call,
//! and the page pays a module's load and a crossing into it. Most tools' schemas are plain —
//! those jp writes itself for the builtin tools and from a D06 description, and most MCP
//! servers': typed properties, `required`, `additionalProperties: false`. For those, arguments
//! that fit are accepted here; anything else (arguments that may not fit, a keyword not below,
//! a number too large to compare exactly) goes to the full check, which decides and says why.
//! So this may only ever say "fits" where the full check would: every rule below is as strict
//! as JSON Schema's, or stricter.
//!
//! A plain schema is an object made only of: `type` (a name or a list of names), `properties`,
//! `required`, `additionalProperties` (a boolean), `items` (a plain schema), `enum`, `const`,
//! `minimum`, `maximum`, `minLength`, `maxLength`, `minItems`, `maxItems`, and the annotations
//! `description`, `title`, `default`, `examples`, `$comment`, `deprecated`, `readOnly`,
//! `writeOnly` — each well-formed, nested at most [`MAX_DEPTH`] deep. Such a schema is a valid
//! JSON Schema of every draft, with the same meaning in each.

use serde_json::{Map, Number, Value};

/// Deeper schemas are not plain (a server's schema is not trusted to be small).
const MAX_DEPTH: usize = 16;

/// Numbers are compared here only where `f64` holds them exactly.
const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53

const TYPES: [&str; 7] = ["object", "array", "string", "number", "integer", "boolean", "null"];
const ANNOTATIONS: [&str; 8] =
    ["description", "title", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly"];

/// Whether `schema` is plain (see the module's doc).
pub(super) fn is_plain(schema: &Value) -> bool {
    plain_at(schema, 0)
}

fn plain_at(schema: &Value, depth: usize) -> bool {
    let Some(s) = schema.as_object() else { return false };
    if depth > MAX_DEPTH {
        return false;
    }
    s.iter().all(|(key, v)| match key.as_str() {
        "type" => match v {
            Value::String(t) => TYPES.contains(&t.as_str()),
            Value::Array(ts) => {
                !ts.is_empty()
                    && ts
                        .iter()
                        .enumerate()
                        .all(|(i, t)| t.as_str().is_some_and(|t| TYPES.contains(&t)) && !ts[..i].contains(t))
            }
            _ => false,
        },
        "properties" => v.as_object().is_some_and(|p| p.values().all(|p| plain_at(p, depth + 1))),
        "required" => {
            v.as_array().is_some_and(|r| r.iter().enumerate().all(|(i, n)| n.is_string() && !r[..i].contains(n)))
        }
        "additionalProperties" => v.is_boolean(),
        "items" => plain_at(v, depth + 1),
        "enum" => v.is_array(),
        "const" => true,
        "minimum" | "maximum" => v.as_number().is_some_and(|n| exact(n).is_some()),
        "minLength" | "maxLength" | "minItems" | "maxItems" => v.as_u64().is_some(),
        // As the meta-schemas have them: a schema that is not valid JSON Schema is never plain.
        "description" | "title" | "$comment" => v.is_string(),
        "examples" => v.is_array(),
        "deprecated" | "readOnly" | "writeOnly" => v.is_boolean(),
        "default" => true,
        _ => false,
    })
}

/// Whether `value` surely fits the plain `schema` (`top`: the arguments object itself, where
/// jp also refuses a property that a schema with `properties` does not name unless it says
/// `additionalProperties: true`). `false` means "not sure": the full check decides.
pub(super) fn fits(schema: &Value, value: &Value, top: bool) -> bool {
    let Some(s) = schema.as_object() else { return false };
    s.iter().all(|(key, v)| match key.as_str() {
        "type" => match v {
            Value::String(t) => is_type(value, t),
            Value::Array(ts) => ts.iter().any(|t| t.as_str().is_some_and(|t| is_type(value, t))),
            _ => false,
        },
        "properties" => {
            let (Some(props), Some(obj)) = (v.as_object(), value.as_object()) else { return !value.is_object() };
            props.iter().all(|(name, p)| obj.get(name).is_none_or(|x| fits(p, x, false)))
        }
        "required" => match value.as_object() {
            Some(obj) => {
                v.as_array().is_some_and(|r| r.iter().all(|n| n.as_str().is_some_and(|n| obj.contains_key(n))))
            }
            None => true,
        },
        "additionalProperties" => match value.as_object() {
            Some(obj) => v.as_bool() == Some(true) || only_named(s, obj),
            None => true,
        },
        "items" => match value.as_array() {
            Some(items) => items.iter().all(|x| fits(v, x, false)),
            None => true,
        },
        // Equal as `Value`s is equal in JSON Schema too (which also has 1 = 1.0).
        "enum" => v.as_array().is_some_and(|e| e.contains(value)),
        "const" => v == value,
        "minimum" | "maximum" => match value.as_number() {
            Some(n) => match (exact(n), v.as_number().and_then(exact)) {
                (Some(x), Some(bound)) => {
                    if key == "minimum" {
                        x >= bound
                    } else {
                        x <= bound
                    }
                }
                _ => false,
            },
            None => true,
        },
        "minLength" | "maxLength" => match value.as_str() {
            // JSON Schema counts characters (code points).
            Some(text) => within(key, text.chars().count(), v),
            None => true,
        },
        "minItems" | "maxItems" => match value.as_array() {
            Some(items) => within(key, items.len(), v),
            None => true,
        },
        k => ANNOTATIONS.contains(&k),
    }) && (!top || top_named(s, value))
}

/// jp's rule for the arguments object: with `properties` and no `additionalProperties`, only
/// the named properties (the full check refuses the rest, suggesting the closest name).
fn top_named(schema: &Map<String, Value>, value: &Value) -> bool {
    match (schema.contains_key("properties"), schema.contains_key("additionalProperties"), value.as_object()) {
        (true, false, Some(obj)) => only_named(schema, obj),
        _ => true,
    }
}

fn only_named(schema: &Map<String, Value>, obj: &Map<String, Value>) -> bool {
    let named = schema.get("properties").and_then(Value::as_object);
    obj.keys().all(|k| named.is_some_and(|p| p.contains_key(k)))
}

fn within(key: &str, len: usize, bound: &Value) -> bool {
    let Some(bound) = bound.as_u64() else { return false };
    let len = len as u64;
    if key.starts_with("min") { len >= bound } else { len <= bound }
}

fn is_type(value: &Value, name: &str) -> bool {
    match name {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "number" => value.is_number(),
        // 1.0 is an integer to JSON Schema too; a number written with a fraction goes to the
        // full check.
        "integer" => value.is_i64() || value.is_u64(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        _ => false,
    }
}

/// `n` as an `f64` when that is exact.
fn exact(n: &Number) -> Option<f64> {
    let f = n.as_f64()?;
    (f.is_finite() && f.abs() <= EXACT).then_some(f)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_schemas_jp_writes_are_plain_and_others_are_not() {
        let plain = json!({"type": "object", "properties": {"path": {"type": "string", "description": "a file"},
            "n": {"type": ["integer", "null"], "minimum": 0}, "tags": {"type": "array", "items": {"type": "string"}}},
            "required": ["path"], "additionalProperties": false});
        assert!(is_plain(&plain));
        for not in [
            json!(true),
            json!({"type": "strin"}),
            json!({"type": ["string", "string"]}),
            json!({"$ref": "#/x"}),
            json!({"type": "string", "pattern": "^a"}),
            json!({"type": "string", "format": "uri"}),
            json!({"additionalProperties": {"type": "string"}}),
            json!({"required": ["a", "a"]}),
            json!({"minimum": 1e300}),
            json!({"minLength": -1}),
            json!({"items": [{"type": "string"}]}),
            json!({"type": "string", "examples": "a"}),
            json!({"type": "string", "description": 3}),
            json!({"type": "string", "readOnly": "yes"}),
        ] {
            assert!(!is_plain(&not), "{not}");
        }
        let mut deep = json!({"type": "string"});
        for _ in 0..40 {
            deep = json!({"type": "object", "properties": {"x": deep}});
        }
        assert!(!is_plain(&deep), "nesting is bounded");
    }

    /// Every case where this says "fits" is one the full check accepts.
    #[cfg(feature = "jsonschema")]
    #[test]
    fn it_never_accepts_what_the_full_check_refuses() {
        use crate::schema::check::ArgumentSchema;
        let schemas = [
            json!({"type": "object", "properties": {"path": {"type": "string", "minLength": 1, "maxLength": 3}}, "required": ["path"]}),
            json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": -2, "maximum": 5}}, "additionalProperties": false}),
            json!({"type": "object", "properties": {"x": {"type": "number", "maximum": 1.5}, "e": {"enum": ["a", 1, null]}}}),
            json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": ["string", "null"]}, "minItems": 1, "maxItems": 2}}}),
            json!({"type": "object", "properties": {"o": {"type": "object", "properties": {"k": {"type": "boolean"}}, "required": ["k"]}}}),
            json!({"type": "object", "additionalProperties": false}),
            json!({"type": "object", "properties": {"a": {}}, "additionalProperties": true}),
            json!({"type": "object", "properties": {"e": {"const": "a"}, "n": {"const": 5}}}),
            json!({"type": "object"}),
        ];
        let values = [
            json!({}),
            json!({"path": "ab"}),
            json!({"path": ""}),
            json!({"path": "abcd"}),
            json!({"path": "ééé"}),
            json!({"path": 3}),
            json!({"n": 5}),
            json!({"n": 6}),
            json!({"n": -3}),
            json!({"n": 1.0}),
            json!({"n": 2.5}),
            json!({"n": 18_446_744_073_709_551_615u64}),
            json!({"x": 1.5}),
            json!({"x": 1.6}),
            json!({"e": "a"}),
            json!({"e": 1.0}),
            json!({"e": "b"}),
            json!({"n": 5}),
            json!({"a": []}),
            json!({"a": ["s", null]}),
            json!({"a": ["s", 1]}),
            json!({"a": ["s", "t", "u"]}),
            json!({"o": {"k": true}}),
            json!({"o": {}}),
            json!({"o": 1}),
            json!({"pth": "x"}),
            json!({"a": 1, "b": 2}),
            json!([1]),
            json!("text"),
        ];
        let mut accepted = 0;
        for schema in &schemas {
            assert!(is_plain(schema), "{schema}");
            let full = ArgumentSchema::compile_full(schema).unwrap();
            for value in &values {
                if fits(schema, value, true) {
                    accepted += 1;
                    assert_eq!(
                        full.check_value(value),
                        Ok(()),
                        "accepted here, refused by the full check: {schema} {value}"
                    );
                }
            }
        }
        assert!(accepted > 20, "the cases exercise the accepting side too ({accepted})");
    }
}
