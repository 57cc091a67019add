//! [`HostServices`]: what a runtime needs to build a tool's [`Dispatcher`] — the project files,
//! the HTTP client, the process runner, who answers inquiries, the host environment and where
//! decisions are reported. `App` builds it once; the VFS, builtin and `run` runtimes serve their
//! tools' requests through it (so a tool gets the same policy and the same dispatcher whichever
//! way it runs), and the stdio and wasm runtimes are built from it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use jp_core::BoxFuture;
use jp_core::files::{FilesError, FilesResult, GrepQuery, Metadata, ProjectFiles};
use jp_core::host::{DenyInquirer, DispatchEvents, Dispatcher, HttpClient, Inquirer, ProcessRunner, Unavailable};
use jp_core::policy::{AccessPolicy, WorkspacePath};
use jp_core::protocol::{DEFAULT_MAX_LINE, DirEntry, GrepFileMatch};
use jp_core::runtime::{RuntimeError, ToolCall, ToolConfig};

/// The services behind a tool's host requests.
#[derive(Clone)]
pub struct HostServices {
    /// The project.
    pub files: Arc<dyn ProjectFiles>,
    /// Its real root (relative commands, the home check).
    pub workspace: PathBuf,
    /// Behind `http.*`.
    pub http: Arc<dyn HttpClient>,
    /// Behind `process.run`.
    pub process: Arc<dyn ProcessRunner>,
    /// Who answers inquiries unless a call brings its own.
    pub inquirer: Arc<dyn Inquirer>,
    /// The host environment (filtered by each tool's policy).
    pub env: BTreeMap<String, String>,
    /// The home directory, so `~/…` sensitive paths apply when the workspace contains it.
    pub home: Option<PathBuf>,
    /// Where every decision is reported (`--trace`, logs).
    pub trace: Option<Arc<dyn DispatchEvents>>,
    /// Largest protocol line a dispatcher answers with.
    pub max_line: usize,
}

impl std::fmt::Debug for HostServices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostServices").field("workspace", &self.workspace).finish_non_exhaustive()
    }
}

impl HostServices {
    /// Services over `files` rooted at `workspace`: no HTTP, no processes, inquiries denied.
    pub fn new(files: Arc<dyn ProjectFiles>, workspace: impl Into<PathBuf>) -> Self {
        Self {
            files,
            workspace: workspace.into(),
            http: Arc::new(Unavailable::no_http()),
            process: Arc::new(Unavailable::no_process()),
            inquirer: Arc::new(DenyInquirer),
            env: BTreeMap::new(),
            home: None,
            trace: None,
            max_line: DEFAULT_MAX_LINE,
        }
    }

    /// The HTTP client behind `http.*`.
    pub fn http(mut self, http: Arc<dyn HttpClient>) -> Self {
        self.http = http;
        self
    }
    /// The runner behind `process.run`.
    pub fn process(mut self, process: Arc<dyn ProcessRunner>) -> Self {
        self.process = process;
        self
    }
    /// Who answers inquiries unless a call brings its own.
    pub fn inquirer(mut self, inquirer: Arc<dyn Inquirer>) -> Self {
        self.inquirer = inquirer;
        self
    }
    /// The host environment (filtered by each tool's policy).
    pub fn env(mut self, env: BTreeMap<String, String>) -> Self {
        self.env = env;
        self
    }
    /// The home directory, so `~/…` sensitive paths apply when the workspace contains it.
    pub fn home(mut self, home: Option<PathBuf>) -> Self {
        self.home = home;
        self
    }
    /// Where every decision is reported (`--trace`, logs); `None`: nowhere.
    pub fn trace(mut self, trace: Option<Arc<dyn DispatchEvents>>) -> Self {
        self.trace = trace;
        self
    }

    /// The policy of `call`: the one the host resolved for the tool ([`ToolCall::policy`]),
    /// else its table compiled (`default` without a `sandbox`/`access` table) with the home
    /// directory known.
    pub fn policy(
        &self,
        call: &ToolCall,
        config: &ToolConfig,
        default: AccessPolicy,
    ) -> Result<Arc<AccessPolicy>, RuntimeError> {
        match &call.policy {
            Some(resolved) => Ok(resolved.clone()),
            None => self.compile(config, default),
        }
    }

    /// A tool's table compiled (`default` without a `sandbox`/`access` table), with the home
    /// directory known.
    pub fn compile(&self, config: &ToolConfig, default: AccessPolicy) -> Result<Arc<AccessPolicy>, RuntimeError> {
        let mut policy = config.policy(default)?;
        if let (Some(home), Ok(ws)) = (&self.home, std::fs::canonicalize(&self.workspace)) {
            policy.set_home(&ws.to_string_lossy(), &home.to_string_lossy());
        }
        Ok(Arc::new(policy))
    }

    /// The dispatcher serving one call of a tool under `policy`; the call's own inquirer, if it
    /// brings one, answers its inquiries.
    pub fn dispatcher(&self, call: &ToolCall, policy: Arc<AccessPolicy>) -> Dispatcher {
        let mut builder = Dispatcher::builder(call.name.clone(), policy, self.files.clone())
            .http(self.http.clone())
            .process(self.process.clone())
            .inquirer(crate::learning::inquirer_for(call.inquirer.as_ref(), &self.inquirer))
            .env(self.env.clone())
            .max_line(self.max_line);
        if let Some(trace) = &self.trace {
            builder = builder.trace(trace.clone());
        }
        builder.build()
    }
}

/// No project files: every operation is refused with `why` — for runtimes whose tools make no
/// file requests through jp (a stdio tool reaches the workspace directly, under the OS sandbox)
/// or may not (a tool being described), as a second wall behind the policy.
#[derive(Debug, Clone, Copy)]
pub struct NoFiles {
    /// Why every operation is refused.
    pub why: &'static str,
    /// What [`ProjectFiles::display_root`] shows.
    pub shown: &'static str,
}

impl NoFiles {
    /// Files of a runtime whose tools reach the workspace directly (stdio).
    pub const DIRECT: Self = Self {
        why: "a stdio tool reaches the workspace directly, under the OS sandbox, not through jp",
        shown: "(no files: a stdio tool makes no requests)",
    };

    fn refuse<'a, T: Send + 'a>(&self) -> BoxFuture<'a, FilesResult<T>> {
        let why = self.why;
        Box::pin(async move { Err(FilesError::Unsupported(why.into())) })
    }
}

impl ProjectFiles for NoFiles {
    fn read<'a>(&'a self, _: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<Vec<u8>>> {
        self.refuse()
    }
    fn write<'a>(&'a self, _: &'a WorkspacePath, _: &'a [u8]) -> BoxFuture<'a, FilesResult<()>> {
        self.refuse()
    }
    fn exists<'a>(&'a self, _: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<bool>> {
        self.refuse()
    }
    fn list_dir<'a>(&'a self, _: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<Vec<DirEntry>>> {
        self.refuse()
    }
    fn metadata<'a>(&'a self, _: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<Metadata>> {
        self.refuse()
    }
    fn delete<'a>(&'a self, _: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<()>> {
        self.refuse()
    }
    fn rename<'a>(&'a self, _: &'a WorkspacePath, _: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<()>> {
        self.refuse()
    }
    fn grep<'a>(&'a self, _: &'a GrepQuery) -> BoxFuture<'a, FilesResult<Vec<GrepFileMatch>>> {
        self.refuse()
    }
    fn create_dir<'a>(&'a self, _: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<()>> {
        self.refuse()
    }
    fn display_root(&self) -> String {
        self.shown.into()
    }
}
