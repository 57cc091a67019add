//! [`WasmEngine`]: the one engine of a `jp` process — component model, async, pooling
//! allocator, epoch interruption on a 10 ms ticker thread, the linker (WASI p2 minus its
//! filesystem, plus jp's own), components cached in memory by content hash as `InstancePre`
//! and on disk as serialized artifacts (`~/.cache/jp-host/wasm`, mapped with `deserialize_file`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use jp_core::runtime::{ComponentError, RuntimeError};
use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::{Component, ComponentExportIndex, HasSelf, InstancePre, Linker};

use super::fs::{GuestFsData, GuestFsView};
use super::imports::HostImports;
use super::{CallState, bindings, tool_bindings};

pub(super) struct Loaded {
    pub(super) pre: InstancePre<CallState>,
    /// The same, with the `run` export's index resolved once (not looked up by name per call).
    pub(super) tool: tool_bindings::ToolPre<CallState>,
    pub(super) describe: Option<ComponentExportIndex>,
    /// The `jp:tool/content` export, when the component has it: it is called instead of `run`.
    pub(super) content: Option<super::content::GuestIndices>,
    /// The `jp:tool/stateful` export, when the component has it: its tools may keep live sessions.
    pub(super) stateful: Option<super::stateful::GuestIndices>,
    /// Its answers to `stateful.actions(name)`, by tool name (asked once).
    pub(super) actions: Mutex<HashMap<String, Vec<jp_core::schema::StatefulAction>>>,
}

/// What identifies a component file's content without reading it: if none of these changed,
/// the content hash recorded for the path still holds.
#[derive(Clone, PartialEq, Eq)]
struct FileStamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl FileStamp {
    fn of(meta: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        Self {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

/// The process-wide engine, linker and component cache.
pub struct WasmEngine {
    pub(super) engine: Engine,
    linker: Linker<CallState>,
    /// Compiled and pre-linked components by SHA-256 of their bytes.
    components: Mutex<HashMap<[u8; 32], Arc<Loaded>>>,
    /// Component files by path: the stamp and hash of the content last loaded from there, so a
    /// call of an unchanged file costs one `stat`, not a read and a hash.
    files: Mutex<HashMap<PathBuf, (FileStamp, [u8; 32])>>,
    /// Builtin components (static bytes) by address: hashed once per process.
    builtins: Mutex<HashMap<usize, [u8; 32]>>,
    /// Where compiled components are kept between processes, and the engine-compatibility tag
    /// in their file names (a `jp` with other engine settings or another wasmtime never reads
    /// an artifact it did not write).
    disk: Option<(PathBuf, String)>,
}

impl std::fmt::Debug for WasmEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmEngine").finish_non_exhaustive()
    }
}

/// The engine settings of [`WasmEngine`]: component model, epoch interruption, and a pooling
/// allocator sized for concurrent calls (public so that benchmarks compare against raw wasmtime
/// with exactly these settings).
pub fn engine_config() -> wasmtime::Config {
    let mut config = wasmtime::Config::new();
    config.wasm_component_model(true);
    config.epoch_interruption(true);
    let mut pool = wasmtime::PoolingAllocationConfig::default();
    pool.total_component_instances(64)
        .total_core_instances(512)
        .total_memories(128)
        .total_tables(256)
        .total_stacks(64)
        .max_memory_size(1 << 30);
    config.allocation_strategy(wasmtime::InstanceAllocationStrategy::Pooling(pool));
    config
}

/// The on-disk cache of compiled components: `$XDG_CACHE_HOME/jp-host/wasm` or
/// `~/.cache/jp-host/wasm`.
pub fn cache_dir() -> Option<PathBuf> {
    crate::trust::process_cache_dir().map(|d| d.join("wasm"))
}

/// Why the engine cannot be built, in wasmtime's words.
fn engine_failed(e: impl std::fmt::Display) -> ComponentError {
    ComponentError::Engine(e.to_string())
}

impl WasmEngine {
    /// The engine of this process (built on first use).
    pub fn shared() -> Result<Arc<Self>, RuntimeError> {
        static ENGINE: OnceLock<Result<Arc<WasmEngine>, ComponentError>> = OnceLock::new();
        ENGINE.get_or_init(|| Self::new(cache_dir().as_deref()).map(Arc::new)).clone().map_err(RuntimeError::from)
    }

    /// A new engine; `cache` is where compiled artifacts are kept (none: compile every time).
    pub fn new(cache: Option<&Path>) -> Result<Self, ComponentError> {
        let engine = Engine::new(&engine_config()).map_err(engine_failed)?;
        let disk = cache.and_then(|dir| {
            use std::hash::{Hash, Hasher};
            use std::os::unix::fs::DirBuilderExt;
            // Private to the user: only this user's `jp` writes what it later maps as code.
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).ok()?;
            // A cache that someone else could write to is not used.
            let meta = std::fs::metadata(dir).ok()?;
            {
                use std::os::unix::fs::MetadataExt;
                if meta.uid() != rustix::process::getuid().as_raw() || meta.mode() & 0o022 != 0 {
                    eprintln!(
                        "warning: the compiled-component cache {} is not private to you (owner or group/other write); compiling every time",
                        dir.display()
                    );
                    return None;
                }
            }
            let mut h = std::collections::hash_map::DefaultHasher::new();
            engine.precompile_compatibility_hash().hash(&mut h);
            Some((dir.to_path_buf(), format!("{:016x}", h.finish())))
        });
        let mut linker: Linker<CallState> = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(engine_failed)?;
        // Files come from the dispatcher, not from a raw preopen: replace wasi:filesystem.
        linker.allow_shadowing(true);
        wasmtime_wasi::p2::bindings::filesystem::types::add_to_linker::<CallState, GuestFsData>(&mut linker, |s| {
            GuestFsView { fs: &mut s.fs, table: &mut s.table }
        })
        .map_err(engine_failed)?;
        wasmtime_wasi::p2::bindings::filesystem::preopens::add_to_linker::<CallState, GuestFsData>(&mut linker, |s| {
            GuestFsView { fs: &mut s.fs, table: &mut s.table }
        })
        .map_err(engine_failed)?;
        linker.allow_shadowing(false);
        bindings::Imports::add_to_linker::<CallState, HasSelf<HostImports>>(&mut linker, |s| &mut s.host)
            .map_err(engine_failed)?;
        let ticker = engine.weak();
        std::thread::Builder::new()
            .name("jp-wasm-epoch".into())
            .spawn(move || {
                while let Some(engine) = ticker.upgrade() {
                    engine.increment_epoch();
                    drop(engine);
                    std::thread::sleep(Duration::from_millis(10));
                }
            })
            .map_err(engine_failed)?;
        Ok(Self {
            engine,
            linker,
            components: Mutex::new(HashMap::new()),
            files: Mutex::new(HashMap::new()),
            builtins: Mutex::new(HashMap::new()),
            disk,
        })
    }

    /// The component for `key`: mapped from the on-disk cache when it was compiled by an
    /// earlier process (no decompression, no compilation), else compiled and stored there.
    fn component(&self, what: &str, key: &[u8; 32], bytes: &[u8]) -> Result<Component, RuntimeError> {
        let file = self.disk.as_ref().map(|(dir, tag)| {
            let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
            dir.join(format!("{hex}-{tag}.cwasm"))
        });
        if let Some(file) = &file
            && file.is_file()
        {
            // Mapped as code only when it is this user's own private file (jp-sandbox checks).
            if let Some(component) = crate::sandbox::artifact::load_own_component(&self.engine, file) {
                return Ok(component);
            }
            let _ = std::fs::remove_file(file);
        }
        let component = Component::new(&self.engine, bytes)
            .map_err(|e| ComponentError::Compile { what: what.to_string(), why: format!("{e:#}") })?;
        if let Some(file) = &file
            && let Ok(artifact) = component.serialize()
        {
            // Best effort and atomic: a temp file renamed into place, never a torn artifact.
            let tmp = file.with_extension(format!("tmp{}", std::process::id()));
            // Private to the user (0600): only such a file is mapped back (jp-sandbox's check).
            use std::os::unix::fs::OpenOptionsExt as _;
            let written = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp)
                .and_then(|mut f| std::io::Write::write_all(&mut f, &artifact));
            if written.is_ok() && std::fs::rename(&tmp, file).is_err() {
                let _ = std::fs::remove_file(&tmp);
            }
        }
        Ok(component)
    }

    fn cached(&self, key: &[u8; 32]) -> Option<Arc<Loaded>> {
        self.components.lock().ok().and_then(|c| c.get(key).cloned())
    }

    /// A builtin component: its bytes never change, so they are hashed once.
    pub(super) fn load_static(&self, what: &str, bytes: &'static [u8]) -> Result<Arc<Loaded>, RuntimeError> {
        let addr = bytes.as_ptr() as usize;
        let known = self.builtins.lock().ok().and_then(|b| b.get(&addr).copied());
        if let Some(l) = known.and_then(|key| self.cached(&key)) {
            return Ok(l);
        }
        let key: [u8; 32] = Sha256::digest(bytes).into();
        if let Ok(mut b) = self.builtins.lock() {
            b.insert(addr, key);
        }
        self.load_keyed(what, key, bytes)
    }

    /// A component file, keyed by path + content hash: re-read and re-hashed only when its
    /// metadata changed.
    pub(super) fn load_file(&self, path: &Path) -> Result<Arc<Loaded>, RuntimeError> {
        let not_readable = |e: std::io::Error| {
            let path = path.to_owned();
            RuntimeError::from(if e.kind() == std::io::ErrorKind::NotFound {
                ComponentError::NotFound { path }
            } else {
                ComponentError::Unreadable { path, why: e.to_string() }
            })
        };
        let stamp = FileStamp::of(&std::fs::metadata(path).map_err(not_readable)?);
        let known = self.files.lock().ok().and_then(|f| f.get(path).cloned());
        if let Some((seen, key)) = known
            && seen == stamp
            && let Some(l) = self.cached(&key)
        {
            return Ok(l);
        }
        let bytes = std::fs::read(path).map_err(not_readable)?;
        let key: [u8; 32] = Sha256::digest(&bytes).into();
        let loaded = self.load_keyed(&format!("'{}'", path.display()), key, &bytes)?;
        if let Ok(mut f) = self.files.lock() {
            f.insert(path.to_owned(), (stamp, key));
        }
        Ok(loaded)
    }

    /// Compile (or fetch from the caches) and pre-link a component.
    fn load(&self, what: &str, bytes: &[u8]) -> Result<Arc<Loaded>, RuntimeError> {
        self.load_keyed(what, Sha256::digest(bytes).into(), bytes)
    }

    fn load_keyed(&self, what: &str, key: [u8; 32], bytes: &[u8]) -> Result<Arc<Loaded>, RuntimeError> {
        if let Some(l) = self.cached(&key) {
            return Ok(l);
        }
        let component = self.component(what, &key, bytes)?;
        let describe = component
            .get_export_index(None, "jp:tool/describe@0.1.0")
            .and_then(|i| component.get_export_index(Some(&i), "schema"));
        let pre = self
            .linker
            .instantiate_pre(&component)
            .map_err(|e| ComponentError::Instantiate { what: what.to_string(), why: format!("{e:#}") })?;
        let tool = tool_bindings::ToolPre::new(pre.clone())
            .map_err(|e| ComponentError::NoRun { what: what.to_string(), why: format!("{e:#}") })?;
        // Probed like `describe`: present only when the component exports the interface.
        let content = component
            .get_export_index(None, "jp:tool/content@0.1.0")
            .map(|_| super::content::GuestIndices::new(&pre))
            .transpose()
            .map_err(|e| ComponentError::WrongTypes {
                what: what.to_string(),
                interface: "jp:tool/content",
                why: format!("{e:#}"),
            })?;
        let stateful = component
            .get_export_index(None, "jp:tool/stateful@0.1.0")
            .map(|_| super::stateful::GuestIndices::new(&pre))
            .transpose()
            .map_err(|e| ComponentError::WrongTypes {
                what: what.to_string(),
                interface: "jp:tool/stateful",
                why: format!("{e:#}"),
            })?;
        let loaded = Arc::new(Loaded { pre, tool, describe, content, stateful, actions: Mutex::new(HashMap::new()) });
        if let Ok(mut c) = self.components.lock() {
            c.insert(key, loaded.clone());
        }
        Ok(loaded)
    }

    /// Compile `bytes` now (warming the caches); the time this takes is the cold-load cost.
    pub fn preload(&self, bytes: &[u8]) -> Result<(), RuntimeError> {
        self.load("(preload)", bytes).map(|_| ())
    }
}
