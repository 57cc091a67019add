//! What a tool is to an agent, per process: its D06 definition (the builtin tools' from
//! their own tables, `learn`'s from `LEARN_SCHEMA`, an MCP server's from its `tools/list`,
//! others described on a describing runtime with no host access, cached per program in memory
//! and on disk), the compiled argument schema kept by name, and `key=value` arguments parsed
//! against it.

use std::path::PathBuf;
use std::sync::Arc;

use jp_core::runtime::call::check_arguments;
use jp_core::runtime::{
    McpServerError, RuntimeChoice, RuntimeError, ToolConfig, ToolRuntimeKind, ToolSource, resolve_runtime,
};
use jp_core::schema::{ArgumentSchema, SchemaError, SchemaResponse, ToolDefinition, ToolSchema};
use serde_json::{Map, Value};

use super::{App, ToolEntry, schema_cache};

impl App {
    /// The tool's definition: its configured `parameters`, or what it says about itself (D06)
    /// with the configuration's fields merged on top.
    pub async fn definition(&self, name: &str) -> Result<ToolDefinition, RuntimeError> {
        let cached = self.definitions.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(name).cloned();
        if let Some(d) = cached {
            return Ok(d);
        }
        let entry = self.tool(name)?;
        let definition =
            if let ToolSource::Mcp { server, tool } = &entry.config.source {
                // D06 for MCP: the server's `tools/list`, the user's summary/description on top.
                let listed = self.mcp.list_tools(server).await?;
                let found = listed.iter().find(|t| t.name == tool.as_str()).ok_or_else(|| {
                    McpServerError::NoSuchTool { server: server.clone(), tool: tool.clone(), offered: offered(&listed) }
                })?;
                let schema = Value::Object((*found.input_schema).clone());
                ToolDefinition::from_mcp(name, found.description.as_ref().map(|d| d.to_string()), schema, &entry.config)
            } else if entry.config.parameters.is_some() && !entry.builtin {
                ToolDefinition::resolve(name, None, &entry.config)
            } else {
                let described = self.describe(&entry).await?;
                ToolDefinition::resolve(name, Some(described), &entry.config)
            };
        self.definitions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(name.to_owned(), definition.clone());
        Ok(definition)
    }

    /// Ask a tool for its schema; one answer per program and process.
    async fn describe(&self, entry: &ToolEntry) -> Result<ToolSchema, RuntimeError> {
        if let Some(text) = self.runtime_of(entry).own_schema() {
            // A builtin tool: its runtime knows its answer without asking it.
            return Ok(SchemaResponse::parse_for(&entry.name, &text)?);
        }
        let config = self.run_config(entry);
        let kind = match resolve_runtime(&entry.name, &config).choice {
            RuntimeChoice::Local(kind) => kind,
            other => {
                return Err(SchemaError::NotHere { tool: entry.name.clone(), runtime: format!("{other:?}") }.into());
            }
        };
        let key = format!("{}:{}", kind.name(), config.command.as_deref().or(config.wasm.as_deref()).unwrap_or(""));
        let mut cache = self.schemas.lock().await;
        if !cache.contains_key(&key) {
            // On disk, keyed by the configuration entry and the files the tool is made of.
            let disk = schema_cache::dir().map(|dir| {
                let files = self.tool_files(&config, kind);
                let entry_text = serde_json::to_string(&entry.config).unwrap_or_default();
                (dir, schema_cache::key(kind.name(), &entry_text, &files))
            });
            let stored = disk.as_ref().and_then(|(dir, k)| schema_cache::load(dir, k));
            let answer = match stored {
                Some(text) => Ok(text),
                None => {
                    let answer = self.ask_schema(entry, &config, kind).await;
                    if let (Ok(text), Some((dir, k))) = (&answer, &disk)
                        && SchemaResponse::parse_for(entry.binary_name(), text).is_ok()
                    {
                        schema_cache::store(dir, k, text);
                    }
                    answer
                }
            };
            cache.insert(key.clone(), answer);
        }
        let text = cache
            .get(&key)
            .cloned()
            .unwrap_or_else(|| Err(SchemaError::Unparseable { tool: entry.name.clone(), why: "no answer".into() }));
        drop(cache);
        let text = text?;
        Ok(SchemaResponse::parse_for(entry.binary_name(), &text)?)
    }

    /// The files a local tool is made of: its program and scripts, or its component.
    fn tool_files(&self, config: &ToolConfig, kind: ToolRuntimeKind) -> Vec<PathBuf> {
        let path_var = self.vfs.services().env.get("PATH").map(String::as_str);
        match (kind, &config.wasm, &config.command) {
            (ToolRuntimeKind::Wasm, Some(w), _) => vec![self.workspace.join(w)],
            (_, _, Some(c)) => match crate::runtime::vfs::ProgramLine::parse(c, &self.workspace, path_var) {
                Ok(line) => std::iter::once(line.program).chain(line.script_files).collect(),
                Err(_) => Vec::new(),
            },
            _ => Vec::new(),
        }
    }

    /// The arguments checked against the tool's whole JSON Schema ([`ArgumentSchema`], compiled
    /// once per definition): a misfit is a [`RuntimeError::Input`] naming each argument and what
    /// it must be; a schema that cannot be compiled is a [`SchemaError::Unusable`].
    pub(crate) async fn check_arguments(&self, name: &str, arguments: &Map<String, Value>) -> Result<(), RuntimeError> {
        let compiled = self.argument_schema(name).await?;
        check_arguments(name, &compiled, arguments, &format!("`jp tool schema {name}` shows it"))
    }

    /// The compiled argument schema of tool `name`.
    async fn argument_schema(&self, name: &str) -> Result<Arc<ArgumentSchema>, RuntimeError> {
        let lock = || self.argument_schemas.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(compiled) = lock().get(name).cloned() {
            return Ok(compiled);
        }
        let schema = self.definition(name).await?.to_json_schema();
        let compiled = Arc::new(
            ArgumentSchema::compile(&schema)
                .map_err(|e| SchemaError::Unusable { tool: name.into(), why: e.to_string() })?,
        );
        lock().insert(name.to_owned(), compiled.clone());
        Ok(compiled)
    }

    /// Turn `key=value` words into arguments, using the tool's parameter types: a `string`
    /// parameter keeps the text as is, other types are parsed as JSON when they can be.
    pub async fn parse_pairs(&self, name: &str, pairs: &[String]) -> Result<Map<String, Value>, RuntimeError> {
        let definition = self.definition(name).await?;
        let mut out = Map::new();
        for pair in pairs {
            let (key, value) = pair.split_once('=').ok_or_else(|| {
                RuntimeError::Input(format!("argument {pair:?} is not key=value; write e.g. path=src/main.rs"))
            })?;
            let is_string = definition.parameters.get(key).and_then(|p| p.kind.as_deref()) == Some("string");
            let value = if is_string {
                Value::String(value.into())
            } else {
                serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.into()))
            };
            out.insert(key.into(), value);
        }
        Ok(out)
    }
}

/// The names a server offers, for an error the terminal shows: each escaped (a name is the
/// server's text and could carry terminal escapes), at most 20 of them.
fn offered(listed: &[rmcp::model::Tool]) -> String {
    const SHOWN: usize = 20;
    let mut names: Vec<String> = listed.iter().take(SHOWN).map(|t| jp_core::display::escape(&t.name)).collect();
    if listed.len() > SHOWN {
        names.push(format!("and {} more", listed.len() - SHOWN));
    }
    names.join(", ")
}
