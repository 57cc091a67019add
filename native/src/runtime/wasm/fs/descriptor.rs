//! `wasi:filesystem` descriptors of a guest: the [`types::HostDescriptor`] operations.

use std::sync::{Arc, Mutex};

use jp_core::policy::Capability;
use jp_core::protocol::{EntryKind, FsRenameParams, HostRequest, HostResponse, PathParams};
use wasmtime::component::Resource;
use wasmtime_wasi::p2::bindings::filesystem::types;
use wasmtime_wasi::p2::{DynInputStream, DynOutputStream, FsError, FsResult};

use super::buffer::{BufferInput, BufferStream, FileBuf, WriteError, write_at};
use super::{GuestFsView, Node, files_err, hash};
use types::{DescriptorFlags, DescriptorStat, DescriptorType, DirectoryEntry, ErrorCode, MetadataHashValue, OpenFlags};

/// The params naming one workspace path.
fn at(path: &jp_core::policy::WorkspacePath) -> PathParams {
    PathParams { path: path.as_str().to_owned() }
}

fn memory(_: super::buffer::OverBudget) -> FsError {
    ErrorCode::InsufficientMemory.into()
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
        b.resize(size as usize, max as usize).map_err(memory)
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
        write_at(&mut b, offset as usize, &bytes, max).map_err(|e| match e {
            WriteError::TooLarge => FsError::from(ErrorCode::FileTooLarge),
            WriteError::Memory(o) => memory(o),
        })?;
        Ok(bytes.len() as u64)
    }

    async fn read_directory(
        &mut self,
        fd: Resource<types::Descriptor>,
    ) -> FsResult<Resource<types::DirectoryEntryStream>> {
        let (mount, path) = self.dir(&fd)?;
        self.fs.room()?;
        let HostResponse::FsListDir(listing) = self.request(mount, HostRequest::FsListDir(at(&path))).await? else {
            return Err(ErrorCode::Io.into());
        };
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
        if self.kind_of(mount, &p, &[Capability::Create]).await?.is_some() {
            return Err(ErrorCode::Exist.into());
        }
        let target = self.authorize(mount, "fs.create_dir", Capability::Create, &p).await?;
        self.dispatcher(mount).files().create_dir(&target).await.map_err(files_err)
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
        let HostResponse::FsMetadata(m) = self.request(mount, HostRequest::FsMetadata(at(&p))).await? else {
            return Err(ErrorCode::Io.into());
        };
        Ok(Self::stat_of(m.kind, m.size))
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
        let create = oflags.contains(OpenFlags::CREATE);
        let truncate = oflags.contains(OpenFlags::TRUNCATE);
        let read = flags.contains(DescriptorFlags::READ);
        let write = flags.contains(DescriptorFlags::WRITE) || truncate;
        let mut caps = vec![Capability::Read];
        if write || create {
            caps.extend([Capability::Create, Capability::Update]);
        }
        let kind = self.kind_of(mount, &p, &caps).await?;
        self.fs.room()?;
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
            // Paths below it are joined to the resolved directory that was decided.
            let dir = self.authorize(mount, "fs.list_dir", Capability::Read, &p).await?;
            return Ok(Resource::new_own(self.fs.insert(Node::Dir { mount, path: dir })));
        }
        if kind.is_none() && !create {
            return Err(ErrorCode::NoEntry.into());
        }
        let mut data = Vec::new();
        let mut target = p.clone();
        if read {
            if kind.is_some() && !truncate {
                let read = HostRequest::FsRead(jp_core::protocol::FsReadParams { path: p.as_str().to_owned() });
                let HostResponse::FsRead(r) = self.request(mount, read).await? else {
                    return Err(ErrorCode::Io.into());
                };
                data = r.content;
            } else {
                target = self.authorize(mount, "fs.read", Capability::Read, &p).await?;
            }
        }
        if write || (kind.is_none() && create) {
            let cap = if kind.is_some() { Capability::Update } else { Capability::Create };
            // The buffer is committed to the path that was decided, not the one spelled.
            target = self.authorize(mount, "fs.write", cap, &p).await?;
            if kind.is_some() && !truncate && !read {
                // Writing into an existing file without reading it: start from its content (the
                // guest cannot read it back; it is charged to the budget like any buffer).
                // Never more than the size cap (a huge or growing file in the workspace).
                let d = self.dispatcher(mount);
                data = d.files().read_at_most(&target, d.max_content()).await.map_err(files_err)?;
                if data.len() > d.max_content() {
                    return Err(ErrorCode::FileTooLarge.into());
                }
            }
        }
        let dirty = kind.is_none() || truncate;
        let buf = FileBuf::new(&self.fs.budget, data, dirty).map_err(memory)?;
        let buf = Arc::new(Mutex::new(buf));
        Ok(Resource::new_own(self.fs.insert(Node::File { mount, path: target, read, write, buf })))
    }

    async fn readlink_at(&mut self, fd: Resource<types::Descriptor>, path: String) -> FsResult<String> {
        // Symbolic links are resolved by the host (and refused when they lead out); a guest
        // never sees one.
        self.at(&fd, &path)?;
        Err(ErrorCode::Invalid.into())
    }

    async fn remove_directory_at(&mut self, fd: Resource<types::Descriptor>, path: String) -> FsResult<()> {
        let (mount, p) = self.at(&fd, &path)?;
        match self.kind_of(mount, &p, &[Capability::Delete]).await? {
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
        let rename = FsRenameParams { from: from.as_str().to_owned(), to: to.as_str().to_owned() };
        self.request(mount, HostRequest::FsRename(rename)).await?;
        Ok(())
    }

    async fn symlink_at(&mut self, _fd: Resource<types::Descriptor>, _src: String, _dest: String) -> FsResult<()> {
        Err(ErrorCode::NotPermitted.into())
    }

    async fn unlink_file_at(&mut self, fd: Resource<types::Descriptor>, path: String) -> FsResult<()> {
        let (mount, p) = self.at(&fd, &path)?;
        self.request(mount, HostRequest::FsDelete(at(&p))).await?;
        Ok(())
    }

    fn read_via_stream(&mut self, fd: Resource<types::Descriptor>, offset: u64) -> FsResult<Resource<DynInputStream>> {
        let (read, _, buf) = self.file(&fd)?;
        if !read {
            return Err(ErrorCode::BadDescriptor.into());
        }
        let stream: DynInputStream = Box::new(BufferInput { buf, position: offset as usize });
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
        if self.kind_of(mount, &p, &[Capability::Read]).await?.is_none() {
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
