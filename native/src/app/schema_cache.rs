//! D06 answers cached on disk, so a self-describing tool is asked once per change rather than
//! once per `jp` run: `$XDG_CACHE_HOME/jp-host/schemas` (or `~/.cache/…`), private to the user,
//! one file per key. The key hashes the runtime, the tool's whole configuration entry and the
//! path, size and modification time of every file the tool is made of (the program, its
//! scripts, the component), so editing any of them asks again. Only answers that parsed are
//! stored; files are written atomically.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The cache directory, when it exists (or can be made) and is private to this user.
pub(super) fn dir() -> Option<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let dir = crate::trust::process_cache_dir()?.join("schemas");
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&dir).ok()?;
    let meta = std::fs::metadata(&dir).ok()?;
    // One that someone else could write to is not used: its answers would be theirs.
    (meta.uid() == rustix::process::getuid().as_raw() && meta.mode() & 0o022 == 0).then_some(dir)
}

/// The key of a tool's answer: its runtime, its configuration entry and the files it is made of.
pub(super) fn key(runtime: &str, config_entry: &str, files: &[PathBuf]) -> String {
    use std::os::unix::fs::MetadataExt;
    let mut h = Sha256::new();
    h.update(runtime.as_bytes());
    h.update([0]);
    h.update(config_entry.as_bytes());
    for f in files {
        h.update([0]);
        h.update(f.as_os_str().as_encoded_bytes());
        match std::fs::metadata(f) {
            Ok(m) => h.update(format!(":{}:{}:{}", m.len(), m.mtime(), m.mtime_nsec())),
            Err(_) => h.update(":missing"),
        }
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// A stored answer.
pub(super) fn load(dir: &Path, key: &str) -> Option<String> {
    std::fs::read_to_string(dir.join(format!("{key}.json"))).ok()
}

/// Store an answer (atomically; failures only cost asking again next time).
pub(super) fn store(dir: &Path, key: &str, text: &str) {
    let Ok(mut tmp) = tempfile::NamedTempFile::new_in(dir) else { return };
    if std::io::Write::write_all(&mut tmp, text.as_bytes()).is_ok() {
        let _ = tmp.persist(dir.join(format!("{key}.json")));
    }
}
