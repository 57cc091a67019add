//! Asking a configured tool for its schema (D06) with no host access and a short time limit.
//!
//! Describing a tool runs its code before anyone has called it, often just to list tools, so it
//! gets nothing: the runtimes used here have no files behind them (every file operation answers
//! [`NOT_WHILE_DESCRIBING`]), no HTTP client, no process runner, and every request is refused
//! with that reason. The tool's policy is replaced by one that covers nothing and whose every
//! question is answered "no" by [`DescribingInquirer`] (so a stdio tool's OS sandbox grants it
//! no workspace either, and its secrets are not in its environment). The answer must come within
//! [`SCHEMA_TIMEOUT`].

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use jp_core::BoxFuture;
use jp_core::cancel::CancellationToken;
use jp_core::host::{DispatchEvents, Inquirer, Inquiry, InquiryAnswer, TraceEvent};
use jp_core::policy::{SandboxConfig, SandboxFilesystem, SandboxNetwork};
use jp_core::runtime::{ComponentError, ExecutionOutcome, RuntimeError, ToolCall, ToolConfig, ToolRuntimeKind};
use jp_core::schema::SchemaError;
use jp_core::state::ToolResult;
use serde_json::Map;

use super::{App, ToolEntry};
use crate::runtime::services::{HostServices, NoFiles};
use crate::runtime::stdio::StdioRuntime;
use crate::runtime::vfs::{VfsOptions, VfsRuntime};
use crate::runtime::wasm::{ComponentSource, WasmEngine, WasmLimits, WasmRuntime, component_path};
use crate::sandbox::SandboxMode;

/// How long a tool has to answer the schema request.
pub const SCHEMA_TIMEOUT: Duration = Duration::from_secs(10);

/// Why every request of a tool that is being described is refused.
pub const NOT_WHILE_DESCRIBING: &str = "not available while describing the tool: a tool answers the schema request (D06) without files, network or processes";

/// Answers every inquiry of a tool being described with [`NOT_WHILE_DESCRIBING`].
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct DescribingInquirer;

impl Inquirer for DescribingInquirer {
    fn ask<'a>(&'a self, _: &'a Inquiry) -> BoxFuture<'a, InquiryAnswer> {
        Box::pin(async { InquiryAnswer::Deny(NOT_WHILE_DESCRIBING.into()) })
    }
}

/// The trace of a tool being described: no one is asked, so there is no "waiting for the user",
/// and a request the describing inquirer refused shows as what it is, a denial.
struct DescribingTrace(Arc<dyn DispatchEvents>);

impl DispatchEvents for DescribingTrace {
    fn decided(&self, event: &TraceEvent) {
        let decision = if event.allowed { event.decision } else { "deny" };
        self.0.decided(&TraceEvent { decision, ..event.clone() });
    }
}

/// No files: every operation is refused with [`NOT_WHILE_DESCRIBING`] (a second wall behind the
/// policy, and the only one for components, whose describe policy is the runtime's).
const DESCRIBING_FILES: NoFiles = NoFiles { why: NOT_WHILE_DESCRIBING, shown: "(no files while describing the tool)" };

/// `config` with its policy replaced by one that covers nothing: every file, URL and program is
/// "not covered", so each request goes to [`DescribingInquirer`], and a direct-access tool's
/// sandbox grants no workspace. The tool's own `read_paths` (its program's files) stay.
pub(super) fn describing_config(config: &ToolConfig) -> ToolConfig {
    let mut config = config.clone();
    config.access = None;
    config.sandbox = Some(SandboxConfig {
        filesystem: Some(SandboxFilesystem { allow: Vec::new(), writable: false }),
        network: Some(SandboxNetwork { allow: Vec::new(), envs: Vec::new() }),
        commands: Some(BTreeMap::new()),
        sensitive_paths: Vec::new(),
    });
    config
}

/// The runtimes that describe tools: no files, HTTP, processes or secrets; [`SCHEMA_TIMEOUT`].
/// All three are made from one set of describing services.
pub(super) struct Describers {
    vfs: VfsRuntime,
    stdio: StdioRuntime,
    wasm: OnceLock<Result<WasmRuntime, RuntimeError>>,
    services: HostServices,
}

impl Describers {
    pub(super) fn new(
        workspace: PathBuf,
        sandbox: SandboxMode,
        env: BTreeMap<String, String>,
        home: Option<PathBuf>,
        trace: Option<Arc<dyn DispatchEvents>>,
    ) -> Self {
        let trace = trace.map(|t| Arc::new(DescribingTrace(t)) as Arc<dyn DispatchEvents>);
        let services = HostServices::new(Arc::new(DESCRIBING_FILES), workspace)
            .inquirer(Arc::new(DescribingInquirer))
            .env(env)
            .home(home)
            .trace(trace);
        let options = VfsOptions {
            request_timeout: SCHEMA_TIMEOUT,
            cancel_grace: Duration::from_secs(1),
            ..VfsOptions::default()
        };
        let vfs = VfsRuntime::with_services(services.clone()).sandbox(sandbox).options(options);
        let stdio = StdioRuntime::with_services(services.clone()).sandbox(sandbox).timeout(SCHEMA_TIMEOUT);
        Self { vfs, stdio, wasm: OnceLock::new(), services }
    }

    fn wasm(&self) -> Result<&WasmRuntime, RuntimeError> {
        self.wasm
            .get_or_init(|| {
                let limits = WasmLimits { deadline: SCHEMA_TIMEOUT, ..WasmLimits::default() };
                Ok(WasmRuntime::with_services(WasmEngine::shared()?, self.services.clone()).limits(limits))
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}

impl App {
    /// Run the tool once with the schema action under the describing runtimes: the text it
    /// answered, or why there is none.
    pub(super) async fn ask_schema(
        &self,
        entry: &ToolEntry,
        config: &ToolConfig,
        kind: ToolRuntimeKind,
    ) -> Result<String, SchemaError> {
        let name = &entry.name;
        let timed_out = || SchemaError::TimedOut { tool: name.clone(), seconds: SCHEMA_TIMEOUT.as_secs() };
        let failed =
            |why: String| SchemaError::Unparseable { tool: name.clone(), why: format!("asking it failed: {why}") };
        let d = &self.describers;
        let config = describing_config(config);
        let call = ToolCall {
            name: name.clone(),
            id: "schema".into(),
            arguments: Map::new(),
            answers: Map::new(),
            cancel: CancellationToken::new(),
            inquirer: None,
            policy: None,
        };
        let ask = async {
            match kind {
                ToolRuntimeKind::Stdio => d.stdio.run(call, &config, Some("schema")).await,
                ToolRuntimeKind::Vfs => d.vfs.run(call, &config, Some("schema")).await,
                ToolRuntimeKind::Wasm => {
                    let path = component_path(&config, &self.workspace)
                        .ok_or_else(|| ComponentError::NoFile { tool: name.clone() })?;
                    match d.wasm()?.describe(name, ComponentSource::File(path)).await? {
                        Some(schema) => Ok(ExecutionOutcome::Completed {
                            id: "schema".into(),
                            result: Ok(ToolResult::text(schema)),
                        }),
                        None => Err(ComponentError::NoDescribe.into()),
                    }
                }
            }
        };
        // Dropping the call on timeout ends it: the runtimes kill the tool's process group when
        // their future is dropped, and a component's store goes with it.
        match tokio::time::timeout(SCHEMA_TIMEOUT, ask).await {
            Err(_) | Ok(Err(RuntimeError::Timeout { .. })) => Err(timed_out()),
            Ok(Ok(ExecutionOutcome::Completed { result: Ok(r), .. })) => Ok(r.to_text()),
            Ok(Ok(ExecutionOutcome::Completed { result: Err(e), .. })) => Err(failed(e.message)),
            Ok(Ok(other)) => Err(failed(format!("it answered {other:?}"))),
            Ok(Err(e)) => Err(failed(e.to_string())),
        }
    }
}
