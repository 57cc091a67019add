//! A tool's definition from its configuration: the D06 answer or an MCP server's `inputSchema`,
//! with the user's `[conversation.tools.*]` overrides merged on top (here rather than in
//! [`crate::schema`], which knows nothing of the configuration: the configuration uses the
//! schema's types, never the other way round).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::ToolConfig;
use crate::schema::{ParameterConfig, ToolDefinition, ToolSchema};

impl ToolDefinition {
    /// A definition from an MCP server's tool (`description`, `inputSchema`), with the user's
    /// `summary`/`description` and `parameters` on top (each configured parameter's fields
    /// override the server's for that property; `required` adds or removes it).
    pub fn from_mcp(name: &str, description: Option<String>, input_schema: Value, config: &ToolConfig) -> Self {
        let mut input_schema = input_schema;
        if let (Some(overrides), Value::Object(schema)) = (&config.parameters, &mut input_schema) {
            for (pname, over) in overrides {
                let props = schema.entry("properties").or_insert_with(|| json!({}));
                if let Value::Object(props) = props {
                    let merged = match (props.remove(pname), over.to_json_schema()) {
                        (Some(Value::Object(mut base)), Value::Object(top)) => {
                            base.extend(top);
                            Value::Object(base)
                        }
                        (_, top) => top,
                    };
                    props.insert(pname.clone(), merged);
                }
                if let Some(req) = over.required {
                    let list = schema.entry("required").or_insert_with(|| json!([]));
                    if let Value::Array(list) = list {
                        list.retain(|v| v.as_str() != Some(pname.as_str()));
                        if req {
                            list.push(json!(pname));
                        }
                    }
                }
            }
        }
        let required: Vec<&str> = input_schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let parameters = input_schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|props| {
                props
                    .iter()
                    .map(|(k, v)| {
                        let p = ParameterConfig {
                            kind: v.get("type").and_then(Value::as_str).map(str::to_owned),
                            summary: v.get("description").and_then(Value::as_str).map(str::to_owned),
                            required: Some(required.contains(&k.as_str())),
                            default: v.get("default").cloned(),
                            ..ParameterConfig::default()
                        };
                        (k.clone(), p)
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut schema = input_schema;
        if schema.get("type").is_none()
            && let Value::Object(m) = &mut schema
        {
            m.insert("type".into(), json!("object"));
        }
        let (summary, rest) = match description {
            Some(d) => match d.split_once('\n') {
                Some((first, rest)) => {
                    (Some(first.trim().to_owned()), Some(rest.trim().to_owned()).filter(|r| !r.is_empty()))
                }
                None => (Some(d), None),
            },
            None => (None, None),
        };
        Self {
            name: name.into(),
            summary: config.summary.clone().or(summary),
            description: config.description.clone().or(rest),
            parameters,
            input_schema: Some(schema),
        }
    }

    /// Build the definition from a self-described schema (if any) and the user's config, whose
    /// `summary`, `description` and per-parameter fields override the schema's (D06 merge).
    pub fn resolve(name: &str, described: Option<ToolSchema>, config: &ToolConfig) -> Self {
        let base = described.unwrap_or(ToolSchema {
            name: name.into(),
            summary: None,
            description: None,
            parameters: BTreeMap::new(),
        });
        let mut parameters = base.parameters;
        for (pname, over) in config.parameters.iter().flatten() {
            let merged = match parameters.get(pname) {
                Some(existing) => existing.merged(over),
                None => over.clone(),
            };
            parameters.insert(pname.clone(), merged);
        }
        Self {
            name: name.into(),
            summary: config.summary.clone().or(base.summary),
            description: config.description.clone().or(base.description),
            parameters,
            input_schema: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::SchemaResponse;

    #[test]
    fn an_mcp_tool_keeps_its_schema_with_the_users_overrides_on_top() {
        let server = json!({
            "type": "object",
            "properties": { "path": { "type": "string", "description": "A path." }, "n": { "type": "integer" } },
            "required": ["path"]
        });
        let mut cfg = ToolConfig::local("");
        cfg.summary = Some("Read.".into());
        cfg.parameters = Some(BTreeMap::from([
            ("path".into(), ParameterConfig { summary: Some("Workspace path.".into()), ..Default::default() }),
            ("n".into(), ParameterConfig { required: Some(true), ..Default::default() }),
        ]));
        let d = ToolDefinition::from_mcp("files.read", Some("Read a file.\nMore.".into()), server, &cfg);
        let s = d.to_json_schema();
        assert_eq!(d.summary.as_deref(), Some("Read."));
        assert_eq!(s["properties"]["path"], json!({"type": "string", "description": "Workspace path."}));
        assert_eq!(s["required"], json!(["path", "n"]));
        assert_eq!(d.parameters["n"].required, Some(true));
    }

    #[test]
    fn d06_parse_infers_required_and_merges_overrides() {
        let text = r#"{"tools":[{"name":"cargo_check","summary":"Run cargo check.","parameters":{
            "package":{"type":"string","summary":"Package to check."},
            "profile":{"type":"string","default":"dev"}}}]}"#;
        let schema = SchemaResponse::parse_for("cargo_check", text).unwrap();
        assert_eq!(schema.parameters["package"].required, Some(true));
        assert_eq!(schema.parameters["profile"].required, Some(false));
        let mut cfg = ToolConfig::local("jp-tools cargo check");
        cfg.summary = Some("Check the crate.".into());
        cfg.parameters = Some(BTreeMap::from([(
            "package".into(),
            ParameterConfig { summary: Some("Crate name.".into()), ..Default::default() },
        )]));
        let def = ToolDefinition::resolve("cargo_check", Some(schema), &cfg);
        assert_eq!(def.summary.as_deref(), Some("Check the crate."));
        assert_eq!(def.parameters["package"].summary.as_deref(), Some("Crate name."));
        assert_eq!(def.parameters["package"].kind.as_deref(), Some("string"), "schema fields survive the override");
        assert_eq!(def.to_json_schema()["required"], json!(["package"]));

        let e = SchemaResponse::parse_for("x", "usage: x [--help]").unwrap_err();
        assert!(e.to_string().contains("add `parameters`"), "{e}");
        let e = SchemaResponse::parse_for("x", text).unwrap_err();
        assert!(e.to_string().contains("cargo_check"), "{e}");
    }
}
