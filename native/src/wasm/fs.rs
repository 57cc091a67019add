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
//! or fully written.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use jp_core::files::FilesError;
use jp_core::host::{DispatchEvents, Dispatcher, HostError};
use jp_core::policy::{Capability, WorkspacePath};
use jp_core::protocol::{EntryKind, FsListDirResult, FsReadResult, HostRequest, Id, decode_content};
use serde_json::json;
use wasmtime::component::{HasData, Resource, ResourceTable};
use wasmtime_wasi::p2::bindings::filesystem::{preopens, types};
use wasmtime_wasi::p2::pipe::MemoryInputPipe;
use wasmtime_wasi::p2::{
    DynInputStream, DynOutputStream, FsError, FsResult, OutputStream, Pollable, StreamError, StreamResult,
};

use types::{DescriptorFlags, DescriptorStat, DescriptorType, DirectoryEntry, ErrorCode, MetadataHashValue, OpenFlags};

/// A guest directory backed by a dispatcher (`/workspace` → the project, `/subjects` → a topic).
#[derive(Clone)]
pub struct Mount {
    /// Where the guest sees it.
    pub guest_path: String,
    /// Who decides and serves its requests.
    pub dispatcher: Arc<Dispatcher>,
}

struct FileBuf {
    data: Vec<u8>,
    dirty: bool,
}

type Shared = Arc<Mutex<FileBuf>>;

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
}

impl GuestFs {
    /// No mounts yet; decisions are reported to `events`.
    pub fn new(mounts: Vec<Mount>, events: Arc<dyn DispatchEvents>) -> Self {
        Self {
            mounts,
            nodes: HashMap::new(),
            listings: HashMap::new(),
            next: 1,
            pending: Vec::new(),
            events,
            requests: 0,
        }
    }

    fn insert(&mut self, node: Node) -> u32 {
        let rep = self.next;
        self.next += 1;
        self.nodes.insert(rep, node);
        rep
    }

    /// Write every changed file (closed or still open). Called when the guest returned normally.
    pub async fn commit_all(&mut self) -> Result<(), String> {
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

    async fn commit_pending(&mut self) -> Result<(), String> {
        for (mount, path, buf) in std::mem::take(&mut self.pending) {
            let data = match buf.lock() {
                Ok(mut b) if b.dirty => {
                    b.dirty = false;
                    b.data.clone()
                }
                _ => continue,
            };
            self.mounts[mount]
                .dispatcher
                .files()
                .write(&path, &data)
                .await
                .map_err(|e| format!("writing '{}' failed: {e}", path.display()))?;
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

    async fn authorize(&mut self, mount: usize, method: &str, cap: Capability, path: &WorkspacePath) -> FsResult<()> {
        self.fs.commit_pending().await.map_err(|_| FsError::from(ErrorCode::Io))?;
        let d = self.dispatcher(mount);
        d.authorize(method, cap, path, self.fs.events.as_ref()).await.map(|_| ()).map_err(err)
    }

    async fn request(&mut self, mount: usize, method: &str, params: serde_json::Value) -> FsResult<serde_json::Value> {
        self.fs.commit_pending().await.map_err(|_| FsError::from(ErrorCode::Io))?;
        let req = HostRequest::parse(method, params).map_err(|_| FsError::from(ErrorCode::Invalid))?;
        let id = self.fs.id();
        let d = self.dispatcher(mount);
        d.handle(&req, &id, self.fs.events.as_ref()).await.map_err(err)
    }

    async fn kind_of(&mut self, mount: usize, path: &WorkspacePath) -> FsResult<Option<EntryKind>> {
        match self.dispatcher(mount).files().metadata(path).await {
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

impl types::HostDescriptor for GuestFsView<'_> {
    async fn advise(
        &mut self,
        _fd: Resource<types::Descriptor>,
        _offset: u64,
        _len: u64,
        _advice: types::Advice,
    ) -> FsResult<()> {
        Ok(())
    }

    async fn sync_data(&mut self, fd: Resource<types::Descriptor>) -> FsResult<()> {
        self.sync(fd).await
    }

    async fn get_flags(&mut self, fd: Resource<types::Descriptor>) -> FsResult<DescriptorFlags> {
        Ok(match self.node(&fd)? {
            Node::Dir { .. } => DescriptorFlags::READ,
            Node::File { read, write, .. } => {
                let mut f = DescriptorFlags::empty();
                if *read {
                    f |= DescriptorFlags::READ;
                }
                if *write {
                    f |= DescriptorFlags::WRITE;
                }
                f
            }
        })
    }

    async fn get_type(&mut self, fd: Resource<types::Descriptor>) -> FsResult<DescriptorType> {
        Ok(match self.node(&fd)? {
            Node::Dir { .. } => DescriptorType::Directory,
            Node::File { .. } => DescriptorType::RegularFile,
        })
    }

    async fn set_size(&mut self, fd: Resource<types::Descriptor>, size: u64) -> FsResult<()> {
        let (_, write, buf) = self.file(&fd)?;
        if !write {
            return Err(ErrorCode::BadDescriptor.into());
        }
        let max = self.dispatcher(0).max_content() as u64;
        if size > max {
            return Err(ErrorCode::FileTooLarge.into());
        }
        let mut b = buf.lock().map_err(|_| FsError::from(ErrorCode::Io))?;
        b.data.resize(size as usize, 0);
        b.dirty = true;
        Ok(())
    }

    async fn set_times(
        &mut self,
        _fd: Resource<types::Descriptor>,
        _atim: types::NewTimestamp,
        _mtim: types::NewTimestamp,
    ) -> FsResult<()> {
        Err(ErrorCode::Unsupported.into())
    }

    async fn read(&mut self, fd: Resource<types::Descriptor>, len: u64, offset: u64) -> FsResult<(Vec<u8>, bool)> {
        let (read, _, buf) = self.file(&fd)?;
        if !read {
            return Err(ErrorCode::BadDescriptor.into());
        }
        let b = buf.lock().map_err(|_| FsError::from(ErrorCode::Io))?;
        let start = (offset as usize).min(b.data.len());
        let end = start.saturating_add(len as usize).min(b.data.len());
        Ok((b.data[start..end].to_vec(), end >= b.data.len()))
    }

    async fn write(&mut self, fd: Resource<types::Descriptor>, bytes: Vec<u8>, offset: u64) -> FsResult<u64> {
        let (_, write, buf) = self.file(&fd)?;
        if !write {
            return Err(ErrorCode::BadDescriptor.into());
        }
        let max = self.dispatcher(0).max_content();
        let mut b = buf.lock().map_err(|_| FsError::from(ErrorCode::Io))?;
        write_at(&mut b, offset as usize, &bytes, max).map_err(|_| FsError::from(ErrorCode::FileTooLarge))?;
        Ok(bytes.len() as u64)
    }

    async fn read_directory(
        &mut self,
        fd: Resource<types::Descriptor>,
    ) -> FsResult<Resource<types::DirectoryEntryStream>> {
        let (mount, path) = self.dir(&fd)?;
        let v = self.request(mount, "fs.list_dir", json!({ "path": path.as_str() })).await?;
        let listing: FsListDirResult = serde_json::from_value(v).map_err(|_| FsError::from(ErrorCode::Io))?;
        let entries = listing
            .entries
            .into_iter()
            .map(|e| DirectoryEntry {
                type_: match e.kind {
                    EntryKind::File => DescriptorType::RegularFile,
                    EntryKind::Dir => DescriptorType::Directory,
                },
                name: e.path.rsplit('/').next().unwrap_or(&e.path).to_owned(),
            })
            .collect();
        let rep = self.fs.next;
        self.fs.next += 1;
        self.fs.listings.insert(rep, entries);
        Ok(Resource::new_own(rep))
    }

    async fn sync(&mut self, fd: Resource<types::Descriptor>) -> FsResult<()> {
        if let Node::File { mount, path, write: true, buf, .. } = self.node(&fd)? {
            self.fs.pending.push((*mount, path.clone(), buf.clone()));
            self.fs.commit_pending().await.map_err(|_| FsError::from(ErrorCode::Io))?;
        }
        Ok(())
    }

    async fn create_directory_at(&mut self, fd: Resource<types::Descriptor>, path: String) -> FsResult<()> {
        let (mount, p) = self.at(&fd, &path)?;
        if self.kind_of(mount, &p).await?.is_some() {
            return Err(ErrorCode::Exist.into());
        }
        self.authorize(mount, "fs.create_dir", Capability::Create, &p).await?;
        self.dispatcher(mount).files().create_dir(&p).await.map_err(files_err)
    }

    async fn stat(&mut self, fd: Resource<types::Descriptor>) -> FsResult<DescriptorStat> {
        Ok(match self.node(&fd)? {
            Node::Dir { .. } => Self::stat_of(EntryKind::Dir, 0),
            Node::File { buf, .. } => {
                let len = buf.lock().map_err(|_| FsError::from(ErrorCode::Io))?.data.len();
                Self::stat_of(EntryKind::File, len as u64)
            }
        })
    }

    async fn stat_at(
        &mut self,
        fd: Resource<types::Descriptor>,
        _flags: types::PathFlags,
        path: String,
    ) -> FsResult<DescriptorStat> {
        let (mount, p) = self.at(&fd, &path)?;
        let v = self.request(mount, "fs.metadata", json!({ "path": p.as_str() })).await?;
        let kind: EntryKind = serde_json::from_value(v["kind"].clone()).map_err(|_| FsError::from(ErrorCode::Io))?;
        Ok(Self::stat_of(kind, v["size"].as_u64().unwrap_or(0)))
    }

    async fn set_times_at(
        &mut self,
        _fd: Resource<types::Descriptor>,
        _flags: types::PathFlags,
        _path: String,
        _atim: types::NewTimestamp,
        _mtim: types::NewTimestamp,
    ) -> FsResult<()> {
        Err(ErrorCode::Unsupported.into())
    }

    async fn link_at(
        &mut self,
        _fd: Resource<types::Descriptor>,
        _old_flags: types::PathFlags,
        _old_path: String,
        _new_fd: Resource<types::Descriptor>,
        _new_path: String,
    ) -> FsResult<()> {
        // Links would let a tool give a denied file an allowed name.
        Err(ErrorCode::NotPermitted.into())
    }

    async fn open_at(
        &mut self,
        fd: Resource<types::Descriptor>,
        _path_flags: types::PathFlags,
        path: String,
        oflags: OpenFlags,
        flags: DescriptorFlags,
    ) -> FsResult<Resource<types::Descriptor>> {
        let (mount, p) = self.at(&fd, &path)?;
        let kind = self.kind_of(mount, &p).await?;
        if kind.is_some() && oflags.contains(OpenFlags::EXCLUSIVE) {
            return Err(ErrorCode::Exist.into());
        }
        if kind == Some(EntryKind::Dir) || oflags.contains(OpenFlags::DIRECTORY) {
            match kind {
                Some(EntryKind::Dir) => {}
                Some(EntryKind::File) => return Err(ErrorCode::NotDirectory.into()),
                None => return Err(ErrorCode::NoEntry.into()),
            }
            if flags.contains(DescriptorFlags::WRITE) {
                return Err(ErrorCode::IsDirectory.into());
            }
            self.authorize(mount, "fs.list_dir", Capability::Read, &p).await?;
            return Ok(Resource::new_own(self.fs.insert(Node::Dir { mount, path: p })));
        }
        let create = oflags.contains(OpenFlags::CREATE);
        let truncate = oflags.contains(OpenFlags::TRUNCATE);
        let read = flags.contains(DescriptorFlags::READ);
        let write = flags.contains(DescriptorFlags::WRITE) || truncate;
        if kind.is_none() && !create {
            return Err(ErrorCode::NoEntry.into());
        }
        let mut data = Vec::new();
        if read {
            if kind.is_some() && !truncate {
                let v = self.request(mount, "fs.read", json!({ "path": p.as_str() })).await?;
                let r: FsReadResult = serde_json::from_value(v).map_err(|_| FsError::from(ErrorCode::Io))?;
                data = decode_content(&r.content, r.encoding).map_err(|_| FsError::from(ErrorCode::Io))?;
            } else {
                self.authorize(mount, "fs.read", Capability::Read, &p).await?;
            }
        }
        if write || (kind.is_none() && create) {
            let cap = if kind.is_some() { Capability::Update } else { Capability::Create };
            self.authorize(mount, "fs.write", cap, &p).await?;
            if kind.is_some() && !truncate && !read {
                // Writing into an existing file without reading it: start from its content.
                data = self.dispatcher(mount).files().read(&p).await.map_err(files_err)?;
            }
        }
        let dirty = kind.is_none() || truncate;
        let buf = Arc::new(Mutex::new(FileBuf { data, dirty }));
        Ok(Resource::new_own(self.fs.insert(Node::File { mount, path: p, read, write, buf })))
    }

    async fn readlink_at(&mut self, fd: Resource<types::Descriptor>, path: String) -> FsResult<String> {
        // Symbolic links are resolved by the host (and refused when they lead out); a guest
        // never sees one.
        self.at(&fd, &path)?;
        Err(ErrorCode::Invalid.into())
    }

    async fn remove_directory_at(&mut self, fd: Resource<types::Descriptor>, path: String) -> FsResult<()> {
        let (mount, p) = self.at(&fd, &path)?;
        match self.kind_of(mount, &p).await? {
            None => Err(ErrorCode::NoEntry.into()),
            Some(EntryKind::File) => Err(ErrorCode::NotDirectory.into()),
            Some(EntryKind::Dir) => Err(ErrorCode::Unsupported.into()),
        }
    }

    async fn rename_at(
        &mut self,
        fd: Resource<types::Descriptor>,
        old_path: String,
        new_fd: Resource<types::Descriptor>,
        new_path: String,
    ) -> FsResult<()> {
        let (mount, from) = self.at(&fd, &old_path)?;
        let (new_mount, to) = self.at(&new_fd, &new_path)?;
        if mount != new_mount {
            return Err(ErrorCode::CrossDevice.into());
        }
        self.request(mount, "fs.rename", json!({ "from": from.as_str(), "to": to.as_str() })).await?;
        Ok(())
    }

    async fn symlink_at(&mut self, _fd: Resource<types::Descriptor>, _src: String, _dest: String) -> FsResult<()> {
        Err(ErrorCode::NotPermitted.into())
    }

    async fn unlink_file_at(&mut self, fd: Resource<types::Descriptor>, path: String) -> FsResult<()> {
        let (mount, p) = self.at(&fd, &path)?;
        self.request(mount, "fs.delete", json!({ "path": p.as_str() })).await?;
        Ok(())
    }

    fn read_via_stream(&mut self, fd: Resource<types::Descriptor>, offset: u64) -> FsResult<Resource<DynInputStream>> {
        let (read, _, buf) = self.file(&fd)?;
        if !read {
            return Err(ErrorCode::BadDescriptor.into());
        }
        let bytes = {
            let b = buf.lock().map_err(|_| FsError::from(ErrorCode::Io))?;
            b.data[(offset as usize).min(b.data.len())..].to_vec()
        };
        let stream: DynInputStream = Box::new(MemoryInputPipe::new(bytes));
        Ok(self.table.push(stream)?)
    }

    fn write_via_stream(
        &mut self,
        fd: Resource<types::Descriptor>,
        offset: u64,
    ) -> FsResult<Resource<DynOutputStream>> {
        self.output(fd, Some(offset))
    }

    fn append_via_stream(&mut self, fd: Resource<types::Descriptor>) -> FsResult<Resource<DynOutputStream>> {
        self.output(fd, None)
    }

    async fn is_same_object(
        &mut self,
        a: Resource<types::Descriptor>,
        b: Resource<types::Descriptor>,
    ) -> wasmtime::Result<bool> {
        let key = |n: Option<&Node>| match n {
            Some(Node::Dir { mount, path }) | Some(Node::File { mount, path, .. }) => Some((*mount, path.clone())),
            None => None,
        };
        Ok(key(self.fs.nodes.get(&a.rep())) == key(self.fs.nodes.get(&b.rep())))
    }

    async fn metadata_hash(&mut self, fd: Resource<types::Descriptor>) -> FsResult<MetadataHashValue> {
        let (mount, path) = match self.node(&fd)? {
            Node::Dir { mount, path } | Node::File { mount, path, .. } => (*mount, path.clone()),
        };
        Ok(hash(mount, &path))
    }

    async fn metadata_hash_at(
        &mut self,
        fd: Resource<types::Descriptor>,
        _flags: types::PathFlags,
        path: String,
    ) -> FsResult<MetadataHashValue> {
        // Only an identity (libc asks it for every directory entry it lists): listing the
        // directory was the decision; the hash reveals nothing of the file.
        let (mount, p) = self.at(&fd, &path)?;
        if self.kind_of(mount, &p).await?.is_none() {
            return Err(ErrorCode::NoEntry.into());
        }
        Ok(hash(mount, &p))
    }

    fn drop(&mut self, fd: Resource<types::Descriptor>) -> wasmtime::Result<()> {
        self.fs.retire(fd.rep());
        Ok(())
    }
}

impl GuestFsView<'_> {
    fn output(&mut self, fd: Resource<types::Descriptor>, offset: Option<u64>) -> FsResult<Resource<DynOutputStream>> {
        let (_, write, buf) = self.file(&fd)?;
        if !write {
            return Err(ErrorCode::BadDescriptor.into());
        }
        let max = self.dispatcher(0).max_content();
        let stream: DynOutputStream = Box::new(BufferStream { buf, position: offset.map(|o| o as usize), max });
        Ok(self.table.push(stream)?)
    }
}

impl types::HostDirectoryEntryStream for GuestFsView<'_> {
    async fn read_directory_entry(
        &mut self,
        stream: Resource<types::DirectoryEntryStream>,
    ) -> FsResult<Option<DirectoryEntry>> {
        let listing = self.fs.listings.get_mut(&stream.rep()).ok_or_else(|| FsError::from(ErrorCode::BadDescriptor))?;
        Ok(listing.pop_front())
    }

    fn drop(&mut self, stream: Resource<types::DirectoryEntryStream>) -> wasmtime::Result<()> {
        self.fs.listings.remove(&stream.rep());
        Ok(())
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

fn write_at(b: &mut FileBuf, at: usize, bytes: &[u8], max: usize) -> Result<(), ()> {
    let end = at.checked_add(bytes.len()).ok_or(())?;
    if end > max {
        return Err(());
    }
    if b.data.len() < end {
        b.data.resize(end, 0);
    }
    b.data[at..end].copy_from_slice(bytes);
    b.dirty = true;
    Ok(())
}

/// A write (or append, `position: None`) stream into a file's buffer.
struct BufferStream {
    buf: Shared,
    position: Option<usize>,
    max: usize,
}

#[wasmtime_wasi::async_trait]
impl Pollable for BufferStream {
    async fn ready(&mut self) {}
}

#[wasmtime_wasi::async_trait]
impl OutputStream for BufferStream {
    fn write(&mut self, bytes: bytes::Bytes) -> StreamResult<()> {
        let mut b = self.buf.lock().map_err(|_| StreamError::trap("file buffer poisoned"))?;
        let at = self.position.unwrap_or(b.data.len());
        write_at(&mut b, at, &bytes, self.max).map_err(|()| {
            StreamError::LastOperationFailed(wasmtime::format_err!("the file would exceed the {}-byte limit", self.max))
        })?;
        if let Some(p) = &mut self.position {
            *p += bytes.len();
        }
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(64 * 1024)
    }
}
