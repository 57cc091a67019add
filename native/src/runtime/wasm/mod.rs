//! [`WasmRuntime`]: WASI p2 components under wasmtime (seed 002).
//!
//! One [`WasmEngine`] per process: component model, async, pooling allocator, epoch
//! interruption driven by a 10 ms ticker thread, and an on-disk cache of compiled artifacts
//! (`Component::serialize`, mapped back with `deserialize_file`: a second `jp` process loads a
//! component in about a millisecond instead of compiling it). Components are cached in memory
//! by content hash as an `InstancePre`, so each call gets a fresh instance — no state survives
//! between calls.
//!
//! A component has no ambient capabilities: no environment, no sockets, no arguments; clocks and
//! random are allowed; stdout and stderr are captured with a cap. Its files are `wasi:filesystem`
//! mounts served by the core dispatcher ([`fs`]), and its `jp:host` imports are dispatcher
//! requests (the private `imports` module) — one policy for VFS subprocesses and components
//! alike. Per call, a wall-clock deadline, a memory limit and a result-size limit each end the
//! call with a clear error, and cancellation stops it at the next epoch tick or host call.

mod content;
mod engine;
pub mod fs;
mod imports;
mod stateful;

use engine::Loaded;
pub use engine::{WasmEngine, cache_dir, engine_config};

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use jp_core::BoxFuture;
use jp_core::cancel::CancellationToken;
use jp_core::files::ProjectFiles;
use jp_core::host::{DispatchEvents, Dispatcher, NoEvents};
use jp_core::policy::AccessPolicy;
use jp_core::runtime::{
    ComponentError, Execution, ExecutionOutcome, RuntimeError, SpawnResult, ToolCall, ToolConfig, ToolRuntime,
};
use jp_core::schema::StatefulAction;
use jp_core::state::component::{WitError, WitOutcome, WitQuestion, WitSuccess};
use wasmtime::component::ResourceTable;
use wasmtime::{Store, StoreLimits, StoreLimitsBuilder, UpdateDeadline};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use self::fs::{GuestFs, Mount};
use self::imports::HostImports;
use super::services::HostServices;
use crate::files::FsProjectFiles;

#[allow(missing_docs, unreachable_pub, clippy::all)]
mod bindings {
    wasmtime::component::bindgen!({
        world: "imports",
        path: "../wit/host",
        imports: { default: async },
    });
}

#[allow(missing_docs, unreachable_pub, clippy::all)]
mod tool_bindings {
    wasmtime::component::bindgen!({
        world: "tool",
        path: "../wit/tool",
        exports: { default: async },
    });
}

use tool_bindings::jp::tool::types::{Action, Context, Outcome};

/// The builtin `learn` component, compiled from `tools/guests/learn` by the build script.
pub static LEARN_WASM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/jp_tool_learn.wasm"));

/// `learn`'s D06 schema response: the file its `describe` export answers with
/// (`tools/guests/learn/schema.json`), read here so that listing `learn` compiles nothing
/// (compiling the 3 MB component took 1.3–1.9 s of a cold `tools/list`). `tests/wasm.rs`
/// checks that the component answers exactly this.
pub const LEARN_SCHEMA: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../tools/guests/learn/schema.json"));

/// Where the build left the guest components (`jp_tool_test.wasm`, `jp_fs_component.wasm`, …),
/// for tests, benchmarks and the web build.
pub const GUESTS_DIR: &str = env!("JP_GUESTS_DIR");

/// What a component's call answered: the seed's `outcome`, or `jp:tool/content`'s.
enum Answer {
    Text(Outcome),
    Blocks(content::CallOutcome),
}

/// Per-call limits.
#[derive(Debug, Clone, Copy)]
pub struct WasmLimits {
    /// Wall-clock time of one call.
    pub deadline: Duration,
    /// Linear memory of one instance, and separately the bytes its open files may buffer on
    /// the host (`wasi:filesystem` buffers are charged to a budget of this size).
    pub memory: usize,
    /// Size of the result text.
    pub output: usize,
    /// Captured stdout and stderr, each.
    pub stdio: usize,
}

impl Default for WasmLimits {
    fn default() -> Self {
        Self {
            deadline: Duration::from_secs(60),
            memory: 256 << 20,
            output: jp_core::protocol::DEFAULT_MAX_CONTENT,
            stdio: 1 << 20,
        }
    }
}

/// Why a call stopped early (set by the epoch callback).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Deadline,
    Cancelled,
}

/// The store data of one call.
pub struct CallState {
    wasi: WasiCtx,
    table: ResourceTable,
    fs: GuestFs,
    host: HostImports,
    limits: StoreLimits,
    deadline: Instant,
    cancel: CancellationToken,
    stop: Option<Stop>,
    stderr: MemoryOutputPipe,
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

/// Where a component comes from.
#[derive(Debug, Clone)]
pub enum ComponentSource {
    /// Compiled into `jp`.
    Builtin {
        /// Tool name.
        name: &'static str,
        /// The component.
        bytes: &'static [u8],
        /// A directory the guest sees read-only at `/subjects`, already opened (so the place
        /// that was checked is the place mounted).
        subjects: Option<Arc<FsProjectFiles>>,
    },
    /// A file (`wasm = "…"`, a `.wasm` command, or `runtime = "wasm"`).
    File(PathBuf),
}

/// Runs components.
pub struct WasmRuntime {
    engine: Arc<WasmEngine>,
    /// The project, its HTTP client, process runner, inquirer, environment and trace: the same
    /// services every runtime builds its dispatchers from.
    services: HostServices,
    limits: WasmLimits,
    /// The policy of a component without a `sandbox` or `access` table, built once (building
    /// one per call was a measurable part of a call).
    stdio_default: Arc<AccessPolicy>,
}

impl std::fmt::Debug for WasmRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmRuntime").field("workspace", &self.services.workspace).finish_non_exhaustive()
    }
}

/// The component file a local tool names: `wasm`, else the first word of `command`.
pub fn component_path(config: &ToolConfig, workspace: &Path) -> Option<PathBuf> {
    let rel = match (&config.wasm, &config.command) {
        (Some(w), _) => w.clone(),
        (None, Some(c)) => shlex::split(c).and_then(|w| w.into_iter().next())?,
        (None, None) => return None,
    };
    Some(workspace.join(rel))
}

impl WasmRuntime {
    /// A runtime for the project in `files` (whose real root is `workspace`): no HTTP, no
    /// processes, inquiries denied.
    pub fn new(engine: Arc<WasmEngine>, files: Arc<dyn ProjectFiles>, workspace: impl Into<PathBuf>) -> Self {
        Self::with_services(engine, HostServices::new(files, workspace))
    }
    /// A runtime whose components' requests are served by `services`.
    pub fn with_services(engine: Arc<WasmEngine>, services: HostServices) -> Self {
        Self { engine, services, limits: WasmLimits::default(), stdio_default: Arc::new(AccessPolicy::stdio_default()) }
    }
    /// Per-call limits.
    pub fn limits(mut self, limits: WasmLimits) -> Self {
        self.limits = limits;
        self
    }

    fn source(&self, call: &ToolCall, config: &ToolConfig) -> Result<ComponentSource, RuntimeError> {
        let path = component_path(config, &self.services.workspace)
            .ok_or_else(|| ComponentError::NoFile { tool: call.name.clone() })?;
        Ok(ComponentSource::File(path))
    }

    /// Run one call of a component. Without a `sandbox` or `access` table a local component
    /// gets seed 002's capabilities: the workspace read-write at `/workspace`, no network, no
    /// processes.
    pub async fn run(
        &self,
        call: ToolCall,
        config: &ToolConfig,
        source: Option<ComponentSource>,
    ) -> Result<ExecutionOutcome, RuntimeError> {
        let source = match source {
            Some(s) => s,
            None => self.source(&call, config)?,
        };
        let policy = self.policy(&call, config)?;
        let (loaded, mounts, host_dispatcher) = self.prepare(&call, &source, policy)?;
        let arguments = serde_json::to_string(&call.arguments).unwrap_or_default();
        let answers = serde_json::to_string(&call.answers).unwrap_or_default();
        let root = mounts.first().map_or_else(|| "/".to_owned(), |m| m.guest_path.clone());
        let mut store = self.store(&call, mounts, host_dispatcher);
        let instantiate_failed = |e: wasmtime::Error| ComponentError::Instantiate {
            what: format!("for '{}'", call.name),
            why: format!("{e:#}"),
        };
        let answer = if let Some(indices) = &loaded.content {
            let instance = loaded.pre.instantiate_async(&mut store).await.map_err(instantiate_failed)?;
            let guest = indices.load(&mut store, &instance).map_err(instantiate_failed)?;
            let ctx = content::Context { root, action: content::Action::Run };
            let run = guest.call_run(&mut store, &ctx, &call.name, &arguments, &answers);
            tokio::select! {
                r = run => r.map(Answer::Blocks),
                () = call.cancel.cancelled() => return Ok(ExecutionOutcome::Cancelled { id: call.id }),
            }
        } else {
            let tool = loaded.tool.instantiate_async(&mut store).await.map_err(instantiate_failed)?;
            let ctx = Context { root, action: Action::Run };
            let run = tool.call_run(&mut store, &ctx, &call.name, &arguments, &answers);
            tokio::select! {
                r = run => r.map(Answer::Text),
                () = call.cancel.cancelled() => return Ok(ExecutionOutcome::Cancelled { id: call.id }),
            }
        };
        let answer = match answer {
            Ok(a) => a,
            Err(e) => return self.failed(&call, store.data(), e),
        };
        if let Err(e) = store.data_mut().fs.commit_all().await {
            return Ok(ExecutionOutcome::failed(&call.id, format!("tool '{}' finished but {e}", call.name)));
        }
        Ok(self.outcome(call, answer))
    }

    /// The policy `call` runs under: the one resolved at load, else the table's, else seed
    /// 002's default for a component.
    fn policy(&self, call: &ToolCall, config: &ToolConfig) -> Result<Arc<AccessPolicy>, RuntimeError> {
        Ok(if let Some(resolved) = &call.policy {
            resolved.clone()
        } else if config.sandbox.is_none() && config.access.is_none() {
            self.stdio_default.clone()
        } else {
            let default = jp_core::runtime::default_policy(&call.name, config, false);
            Arc::new(config.policy(default)?)
        })
    }

    /// A call's end as the core sees it, the result held to the output limit — the core's
    /// one mapping of a component's answer, which jco's hosts use too.
    fn outcome(&self, call: ToolCall, answer: Answer) -> ExecutionOutcome {
        // The two worlds' bindings have types of their own with the same fields.
        macro_rules! error {
            ($e:expr) => {
                WitOutcome::Error(WitError { message: $e.message, trace: $e.trace, transient: $e.transient })
            };
        }
        macro_rules! question {
            ($q:expr) => {
                WitOutcome::NeedsInput(WitQuestion {
                    id: $q.id,
                    text: $q.text,
                    answer_type: $q.answer_type,
                    default: $q.default,
                })
            };
        }
        let plain = match answer {
            Answer::Text(Outcome::Success(text)) => WitOutcome::Success(WitSuccess::Text(text)),
            Answer::Text(Outcome::Error(e)) => error!(e),
            Answer::Text(Outcome::NeedsInput(q)) => question!(q),
            Answer::Blocks(content::CallOutcome::Success(r)) => {
                WitOutcome::Success(WitSuccess::Content(content::plain(r)))
            }
            Answer::Blocks(content::CallOutcome::Error(e)) => error!(e),
            Answer::Blocks(content::CallOutcome::NeedsInput(q)) => question!(q),
        };
        plain.into_outcome(&call.id, &call.name, self.limits.output)
    }

    /// The D06 schema of a component that exports `jp:tool/describe`; `Ok(None)` when it does not.
    pub async fn describe(&self, name: &str, source: ComponentSource) -> Result<Option<String>, RuntimeError> {
        let call = ToolCall {
            name: name.into(),
            id: "schema".into(),
            arguments: Default::default(),
            answers: Default::default(),
            cancel: CancellationToken::new(),
            inquirer: None,
            policy: None,
        };
        let (loaded, mounts, d) = self.prepare(&call, &source, Arc::new(AccessPolicy::vfs_default()))?;
        let Some(index) = loaded.describe else { return Ok(None) };
        let mut store = self.store(&call, mounts, d);
        let instance = loaded
            .pre
            .instantiate_async(&mut store)
            .await
            .map_err(|e| ComponentError::Instantiate { what: format!("for '{name}'"), why: format!("{e:#}") })?;
        let func =
            instance.get_typed_func::<(), (String,)>(&mut store, &index).map_err(|e| ComponentError::WrongTypes {
                what: format!("'{name}'"),
                interface: "jp:tool/describe",
                why: format!("{e:#}"),
            })?;
        match func.call_async(&mut store, ()).await {
            Ok((schema,)) => Ok(Some(schema)),
            Err(e) => self.failed(&call, store.data(), e).and_then(|o| match o {
                ExecutionOutcome::Completed { result: Err(e), .. } => Err(RuntimeError::Other(e.message)),
                _ => Err(RuntimeError::Other(format!("describing '{name}' failed"))),
            }),
        }
    }

    /// The component and its mounts for `call`: the workspace at `/workspace` served under
    /// `policy` (a file component), or a builtin's `/subjects`; and the dispatcher behind its
    /// `jp:host` imports, all built from the runtime's [`HostServices`].
    #[allow(clippy::type_complexity)]
    fn prepare(
        &self,
        call: &ToolCall,
        source: &ComponentSource,
        policy: Arc<AccessPolicy>,
    ) -> Result<(Arc<Loaded>, Vec<Mount>, Option<Arc<Dispatcher>>), RuntimeError> {
        let name = &call.name;
        let dispatcher = |policy: Arc<AccessPolicy>, files: Arc<dyn ProjectFiles>| {
            let services = HostServices { files, ..self.services.clone() };
            Arc::new(services.dispatcher(call, policy))
        };
        match source {
            ComponentSource::Builtin { bytes, subjects, .. } => {
                let loaded = self.engine.load_static(&format!("builtin '{name}'"), bytes)?;
                let mut mounts = Vec::new();
                if let Some(files) = subjects {
                    let d = dispatcher(Arc::new(AccessPolicy::vfs_default()), files.clone());
                    mounts.push(Mount { guest_path: "/subjects".into(), dispatcher: d });
                }
                Ok((loaded, mounts, None))
            }
            ComponentSource::File(path) => {
                let loaded = self.engine.load_file(path)?;
                let d = dispatcher(policy, self.services.files.clone());
                Ok((loaded, vec![Mount { guest_path: "/workspace".into(), dispatcher: d.clone() }], Some(d)))
            }
        }
    }

    /// A fresh store for one call: WASI context, mounts, imports, limits, deadline.
    fn store(&self, call: &ToolCall, mounts: Vec<Mount>, dispatcher: Option<Arc<Dispatcher>>) -> Store<CallState> {
        let events: Arc<dyn DispatchEvents> = match &self.services.trace {
            Some(t) => t.clone(),
            None => Arc::new(NoEvents),
        };
        let stderr = MemoryOutputPipe::new(self.limits.stdio);
        let wasi = WasiCtx::builder().stdout(MemoryOutputPipe::new(self.limits.stdio)).stderr(stderr.clone()).build();
        let state = CallState {
            wasi,
            table: ResourceTable::new(),
            fs: GuestFs::new(mounts, events.clone(), self.limits.memory),
            host: HostImports::new(dispatcher, events),
            limits: StoreLimitsBuilder::new().memory_size(self.limits.memory).trap_on_grow_failure(true).build(),
            deadline: Instant::now() + self.limits.deadline,
            cancel: call.cancel.clone(),
            stop: None,
            stderr,
        };
        let mut store = Store::new(&self.engine.engine, state);
        store.limiter(|s| &mut s.limits);
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(|mut ctx| {
            let s = ctx.data_mut();
            if s.cancel.is_cancelled() {
                s.stop = Some(Stop::Cancelled);
                return Ok(UpdateDeadline::Interrupt);
            }
            if Instant::now() >= s.deadline {
                s.stop = Some(Stop::Deadline);
                return Ok(UpdateDeadline::Interrupt);
            }
            Ok(UpdateDeadline::Yield(1))
        });
        store
    }

    fn failed(&self, call: &ToolCall, state: &CallState, e: wasmtime::Error) -> Result<ExecutionOutcome, RuntimeError> {
        failed_with(&call.name, &call.id, &self.limits, state, e)
    }
}

/// Why call `id` of tool `name` stopped early, as its outcome: cancelled, over its deadline or
/// memory limit, or trapped (with the end of its stderr).
fn failed_with(
    name: &str,
    id: &str,
    limits: &WasmLimits,
    state: &CallState,
    e: wasmtime::Error,
) -> Result<ExecutionOutcome, RuntimeError> {
    match state.stop {
        Some(Stop::Cancelled) => Ok(ExecutionOutcome::Cancelled { id: id.to_owned() }),
        Some(Stop::Deadline) => {
            Err(RuntimeError::Timeout { tool: name.to_owned(), seconds: limits.deadline.as_secs().max(1) })
        }
        None => {
            let text = format!("{e:#}");
            let message = if text.contains("memory") && text.contains("grow") {
                format!("Wasm tool '{}' exceeded its memory limit of {} MiB", name, limits.memory >> 20)
            } else {
                // The guest's own words (a Rust panic message) say more than the backtrace.
                let stderr = String::from_utf8_lossy(&state.stderr.contents()).trim().to_owned();
                let tail: String = stderr.chars().rev().take(2000).collect::<Vec<_>>().into_iter().rev().collect();
                let trap = text.lines().last().unwrap_or(&text).to_owned();
                if tail.is_empty() {
                    format!("Wasm tool '{}' trapped: {trap}", name)
                } else {
                    format!("Wasm tool '{}' trapped: {trap}; stderr ends with:\n{tail}", name)
                }
            };
            Ok(ExecutionOutcome::failed(id, message))
        }
    }
}

impl ToolRuntime for WasmRuntime {
    fn execute<'a>(&'a self, call: ToolCall, config: &'a ToolConfig) -> Execution<'a> {
        Box::pin(self.run(call, config, None))
    }

    fn stateful_actions(&self, name: &str, config: &ToolConfig) -> Option<Vec<StatefulAction>> {
        self.stateful_actions_of(name, config)
    }

    fn live(&self, name: &str, config: &ToolConfig) -> bool {
        self.stateful_actions_of(name, config).is_some_and(|a| !a.is_empty())
    }

    fn spawn<'a>(&'a self, call: ToolCall, config: &'a ToolConfig, _wait: Duration) -> BoxFuture<'a, SpawnResult> {
        Box::pin(self.spawn_session(call, config))
    }
}
