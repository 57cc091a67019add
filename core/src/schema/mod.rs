//! Tool schemas: RFD D06 self-description and RFD 009 action schemas.
//!
//! A local tool configured without `parameters` is asked for its schema (`action = "schema"`);
//! it answers a [`SchemaResponse`]. [`ToolDefinition::resolve`] merges the user's TOML overrides
//! on top, exactly like MCP tool resolution. A stateful tool's schema gains `action` / `id` /
//! `input`, as `oneOf` ([`stateful_schema`]) or, for providers that reject `oneOf`, flat
//! ([`flat_stateful_schema`]). [`ArgumentSchema`] checks a call's arguments against the whole
//! schema before the tool runs (`check`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

mod check;

pub use check::{
    ArgumentError, ArgumentProblem, ArgumentSchema, ExternalValidator, MAX_PROBLEMS, check_arguments, closest,
    set_validator,
};

/// The JSON Schema keywords a parameter may carry besides the named fields of
/// [`ParameterConfig`]; they are passed through to the schema as written.
pub const SCHEMA_KEYWORDS: &[&str] = &[
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "additionalProperties",
    "anyOf",
    "oneOf",
    "allOf",
    "not",
    "const",
    "examples",
    "title",
    "deprecated",
    "contentEncoding",
    "contentMediaType",
    "prefixItems",
    "patternProperties",
];

/// A parameter, in the shape shared by TOML config, D06 responses and MCP. Other JSON Schema
/// keywords (`minimum`, `pattern`, `format`, `anyOf`, …; see [`SCHEMA_KEYWORDS`]) are kept in
/// `keywords` and passed through; any other key is refused when the configuration is read.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ParameterConfig {
    /// JSON Schema type (`string`, `integer`, …).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Short description sent to the assistant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Longer description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the parameter must be given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
    /// Default value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    /// Allowed values.
    #[serde(rename = "enum", default, skip_serializing_if = "Option::is_none")]
    pub one_of: Option<Vec<Value>>,
    /// Item schema for arrays.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<Box<ParameterConfig>>,
    /// Property schemas for objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub properties: Option<BTreeMap<String, ParameterConfig>>,
    /// Further JSON Schema keywords, as written.
    #[serde(flatten)]
    pub keywords: Map<String, Value>,
}

impl ParameterConfig {
    /// This parameter as a JSON Schema.
    pub fn to_json_schema(&self) -> Value {
        let mut s = Map::new();
        if let Some(k) = &self.kind {
            s.insert("type".into(), json!(k));
        }
        if let Some(d) = self.summary.as_ref().or(self.description.as_ref()) {
            s.insert("description".into(), json!(d));
        }
        if let Some(d) = &self.default {
            s.insert("default".into(), d.clone());
        }
        if let Some(e) = &self.one_of {
            s.insert("enum".into(), json!(e));
        }
        if let Some(i) = &self.items {
            s.insert("items".into(), i.to_json_schema());
        }
        if let Some(props) = &self.properties {
            s.insert(
                "properties".into(),
                Value::Object(props.iter().map(|(k, v)| (k.clone(), v.to_json_schema())).collect()),
            );
            let req: Vec<&String> = props.iter().filter(|(_, v)| v.required == Some(true)).map(|(k, _)| k).collect();
            if !req.is_empty() {
                s.insert("required".into(), json!(req));
            }
        }
        for (k, v) in &self.keywords {
            s.entry(k.clone()).or_insert_with(|| v.clone());
        }
        Value::Object(s)
    }

    /// Keys that are neither a named field nor a JSON Schema keyword, here and in nested
    /// `items`/`properties`, with their dotted path below this parameter.
    pub fn unknown_keys(&self) -> Vec<String> {
        let mut out: Vec<String> =
            self.keywords.keys().filter(|k| !SCHEMA_KEYWORDS.contains(&k.as_str())).cloned().collect();
        if let Some(i) = &self.items {
            out.extend(i.unknown_keys().into_iter().map(|k| format!("items.{k}")));
        }
        for (name, p) in self.properties.iter().flatten() {
            out.extend(p.unknown_keys().into_iter().map(|k| format!("properties.{name}.{k}")));
        }
        out
    }

    /// Overlay `over` onto `self`, field by field (user overrides win).
    pub(crate) fn merged(&self, over: &ParameterConfig) -> ParameterConfig {
        ParameterConfig {
            kind: over.kind.clone().or_else(|| self.kind.clone()),
            summary: over.summary.clone().or_else(|| self.summary.clone()),
            description: over.description.clone().or_else(|| self.description.clone()),
            required: over.required.or(self.required),
            default: over.default.clone().or_else(|| self.default.clone()),
            one_of: over.one_of.clone().or_else(|| self.one_of.clone()),
            items: over.items.clone().or_else(|| self.items.clone()),
            properties: over.properties.clone().or_else(|| self.properties.clone()),
            keywords: {
                let mut k = self.keywords.clone();
                k.extend(over.keywords.clone());
                k
            },
        }
    }
}

/// One tool in a D06 schema response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSchema {
    /// Tool name.
    pub name: String,
    /// Short description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Longer description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Parameters.
    #[serde(default)]
    pub parameters: BTreeMap<String, ParameterConfig>,
}

/// What a binary prints for `action = "schema"` (D06): `{"tools":[…]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SchemaResponse {
    /// The tools the binary serves.
    pub tools: Vec<ToolSchema>,
}

/// Why a schema could not be obtained.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// The binary's answer is not a schema response.
    #[error(
        "tool '{tool}' did not describe itself ({why}); add `parameters` to its configuration or update the binary to answer the schema action (RFD D06)"
    )]
    Unparseable {
        /// Tool name.
        tool: String,
        /// What was wrong.
        why: String,
    },
    /// The response has no entry for this tool.
    #[error(
        "tool '{tool}' is not in its binary's schema response (it lists: {listed}); fix the tool name or add `parameters` to its configuration"
    )]
    Missing {
        /// Tool name.
        tool: String,
        /// Names the binary listed.
        listed: String,
    },
    /// The tool's runtime cannot ask it (an MCP or builtin tool without an answer of its own).
    #[error("tool '{tool}' ({runtime}) cannot describe itself here; add `parameters` to its configuration")]
    NotHere {
        /// Tool name.
        tool: String,
        /// Where it runs.
        runtime: String,
    },
    /// The tool did not answer in time.
    #[error(
        "tool '{tool}' did not answer the schema request within {seconds} s; a tool must describe itself at once and without host access (D06): fix the tool, or give it `parameters` in its configuration so it need not be asked"
    )]
    TimedOut {
        /// Tool name.
        tool: String,
        /// The limit.
        seconds: u64,
    },
    /// Its schema cannot be used: it does not compile as a JSON Schema, or does not fit the
    /// MCP tool model.
    #[error("tool '{tool}': {why}")]
    Unusable {
        /// Tool name.
        tool: String,
        /// What is wrong.
        why: String,
    },
}

impl SchemaResponse {
    /// Parse a binary's answer for tool `tool`. In the response, a parameter without `required`
    /// is required exactly when it has no default (D06).
    pub fn parse_for(tool: &str, text: &str) -> Result<ToolSchema, SchemaError> {
        let response: SchemaResponse = serde_json::from_str(text.trim()).map_err(|e| {
            // A legacy tool that ignores the schema action runs and prints its result instead.
            let ran = serde_json::from_str::<Value>(text.trim()).ok().is_some_and(|v| {
                v.get("type")
                    .and_then(Value::as_str)
                    .is_some_and(|t| ["success", "error", "needs_input", "running", "waiting", "stopped"].contains(&t))
                    || (v.get("content").is_some() && v.get("tools").is_none())
            });
            let why = if ran {
                "it ran and printed a result instead: it ignores `action = \"schema\"` in its context".to_owned()
            } else {
                format!("expected {{\"tools\":[…]}}: {e}")
            };
            SchemaError::Unparseable { tool: tool.into(), why }
        })?;
        let listed: Vec<String> = response.tools.iter().map(|t| t.name.clone()).collect();
        let schema = response
            .tools
            .into_iter()
            .find(|t| t.name == tool)
            .ok_or_else(|| SchemaError::Missing { tool: tool.into(), listed: listed.join(", ") })?;
        Ok(schema.with_required_defaults())
    }
}

impl ToolSchema {
    /// D06's rule for a tool's own description: a parameter that does not say whether it is
    /// `required` is required exactly when it has no default. Every host applies it, so a tool
    /// is described the same natively, in the page and at the edge.
    pub fn with_required_defaults(mut self) -> Self {
        for p in self.parameters.values_mut() {
            if p.required.is_none() {
                p.required = Some(p.default.is_none());
            }
        }
        self
    }
}

/// The action set of a stateful tool (RFD 009).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StatefulAction {
    /// Start the tool.
    Spawn,
    /// Read its state.
    Fetch,
    /// Send input.
    Apply,
    /// Stop it.
    Abort,
}

impl StatefulAction {
    /// All four, in RFD 009 order.
    pub const ALL: [StatefulAction; 4] = [Self::Spawn, Self::Fetch, Self::Apply, Self::Abort];

    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Spawn => "spawn",
            Self::Fetch => "fetch",
            Self::Apply => "apply",
            Self::Abort => "abort",
        }
    }
}

/// A tool as the assistant sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDefinition {
    /// Name.
    pub name: String,
    /// Short description.
    pub summary: Option<String>,
    /// Longer description.
    pub description: Option<String>,
    /// Parameters.
    pub parameters: BTreeMap<String, ParameterConfig>,
    /// The arguments' JSON Schema as the tool gave it (an MCP server's `inputSchema`), which
    /// [`to_json_schema`](Self::to_json_schema) returns as is; `parameters` then mirrors its
    /// top-level properties for checks and `key=value` parsing.
    pub input_schema: Option<Value>,
}

impl ToolDefinition {
    /// The parameters as a JSON Schema object.
    pub fn to_json_schema(&self) -> Value {
        if let Some(schema) = &self.input_schema {
            return schema.clone();
        }
        let properties: Map<String, Value> =
            self.parameters.iter().map(|(k, v)| (k.clone(), v.to_json_schema())).collect();
        let required: Vec<&String> =
            self.parameters.iter().filter(|(_, v)| v.required == Some(true)).map(|(k, _)| k).collect();
        json!({ "type": "object", "properties": properties, "required": required })
    }
}

fn handle_variant(action: StatefulAction) -> Value {
    let mut props = Map::new();
    props.insert("action".into(), json!({ "const": action.name() }));
    props.insert("id".into(), json!({ "type": "string" }));
    let mut required = vec!["action", "id"];
    if action == StatefulAction::Apply {
        props.insert("input".into(), json!({}));
        required.push("input");
    }
    json!({ "properties": props, "required": required })
}

/// RFD 009 `oneOf` schema for a tool whose spawn parameters are `spawn` (a JSON Schema object)
/// and which supports `actions`.
pub fn stateful_schema(spawn: &Value, actions: &[StatefulAction]) -> Value {
    let variants: Vec<Value> = StatefulAction::ALL
        .into_iter()
        .filter(|a| actions.contains(a))
        .map(|action| {
            if action != StatefulAction::Spawn {
                return handle_variant(action);
            }
            let mut props = Map::new();
            props.insert("action".into(), json!({ "const": "spawn" }));
            if let Some(p) = spawn.get("properties").and_then(Value::as_object) {
                props.extend(p.clone());
            }
            let mut required = vec![json!("action")];
            if let Some(r) = spawn.get("required").and_then(Value::as_array) {
                required.extend(r.iter().cloned());
            }
            json!({ "properties": props, "required": required })
        })
        .collect();
    json!({ "type": "object", "oneOf": variants })
}

/// The flat fallback for providers that reject `oneOf`: one object with an `action` enum and
/// every field optional, the protocol explained in `description`.
pub fn flat_stateful_schema(spawn: &Value, actions: &[StatefulAction]) -> Value {
    let names: Vec<&str> =
        StatefulAction::ALL.into_iter().filter(|a| actions.contains(a)).map(StatefulAction::name).collect();
    let mut props = Map::new();
    props.insert("action".into(), json!({ "type": "string", "enum": names }));
    if names.iter().any(|n| *n != "spawn") {
        props.insert("id".into(), json!({ "type": "string", "description": "Handle id returned by spawn (h_1, …); required for fetch, apply and abort." }));
    }
    if actions.contains(&StatefulAction::Apply) {
        props.insert("input".into(), json!({ "description": "Input or answer for apply." }));
    }
    if let Some(p) = spawn.get("properties").and_then(Value::as_object) {
        for (k, v) in p {
            props.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    let spawn_required: Vec<String> = spawn
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
        .unwrap_or_default();
    let description = format!(
        "Stateful tool. Set action to one of: {}. spawn starts the tool{} and returns a handle id; the other actions take that id.",
        names.join(", "),
        if spawn_required.is_empty() { String::new() } else { format!(" (requires {})", spawn_required.join(", ")) }
    );
    json!({ "type": "object", "description": description, "properties": props, "required": ["action"] })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spawn_params() -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": { "enum": ["stage", "commit", "rebase"] },
                "args": { "type": "array", "items": { "type": "string" } }
            },
            "required": ["command"]
        })
    }

    #[test]
    fn git_schema_matches_rfd_009() {
        let expected = json!({
            "type": "object",
            "oneOf": [
                { "properties": { "action": { "const": "spawn" }, "command": { "enum": ["stage", "commit", "rebase"] }, "args": { "type": "array", "items": { "type": "string" } } }, "required": ["action", "command"] },
                { "properties": { "action": { "const": "fetch" }, "id": { "type": "string" } }, "required": ["action", "id"] },
                { "properties": { "action": { "const": "apply" }, "id": { "type": "string" }, "input": {} }, "required": ["action", "id", "input"] },
                { "properties": { "action": { "const": "abort" }, "id": { "type": "string" } }, "required": ["action", "id"] }
            ]
        });
        assert_eq!(stateful_schema(&spawn_params(), &StatefulAction::ALL), expected);
        let cargo = stateful_schema(
            &json!({"properties": {"package": {"type":"string"}}}),
            &[StatefulAction::Abort, StatefulAction::Spawn, StatefulAction::Fetch],
        );
        let actions: Vec<&Value> =
            cargo["oneOf"].as_array().unwrap().iter().map(|v| &v["properties"]["action"]["const"]).collect();
        assert_eq!(actions, [&json!("spawn"), &json!("fetch"), &json!("abort")]);
    }

    #[test]
    fn flat_fallback_has_no_one_of() {
        let s = flat_stateful_schema(&spawn_params(), &[StatefulAction::Spawn, StatefulAction::Fetch]);
        assert!(s.get("oneOf").is_none());
        assert_eq!(s["properties"]["action"]["enum"], json!(["spawn", "fetch"]));
        assert!(s["properties"].get("input").is_none());
        assert!(s["description"].as_str().unwrap().contains("requires command"));
    }
}
