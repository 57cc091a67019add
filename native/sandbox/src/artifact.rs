//! Mapping a compiled component that jp wrote itself: wasmtime's `Component::deserialize_file`
//! maps the file as code, so it is `unsafe` — the file must be one `Component::serialize` made.
//! [`load_own_component`] checks what it can before trusting it: a regular file owned by this
//! user, in a directory owned by this user, neither writable by anyone else (jp's cache directory
//! is made 0700). wasmtime also checks the artifact's header against the engine.

use std::os::unix::fs::MetadataExt as _;
use std::path::Path;

use wasmtime::Engine;
use wasmtime::component::Component;

/// Group- and other-write bits.
const WRITABLE_BY_OTHERS: u32 = 0o022;

/// Whether `path` is a regular file (or, `dir`, a directory) of this user that nobody else can
/// write.
fn owned_and_private(path: &Path, dir: bool) -> bool {
    let me = rustix::process::geteuid().as_raw();
    std::fs::symlink_metadata(path).is_ok_and(|m| {
        let kind = if dir { m.is_dir() } else { m.is_file() };
        kind && m.uid() == me && m.mode() & WRITABLE_BY_OTHERS == 0
    })
}

/// The component serialized in `file` by this program, or `None` when the file is not one only
/// this user could have written (or wasmtime refuses it: another engine, a torn file).
pub fn load_own_component(engine: &Engine, file: &Path) -> Option<Component> {
    let dir = file.parent()?;
    if !owned_and_private(dir, true) || !owned_and_private(file, false) {
        return None;
    }
    // SAFETY: `deserialize_file` maps the file as code. The file is one this program wrote with
    // `Component::serialize` (named by the content hash and the engine's compatibility tag) in
    // the user's own private cache directory, checked above; wasmtime checks the header against
    // the engine and refuses a mismatch.
    #[allow(unsafe_code)]
    let loaded = unsafe { Component::deserialize_file(engine, file) };
    loaded.ok()
}
