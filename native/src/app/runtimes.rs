//! D10's runtimes as `jp` builds them: once per process, each with its dependencies captured,
//! each an `Arc<dyn ToolRuntime>`. [`Runtimes::resolve`] turns a tool's resolved runtime kind
//! into the runtime that executes it; `App::call` then only calls `execute`.
//!
//! - local tools: stdio, VFS (builtin fs tools as `jp __tool` get their writable default
//!   here), wasm (the engine is built on first use: [`LazyWasm`]);
//! - `source = "builtin"`: [`Builtins`], D10's registry of builtin executors by name — the
//!   in-process fs tools, `learn` (a component inside `jp`) and `run` (`RunRuntime`: stateful;
//!   its one-shot form is `App::run_to_end`); each executor also answers for its tool (actions,
//!   schema, live process), so `App` names no tool;
//! - `source = "mcp.*"`: the `McpRuntime`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use jp_core::BoxFuture;
use jp_core::handles::AnyToolHandle;
use jp_core::runtime::{
    Execution, RuntimeChoice, RuntimeError, SpawnResult, ToolCall, ToolConfig, ToolRuntime, ToolRuntimeKind,
};
use jp_core::schema::StatefulAction;

use super::{LEARN, RUN};
use crate::files::FsProjectFiles;
use crate::process::TokioProcessRunner;
use crate::runtime::builtin::BuiltinRuntime;
use crate::runtime::mcp::client::McpRuntime;
use crate::runtime::run_tool::RunRuntime;
use crate::runtime::services::HostServices;
use crate::runtime::stdio::StdioRuntime;
use crate::runtime::vfs::VfsRuntime;
use crate::runtime::wasm::{WasmEngine, WasmLimits, WasmRuntime};
use crate::sandbox::SandboxMode;

/// What the wasm runtime is built from, on first use (the engine costs a few milliseconds).
pub(super) struct WasmSetup {
    /// The host's services (files, workspace, HTTP, inquirer, environment, trace).
    pub(super) services: HostServices,
    pub(super) limits: WasmLimits,
    /// For the programs its components run with `process.run`.
    pub(super) sandbox: SandboxMode,
}

/// The wasm runtime, built on first use.
pub(super) struct LazyWasm {
    cell: OnceLock<Result<WasmRuntime, RuntimeError>>,
    setup: WasmSetup,
}

impl LazyWasm {
    pub(super) fn new(setup: WasmSetup) -> Self {
        Self { cell: OnceLock::new(), setup }
    }

    pub(super) fn get(&self) -> Result<&WasmRuntime, RuntimeError> {
        self.cell
            .get_or_init(|| {
                let (s, services) = (&self.setup, &self.setup.services);
                // The components' own process runner: their deadline, the host's sandbox mode.
                let process = Arc::new(TokioProcessRunner::new(s.limits.deadline).sandbox(s.sandbox));
                let services = services.clone().process(process);
                Ok(WasmRuntime::with_services(WasmEngine::shared()?, services).limits(s.limits))
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}

impl ToolRuntime for LazyWasm {
    fn execute<'a>(&'a self, call: ToolCall, config: &'a ToolConfig) -> Execution<'a> {
        Box::pin(async move { self.get()?.run(call, config, None).await })
    }

    /// A component that exports `jp:tool/stateful` answers for its tools.
    fn stateful_actions(&self, name: &str, config: &ToolConfig) -> Option<Vec<StatefulAction>> {
        self.get().ok()?.stateful_actions(name, config)
    }

    fn live(&self, name: &str, config: &ToolConfig) -> bool {
        self.get().is_ok_and(|w| w.live(name, config))
    }

    fn spawn<'a>(&'a self, call: ToolCall, config: &'a ToolConfig, wait: Duration) -> BoxFuture<'a, SpawnResult> {
        Box::pin(async move { self.get()?.spawn(call, config, wait).await })
    }
}

/// The builtin `learn`: its knowledge base resolved beneath the workspace (`learn.rs`), then
/// the component inside `jp` with the topic mounted.
pub(super) struct Learn {
    pub(super) wasm: Arc<LazyWasm>,
    pub(super) kb_files: Arc<FsProjectFiles>,
    pub(super) workspace: PathBuf,
}

impl ToolRuntime for Learn {
    fn execute<'a>(&'a self, call: ToolCall, config: &'a ToolConfig) -> Execution<'a> {
        Box::pin(async move {
            let (call, source) = super::learn::learn_call(&self.kb_files, &self.workspace, call, config).await?;
            self.wasm.get()?.run(call, config, Some(source)).await
        })
    }

    fn listed_as(&self) -> Option<&'static str> {
        Some("wasm")
    }

    fn own_schema(&self) -> Option<String> {
        // The component's own answer, kept beside it as a file: listing compiles nothing.
        Some(crate::runtime::wasm::LEARN_SCHEMA.to_owned())
    }

    fn policy_summary(&self) -> Option<String> {
        Some(
            "files: the chosen topic's subjects, read-only at /subjects (no workspace); network: none; processes: none"
                .into(),
        )
    }

    fn fixed_runtime(&self) -> bool {
        true
    }
}

/// D10's builtin executors, by tool name.
pub(super) struct Builtins {
    executors: BTreeMap<&'static str, Arc<dyn ToolRuntime>>,
}

impl ToolRuntime for Builtins {
    fn execute<'a>(&'a self, call: ToolCall, config: &'a ToolConfig) -> Execution<'a> {
        Box::pin(async move {
            match self.executors.get(call.name.as_str()) {
                Some(e) => e.execute(call, config).await,
                None => Err(RuntimeError::Misrouted { tool: call.name, runtime: "builtin" }),
            }
        })
    }
}

/// The VFS runtime with the builtin fs tools' defaults: those that write get a writable
/// workspace when their table sets no policy (`runtime = "vfs"` on them).
struct Vfs {
    vfs: Arc<VfsRuntime>,
}

impl ToolRuntime for Vfs {
    fn execute<'a>(&'a self, call: ToolCall, config: &'a ToolConfig) -> Execution<'a> {
        Box::pin(async move {
            let builtin_writes = super::builtin_writes(&call.name) && config.command.as_deref().is_some_and(is_self);
            let default = jp_core::runtime::default_policy(&call.name, config, builtin_writes);
            self.vfs.run_with_default(call, config, None, default).await
        })
    }

    fn live(&self, _: &str, _: &ToolConfig) -> bool {
        true
    }

    fn spawn<'a>(&'a self, call: ToolCall, config: &'a ToolConfig, wait: Duration) -> BoxFuture<'a, SpawnResult> {
        Box::pin(async move {
            // Only the table's own policy applies here (`call.policy`, resolved at load, wins).
            let default = jp_core::runtime::default_policy(&call.name, config, false);
            let (state, handle) = self.vfs.spawn_stateful(call, config, default, wait).await?;
            Ok((state, handle.map(|h| Box::new(h) as Box<dyn AnyToolHandle>)))
        })
    }
}

/// Whether `command` runs this `jp` in tool mode (a builtin tool as a VFS tool).
fn is_self(command: &str) -> bool {
    command.ends_with(super::TOOL_MODE_ARG)
}

/// Every runtime of one `jp` process.
pub(super) struct Runtimes {
    stdio: Arc<dyn ToolRuntime>,
    vfs: Arc<dyn ToolRuntime>,
    wasm: Arc<LazyWasm>,
    builtins: Arc<dyn ToolRuntime>,
    /// The builtin executors by name (those `builtins` dispatches to).
    executors: BTreeMap<&'static str, Arc<dyn ToolRuntime>>,
    mcp: Arc<McpRuntime>,
}

impl Runtimes {
    pub(super) fn new(
        stdio: StdioRuntime,
        vfs: Arc<VfsRuntime>,
        wasm: Arc<LazyWasm>,
        builtin: BuiltinRuntime,
        mcp: Arc<McpRuntime>,
        learn: Learn,
        run: RunRuntime,
    ) -> Self {
        let fs: Arc<dyn ToolRuntime> = Arc::new(builtin);
        let mut executors: BTreeMap<&'static str, Arc<dyn ToolRuntime>> = BTreeMap::new();
        for t in jp_fs_tools::TOOLS {
            executors.insert(t.name, fs.clone());
        }
        executors.insert(LEARN, Arc::new(learn));
        executors.insert(RUN, Arc::new(run));
        Self {
            stdio: Arc::new(stdio),
            vfs: Arc::new(Vfs { vfs }),
            wasm,
            builtins: Arc::new(Builtins { executors: executors.clone() }),
            executors,
            mcp,
        }
    }

    /// D10's builtin executor of the builtin tool `name`: the runtime that answers for it
    /// (its actions, its schema, whether it keeps a live process), even when it runs as `jp __tool`.
    pub(super) fn builtin(&self, name: &str) -> Option<Arc<dyn ToolRuntime>> {
        self.executors.get(name).cloned()
    }

    /// D10: the runtime that executes a tool resolved to `choice`.
    pub(super) fn resolve(&self, choice: &RuntimeChoice) -> Arc<dyn ToolRuntime> {
        match choice {
            RuntimeChoice::Local(ToolRuntimeKind::Stdio) => self.stdio.clone(),
            RuntimeChoice::Local(ToolRuntimeKind::Vfs) => self.vfs.clone(),
            RuntimeChoice::Local(ToolRuntimeKind::Wasm) => self.wasm.clone(),
            RuntimeChoice::Builtin => self.builtins.clone(),
            RuntimeChoice::Mcp { .. } => self.mcp.clone(),
        }
    }
}
