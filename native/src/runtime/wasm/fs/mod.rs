//! `wasi:filesystem` for components, served by the core dispatcher instead of a raw preopen.
//!
//! A WASI preopen grants a directory tree; it cannot say "not `.env`" or "`src` read-only". So
//! every preopen here (`/workspace`, `/subjects`) is a [`Mount`] over a [`Dispatcher`], and each
//! filesystem call a guest makes — `open_at`, `stat_at`, `read_directory`, `unlink_file_at`,
//! `rename_at`, … — is decided by that dispatcher's policy (with its inquiries and trace) and
//! performed through its `ProjectFiles`, exactly like the matching `jp:host/filesystem` import
//! or VFS request. Plain `std::fs` in a guest therefore obeys the same rules as the protocol.
//!
//! Files are served whole: opening reads the file through the dispatcher (policy, size cap,
//! secret scrubbing), and writes go to an in-memory buffer that is committed atomically (temp
//! file + rename) when the descriptor is closed, synced, or the call ends normally. A call that
//! traps or times out commits nothing it had not already closed, so a file is either as it was
//! or fully written. The buffers of a call are charged to a byte budget (its memory limit, see
//! `buffer`) and a call holds at most [`MAX_DESCRIPTORS`] descriptors and listings, so a guest
//! cannot make the host hold more than its own memory limit in files.
//!
//! Every operation acts on the path the dispatcher authorized — with symlinks resolved beneath
//! the root — never on the path the guest spelled, and existence is only revealed for paths the
//! policy lets the guest use at all.

mod buffer;
mod descriptor;

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use jp_core::files::FilesError;
use jp_core::host::{DispatchEvents, Dispatcher, HostError};
use jp_core::policy::{Capability, Decision, WorkspacePath};
use jp_core::protocol::{EntryKind, HostRequest, HostResponse, Id};
use wasmtime::component::{HasData, Resource, ResourceTable};
use wasmtime_wasi::p2::bindings::filesystem::{preopens, types};
use wasmtime_wasi::p2::{FsError, FsResult};

use self::buffer::{Budget, Shared};
use types::{DescriptorStat, DescriptorType, DirectoryEntry, ErrorCode, MetadataHashValue};

/// Descriptors (files and directories) and directory listings one call may hold open. Past it
/// an open fails with `quota` (WASI has no "too many open files").
pub const MAX_DESCRIPTORS: usize = 128;

/// A guest directory backed by a dispatcher (`/workspace` → the project, `/subjects` → a topic).
#[derive(Clone)]
pub struct Mount {
    /// Where the guest sees it.
    pub guest_path: String,
    /// Who decides and serves its requests.
    pub dispatcher: Arc<Dispatcher>,
}

enum Node {
    Dir { mount: usize, path: WorkspacePath },
    File { mount: usize, path: WorkspacePath, read: bool, write: bool, buf: Shared },
}

/// The filesystem state of one call.
pub struct GuestFs {
    mounts: Vec<Mount>,
    nodes: HashMap<u32, Node>,
    listings: HashMap<u32, VecDeque<DirectoryEntry>>,
    next: u32,
    /// Closed files whose content is still to be written.
    pending: Vec<(usize, WorkspacePath, Shared)>,
    events: Arc<dyn DispatchEvents>,
    requests: i64,
    /// What the call's file buffers may hold in all.
    budget: Arc<Budget>,
}

/// A file a component wrote that could not be written to the project.
#[derive(Debug, thiserror::Error)]
#[error("writing '{path}' failed: {source}")]
pub struct CommitError {
    /// The file, as the component saw it.
    pub path: String,
    /// Why.
    pub source: FilesError,
}

impl GuestFs {
    /// The call's mounts; decisions are reported to `events`; open files may buffer `memory`
    /// bytes in all (the call's memory limit).
    pub fn new(mounts: Vec<Mount>, events: Arc<dyn DispatchEvents>, memory: usize) -> Self {
        Self {
            mounts,
            nodes: HashMap::new(),
            listings: HashMap::new(),
            next: 1,
            pending: Vec::new(),
            events,
            requests: 0,
            budget: Budget::new(memory),
        }
    }

    /// Refuse a new descriptor or listing past [`MAX_DESCRIPTORS`].
    fn room(&self) -> FsResult<()> {
        if self.nodes.len() + self.listings.len() >= MAX_DESCRIPTORS {
            return Err(ErrorCode::Quota.into());
        }
        Ok(())
    }

    fn insert(&mut self, node: Node) -> u32 {
        let rep = self.next;
        self.next += 1;
        self.nodes.insert(rep, node);
        rep
    }

    /// Write every changed file (closed or still open). Called when the guest returned normally.
    pub async fn commit_all(&mut self) -> Result<(), CommitError> {
        let open: Vec<u32> = self.nodes.keys().copied().collect();
        for rep in open {
            self.retire(rep);
        }
        self.commit_pending().await
    }

    /// Move a closed file's buffer to the commit queue.
    fn retire(&mut self, rep: u32) {
        if let Some(Node::File { mount, path, write: true, buf, .. }) = self.nodes.remove(&rep)
            && buf.lock().is_ok_and(|b| b.dirty)
        {
            self.pending.push((mount, path, buf));
        }
    }

    async fn commit_pending(&mut self) -> Result<(), CommitError> {
        for (mount, path, buf) in std::mem::take(&mut self.pending) {
            // A closed file nothing else refers to is written from its buffer, not a copy.
            let last = Arc::strong_count(&buf) == 1;
            let data = match buf.lock() {
                Ok(mut b) if b.dirty => {
                    b.dirty = false;
                    if last { std::mem::take(&mut b.data) } else { b.data.clone() }
                }
                _ => continue,
            };
            self.mounts[mount]
                .dispatcher
                .files()
                .write(&path, &data)
                .await
                .map_err(|source| CommitError { path: path.display().to_string(), source })?;
        }
        Ok(())
    }

    fn id(&mut self) -> Id {
        self.requests += 1;
        Id::Number(self.requests)
    }
}

/// What the generated `wasi:filesystem` traits are implemented on.
pub struct GuestFsView<'a> {
    /// The call's filesystem state.
    pub fs: &'a mut GuestFs,
    /// The WASI resource table (streams live there).
    pub table: &'a mut ResourceTable,
}

/// `HasData` marker for the linker.
pub struct GuestFsData;

impl HasData for GuestFsData {
    type Data<'a> = GuestFsView<'a>;
}

fn code(e: &HostError) -> ErrorCode {
    match e {
        HostError::AccessDenied(_) => ErrorCode::Access,
        HostError::NotFound(_) => ErrorCode::NoEntry,
        HostError::AlreadyExists(_) => ErrorCode::Exist,
        HostError::TooLarge(_) => ErrorCode::FileTooLarge,
        HostError::InvalidParams(m) if m.contains("directory") => ErrorCode::IsDirectory,
        HostError::InvalidParams(_) => ErrorCode::Invalid,
        HostError::Cancelled(_) => ErrorCode::Interrupted,
        _ => ErrorCode::Io,
    }
}

fn err(e: HostError) -> FsError {
    code(&e).into()
}

fn files_err(e: FilesError) -> FsError {
    err(HostError::from(e))
}

impl GuestFsView<'_> {
    fn node(&self, fd: &Resource<types::Descriptor>) -> FsResult<&Node> {
        self.fs.nodes.get(&fd.rep()).ok_or_else(|| ErrorCode::BadDescriptor.into())
    }

    fn dir(&self, fd: &Resource<types::Descriptor>) -> FsResult<(usize, WorkspacePath)> {
        match self.node(fd)? {
            Node::Dir { mount, path } => Ok((*mount, path.clone())),
            Node::File { .. } => Err(ErrorCode::NotDirectory.into()),
        }
    }

    fn file(&self, fd: &Resource<types::Descriptor>) -> FsResult<(bool, bool, Shared)> {
        match self.node(fd)? {
            Node::File { read, write, buf, .. } => Ok((*read, *write, buf.clone())),
            Node::Dir { .. } => Err(ErrorCode::IsDirectory.into()),
        }
    }

    /// The workspace path of `rel` below directory `fd`, and the mount.
    fn at(&self, fd: &Resource<types::Descriptor>, rel: &str) -> FsResult<(usize, WorkspacePath)> {
        let (mount, dir) = self.dir(fd)?;
        let joined = if dir.is_root() { rel.to_owned() } else { format!("{}/{rel}", dir.as_str()) };
        // An absolute path, `..` out of the mount, NUL or an over-long path never reaches a file.
        let path = WorkspacePath::parse(&joined).map_err(|_| FsError::from(ErrorCode::NotPermitted))?;
        Ok((mount, path))
    }

    fn dispatcher(&self, mount: usize) -> Arc<Dispatcher> {
        self.fs.mounts[mount].dispatcher.clone()
    }

    /// Decide `cap` on `path` like a request would; the result is the resolved path that was
    /// decided, the only one to act on.
    async fn authorize(
        &mut self,
        mount: usize,
        method: &str,
        cap: Capability,
        path: &WorkspacePath,
    ) -> FsResult<WorkspacePath> {
        self.fs.commit_pending().await.map_err(|_| FsError::from(ErrorCode::Io))?;
        let d = self.dispatcher(mount);
        d.authorize(method, cap, path, self.fs.events.as_ref()).await.map_err(err)
    }

    /// Serve a typed request through the mount's dispatcher (decision, inquiry, trace, scrub).
    async fn request(&mut self, mount: usize, req: HostRequest) -> FsResult<HostResponse> {
        self.fs.commit_pending().await.map_err(|_| FsError::from(ErrorCode::Io))?;
        let id = self.fs.id();
        let d = self.dispatcher(mount);
        d.handle(&req, &id, self.fs.events.as_ref()).await.map_err(err)
    }

    /// What `path` is (`None`: nothing there), for an operation that needs one of `caps`. A
    /// path the policy denies every one of them on — as spelled or as resolved — is `access`
    /// whether it exists or not, so a guest cannot probe denied files. No inquiry is made here:
    /// the operation itself is authorized next, and asks if it has to.
    async fn kind_of(
        &mut self,
        mount: usize,
        path: &WorkspacePath,
        caps: &[Capability],
    ) -> FsResult<Option<EntryKind>> {
        let d = self.dispatcher(mount);
        let resolved = d.files().resolve(path).await.map_err(|e| match e {
            FilesError::InvalidPath(_) => FsError::from(ErrorCode::Access),
            other => files_err(other),
        })?;
        let denied = |cap: &Capability| {
            [path, &resolved].iter().any(|p| matches!(d.policy().check_fs(*cap, p), Decision::Deny(_)))
        };
        if caps.iter().all(denied) {
            return Err(ErrorCode::Access.into());
        }
        match d.files().metadata(&resolved).await {
            Ok(m) => Ok(Some(m.kind)),
            Err(FilesError::NotFound(_)) => Ok(None),
            Err(e) => Err(files_err(e)),
        }
    }

    fn stat_of(kind: EntryKind, size: u64) -> DescriptorStat {
        DescriptorStat {
            type_: match kind {
                EntryKind::File => DescriptorType::RegularFile,
                EntryKind::Dir => DescriptorType::Directory,
            },
            link_count: 1,
            size,
            data_access_timestamp: None,
            data_modification_timestamp: None,
            status_change_timestamp: None,
        }
    }
}

impl preopens::Host for GuestFsView<'_> {
    fn get_directories(&mut self) -> wasmtime::Result<Vec<(Resource<types::Descriptor>, String)>> {
        let mut out = Vec::new();
        for (i, m) in self.fs.mounts.clone().into_iter().enumerate() {
            let rep = self.fs.insert(Node::Dir { mount: i, path: WorkspacePath::root() });
            out.push((Resource::new_own(rep), m.guest_path));
        }
        Ok(out)
    }
}

impl types::Host for GuestFsView<'_> {
    fn convert_error_code(&mut self, e: FsError) -> wasmtime::Result<ErrorCode> {
        e.downcast()
    }

    fn filesystem_error_code(&mut self, e: Resource<wasmtime::Error>) -> wasmtime::Result<Option<ErrorCode>> {
        let e = self.table.get(&e)?;
        Ok(e.downcast_ref::<std::io::Error>().map(ErrorCode::from))
    }
}

fn hash(mount: usize, path: &WorkspacePath) -> MetadataHashValue {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (mount, path.as_str()).hash(&mut h);
    let lower = h.finish();
    "jp".hash(&mut h);
    MetadataHashValue { lower, upper: h.finish() }
}
