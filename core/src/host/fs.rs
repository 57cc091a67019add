//! The `fs.*` methods: every path an operation touches is decided, and the operation then acts
//! on exactly the object that was decided.
//!
//! Two rules hold here for every backend:
//! - **Decide on the resolved object, then act on it.** A path is resolved once
//!   ([`ProjectFiles::resolve`]: symlinks followed beneath the root), the policy decides on the
//!   path as written *and* on what it resolves to, and the backend is handed the resolved path.
//!   Backends do not follow symlinks in the paths they are given, so a link swapped in after the
//!   decision makes the operation fail instead of redirecting it. Operations on an entry itself
//!   (delete, rename) resolve only its parent, so they act on a link, not on its target.
//! - **A subtree move is decided for every path it moves.** Renaming a directory moves each path
//!   beneath it out from under its own rule: each needs read + delete where it is and create
//!   where it lands, under its own most specific rule (sensitive paths ask). One refusal refuses
//!   the whole operation before anything moves.

use crate::files::{FilesError, GrepFilter, GrepQuery, match_bytes};
use crate::policy::{Capability, Decision, WorkspacePath};
use crate::protocol::{
    EntryKind, FsExistsResult, FsGrepParams, FsGrepResult, FsListDirResult, FsMetadataResult, FsReadResult,
    FsWriteParams, HostResponse, Id,
};

use super::{DispatchEvents, Dispatcher, HostError};

/// Combine the decisions on a path as written and on the places it really is: any refusal
/// refuses, then any inquiry asks.
fn strictest(decisions: Vec<Decision>) -> Decision {
    let mut out: Option<Decision> = None;
    for d in decisions {
        out = Some(match (out, d) {
            (None, d) => d,
            (Some(Decision::Deny(r)), _) => Decision::Deny(r),
            (_, Decision::Deny(r)) => Decision::Deny(r),
            (Some(Decision::Ask(r)), _) => Decision::Ask(r),
            (_, Decision::Ask(r)) => Decision::Ask(r),
            (Some(a), _) => a,
        });
    }
    out.unwrap_or_else(|| Decision::Deny("Access denied: nothing to decide".into()))
}

impl Dispatcher {
    pub(super) fn parse_path(&self, text: &str) -> Result<WorkspacePath, HostError> {
        WorkspacePath::parse(text).map_err(|e| HostError::AccessDenied(format!("Access denied: {e}")))
    }

    /// Where `path` really is (symlinks followed beneath the root); leading outside is a denial.
    async fn resolve(&self, path: &WorkspacePath) -> Result<WorkspacePath, HostError> {
        self.files.resolve(path).await.map_err(|e| match e {
            FilesError::InvalidPath(p) => HostError::AccessDenied(format!("Access denied: {p}")),
            other => HostError::from(other),
        })
    }

    /// The entry `path` names, with only its parent resolved: a symlink itself, not its target.
    async fn resolve_entry(&self, path: &WorkspacePath) -> Result<WorkspacePath, HostError> {
        match (path.parent(), path.file_name()) {
            (Some(parent), Some(name)) => {
                let parent = self.resolve(&parent).await?;
                parent.join(name).map_err(|e| HostError::AccessDenied(format!("Access denied: {e}")))
            }
            _ => Ok(path.clone()),
        }
    }

    /// Decide `caps` on `path` as written and on each of `also` (where it really is), as one
    /// request: one inquiry at most, one trace event.
    async fn decide(
        &self,
        method: &str,
        caps: &[Capability],
        path: &WorkspacePath,
        also: &[&WorkspacePath],
        id: &Id,
        events: &dyn DispatchEvents,
    ) -> Result<(), HostError> {
        let mut decisions = Vec::new();
        for cap in caps {
            decisions.push(self.policy.check_fs(*cap, path));
            for other in also.iter().filter(|o| **o != path) {
                decisions.push(match self.policy.check_fs(*cap, other) {
                    Decision::Deny(r) => {
                        Decision::Deny(format!("{r} ('{}' resolves to '{}')", path.display(), other.display()))
                    }
                    d => d,
                });
            }
        }
        self.enforce(method, path.display(), strictest(decisions), id, events).await
    }

    /// Check a filesystem capability on a path and on what it resolves to (symlinks); returns
    /// the resolved path, which is what the operation must then act on.
    pub(super) async fn authorize_fs(
        &self,
        method: &str,
        cap: Capability,
        path: &WorkspacePath,
        id: &Id,
        events: &dyn DispatchEvents,
    ) -> Result<WorkspacePath, HostError> {
        let resolved = self.resolve(path).await?;
        self.decide(method, &[cap], path, &[&resolved], id, events).await?;
        Ok(resolved)
    }

    /// Like [`authorize_fs`](Self::authorize_fs) for an operation on the entry itself (delete,
    /// rename): decided on the path, its target and the entry; returns the entry to act on.
    async fn authorize_entry(
        &self,
        method: &str,
        caps: &[Capability],
        path: &WorkspacePath,
        id: &Id,
        events: &dyn DispatchEvents,
    ) -> Result<WorkspacePath, HostError> {
        let resolved = self.resolve(path).await?;
        let entry = self.resolve_entry(path).await?;
        // One decision (and trace event) per capability, as the vectors record them.
        for cap in caps {
            self.decide(method, &[*cap], path, &[&resolved, &entry], id, events).await?;
        }
        Ok(entry)
    }

    pub(super) async fn fs_read(
        &self,
        path: &str,
        id: &Id,
        events: &dyn DispatchEvents,
    ) -> Result<HostResponse, HostError> {
        let path = self.parse_path(path)?;
        let path = self.authorize_fs("fs.read", Capability::Read, &path, id, events).await?;
        let meta = self.files.metadata(&path).await?;
        if meta.size as usize > self.max_content {
            return Err(self.too_large(&format!("'{}'", path.display()), meta.size as usize));
        }
        // Read no more than one byte over the cap, even if the file grew since its size was seen.
        let bytes = self.files.read_at_most(&path, self.max_content).await?;
        if bytes.len() > self.max_content {
            return Err(self.too_large(&format!("'{}'", path.display()), bytes.len()));
        }
        Ok(HostResponse::FsRead(FsReadResult { size: bytes.len() as u64, content: bytes }))
    }

    pub(super) async fn fs_write(
        &self,
        p: &FsWriteParams,
        id: &Id,
        events: &dyn DispatchEvents,
    ) -> Result<HostResponse, HostError> {
        let path = self.parse_path(&p.path)?;
        let bytes = &p.content;
        if bytes.len() > self.max_content {
            return Err(self.too_large("the content", bytes.len()));
        }
        // One resolution for the choice of capability, the decision and the write.
        let target = self.resolve(&path).await?;
        let cap = match self.files.metadata(&target).await {
            // Backends refuse to write over a directory; deciding "update" first keeps the
            // answer the same whatever the backend.
            Ok(_) => Capability::Update,
            Err(FilesError::NotFound(_) | FilesError::NotADirectory(_)) => Capability::Create,
            Err(e) => return Err(e.into()),
        };
        self.decide("fs.write", &[cap], &path, &[&target], id, events).await?;
        self.files.write(&target, bytes).await?;
        Ok(HostResponse::Done)
    }

    pub(super) async fn fs_exists(
        &self,
        path: &str,
        id: &Id,
        events: &dyn DispatchEvents,
    ) -> Result<HostResponse, HostError> {
        let path = self.parse_path(path)?;
        let path = self.authorize_fs("fs.exists", Capability::Read, &path, id, events).await?;
        Ok(HostResponse::FsExists(FsExistsResult { exists: self.files.exists(&path).await? }))
    }

    pub(super) async fn fs_list_dir(
        &self,
        path: &str,
        id: &Id,
        events: &dyn DispatchEvents,
    ) -> Result<HostResponse, HostError> {
        let path = self.parse_path(path)?;
        let path = self.authorize_fs("fs.list_dir", Capability::Read, &path, id, events).await?;
        Ok(HostResponse::FsListDir(FsListDirResult { entries: self.files.list_dir(&path).await? }))
    }

    pub(super) async fn fs_metadata(
        &self,
        path: &str,
        id: &Id,
        events: &dyn DispatchEvents,
    ) -> Result<HostResponse, HostError> {
        let path = self.parse_path(path)?;
        let path = self.authorize_fs("fs.metadata", Capability::Read, &path, id, events).await?;
        let m = self.files.metadata(&path).await?;
        Ok(HostResponse::FsMetadata(FsMetadataResult { kind: m.kind, size: m.size }))
    }

    pub(super) async fn fs_delete(
        &self,
        path: &str,
        id: &Id,
        events: &dyn DispatchEvents,
    ) -> Result<HostResponse, HostError> {
        let path = self.parse_path(path)?;
        let entry = self.authorize_entry("fs.delete", &[Capability::Delete], &path, id, events).await?;
        self.files.delete(&entry).await?;
        Ok(HostResponse::Done)
    }

    pub(super) async fn fs_rename(
        &self,
        from: &str,
        to: &str,
        id: &Id,
        events: &dyn DispatchEvents,
    ) -> Result<HostResponse, HostError> {
        let method = "fs.rename";
        let from = self.parse_path(from)?;
        let to = self.parse_path(to)?;
        // Moving reads and removes at `from` and creates at `to`.
        let from_entry =
            self.authorize_entry(method, &[Capability::Read, Capability::Delete], &from, id, events).await?;
        let to_entry = self.authorize_entry(method, &[Capability::Create], &to, id, events).await?;
        if from_entry.is_root() || to_entry.starts_with(&from_entry) {
            // The backend refuses these with its own message; nothing to walk.
            self.files.rename(&from_entry, &to_entry).await?;
            return Ok(HostResponse::Done);
        }
        self.authorize_subtree(&from_entry, &to_entry, id, events).await?;
        self.files.rename(&from_entry, &to_entry).await?;
        Ok(HostResponse::Done)
    }

    /// Decide every path below a directory that a rename moves: read + delete where it is,
    /// create where it lands, each under its own rule. Every entry as stored is seen
    /// ([`ProjectFiles::entries`]); a symlink inside moves as a link (its target stays where it
    /// is and is decided again whenever it is used), so it is decided as an entry and not walked
    /// into. Allowed paths are not traced one by one (a tree can hold
    /// thousands); a refusal or an inquiry is, naming the path.
    async fn authorize_subtree(
        &self,
        from: &WorkspacePath,
        to: &WorkspacePath,
        id: &Id,
        events: &dyn DispatchEvents,
    ) -> Result<(), HostError> {
        let is_dir = matches!(self.files.metadata(from).await, Ok(m) if m.kind == EntryKind::Dir);
        if !is_dir || self.resolve(from).await? != *from {
            return Ok(());
        }
        let mut stack = vec![from.clone()];
        while let Some(dir) = stack.pop() {
            for entry in self.files.entries(&dir).await? {
                let child = dir.join(&entry.path).map_err(|e| HostError::Internal(e.to_string()))?;
                let landing =
                    WorkspacePath::parse(&format!("{}{}", to.as_str(), &child.as_str()[from.as_str().len()..]))
                        .map_err(|e| HostError::AccessDenied(format!("Access denied: {e}")))?;
                for (cap, path) in
                    [(Capability::Read, &child), (Capability::Delete, &child), (Capability::Create, &landing)]
                {
                    let decision = match self.policy.check_fs(cap, path) {
                        Decision::Allow(_) => continue,
                        Decision::Deny(r) => Decision::Deny(format!(
                            "{r} (renaming '{}' to '{}' would move '{}' to '{}')",
                            from.display(),
                            to.display(),
                            child.display(),
                            landing.display()
                        )),
                        Decision::Ask(r) => Decision::Ask(format!(
                            "{r} (renaming '{}' to '{}' moves '{}' to '{}')",
                            from.display(),
                            to.display(),
                            child.display(),
                            landing.display()
                        )),
                    };
                    self.enforce("fs.rename", path.display(), decision, id, events).await?;
                }
                if entry.kind == EntryKind::Dir && self.resolve(&child).await? == child {
                    stack.push(child);
                }
            }
        }
        Ok(())
    }

    pub(super) async fn fs_grep(
        &self,
        p: &FsGrepParams,
        id: &Id,
        events: &dyn DispatchEvents,
    ) -> Result<HostResponse, HostError> {
        let method = "fs.grep";
        let paths = p.paths.clone().unwrap_or_default();
        let mut query =
            GrepQuery::new(&p.pattern, &paths, p.extensions.as_deref().unwrap_or(&[]), p.context.unwrap_or(0))
                .map_err(|e| match e {
                    FilesError::InvalidPath(pe) => HostError::AccessDenied(format!("Access denied: {pe}")),
                    other => HostError::InvalidParams(format!("Invalid params for fs.grep: {other}")),
                })?;
        // Search where each root really is; report matches under the root as the tool named it.
        let mut renames = Vec::new();
        for root in &mut query.paths {
            let resolved = self.authorize_fs(method, Capability::Read, root, id, events).await?;
            if resolved != *root {
                renames.push((resolved.clone(), root.clone()));
                *root = resolved;
            }
        }
        if query.paths.is_empty() {
            self.authorize_fs(method, Capability::Read, &WorkspacePath::root(), id, events).await?;
        }
        query.max_bytes = self.max_content;
        // Files the policy does not let this tool read are not even searched, so neither the
        // matches nor the `truncated` flag can tell anything about their content.
        let policy = self.policy.clone();
        query.filter = Some(GrepFilter::new(move |p| policy.check_fs(Capability::Read, p).is_allow()));
        let matches = self.files.grep(&query).await?;
        // The backend stops once its matches pass the cap (keeping the file that crossed it).
        let mut truncated = matches.iter().map(match_bytes).sum::<usize>() > self.max_content;
        // A rule may deny part of an allowed tree (`secrets/` under `.`), and sensitive files
        // ask: neither is searched without a decision of its own.
        let mut kept = Vec::with_capacity(matches.len());
        let mut total = 0usize;
        for mut m in matches {
            let Ok(found) = WorkspacePath::parse(&m.path) else { continue };
            let shown = renames
                .iter()
                .find(|(resolved, _)| found.starts_with(resolved))
                .and_then(|(resolved, named)| {
                    let rest = &found.as_str()[resolved.as_str().len()..];
                    WorkspacePath::parse(&format!("{}{rest}", named.as_str())).ok()
                })
                .unwrap_or_else(|| found.clone());
            let Ok(resolved) = self.resolve(&found).await else { continue };
            if ![&shown, &found, &resolved].iter().all(|p| self.policy.check_fs(Capability::Read, p).is_allow()) {
                continue;
            }
            total += match_bytes(&m);
            if total > self.max_content {
                truncated = true;
                break;
            }
            m.path = shown.as_str().to_owned();
            kept.push(m);
        }
        Ok(HostResponse::FsGrep(FsGrepResult { matches: kept, truncated }))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use futures_executor::block_on;
    use serde_json::json;

    use crate::files::InMemoryProjectFiles;
    use crate::host::{Dispatcher, NoEvents};
    use crate::policy::AccessPolicy;
    use crate::protocol::{FsGrepResult, HostRequest, HostResponse, Id};

    fn grep(d: &Dispatcher, pattern: &str) -> FsGrepResult {
        let req = HostRequest::parse("fs.grep", json!({ "pattern": pattern })).unwrap();
        match block_on(d.handle(&req, &Id::Number(1), &NoEvents)).unwrap() {
            HostResponse::FsGrep(r) => r,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn grep_match_paths_are_scrubbed_on_the_typed_path_too() {
        let files = Arc::new(InMemoryProjectFiles::with_files([("notes-s3cr3t-name.txt", "needle")]).unwrap());
        let d = Dispatcher::builder("t", Arc::new(AccessPolicy::vfs_default()), files)
            .secrets(vec!["s3cr3t-name".into()])
            .build();
        let r = grep(&d, "needle");
        assert_eq!(r.matches.len(), 1);
        assert_eq!(r.matches[0].path, "notes-[REDACTED].txt");
    }

    #[test]
    fn denied_files_are_not_searched_so_the_answer_says_nothing_about_them() {
        // A filler just under the cap in an allowed file, and a denied file that matches (or
        // not): whether the search was cut, and what came back, must not depend on it.
        let access: crate::policy::AccessConfig =
            toml::from_str(r#"filesystem = [{ path = ".", allow = ["read"] }, { path = "secret", allow = [] }]"#)
                .unwrap();
        let policy = Arc::new(AccessPolicy::from_config(None, Some(&access)).unwrap());
        let answer = |secret: &str| {
            let filler = format!("FILLER {}\n", "x".repeat(3900));
            let files = InMemoryProjectFiles::with_files([("a.txt", filler.as_str()), ("secret/key.txt", secret)]);
            let d = Dispatcher::builder("t", policy.clone(), Arc::new(files.unwrap())).max_content(4096).build();
            grep(&d, "FILLER|^SECRETPREFIX")
        };
        let matching = answer(&format!("SECRETPREFIX {}\n", "y".repeat(500)));
        let not_matching = answer("nothing here\n");
        assert_eq!(matching, not_matching);
        assert!(!matching.truncated && matching.matches.len() == 1);
    }

    #[test]
    fn grep_stops_at_the_size_cap_and_says_so() {
        let line = "needle ".repeat(20);
        let many: Vec<(String, String)> = (0..200).map(|i| (format!("f{i:03}.txt"), format!("{line}\n"))).collect();
        let files =
            Arc::new(InMemoryProjectFiles::with_files(many.iter().map(|(p, c)| (p.as_str(), c.as_str()))).unwrap());
        let d = Dispatcher::builder("t", Arc::new(AccessPolicy::vfs_default()), files).max_content(4096).build();
        let r = grep(&d, "needle");
        assert!(r.truncated, "the result says it was cut");
        let total: usize = r.matches.iter().map(crate::files::match_bytes).sum();
        assert!(total <= 4096 && !r.matches.is_empty(), "{total} bytes in {} files", r.matches.len());
        assert!(r.matches.len() < 200);
        // Under the cap nothing is cut and nothing is marked.
        let small = grep(&d, "^never$");
        assert!(!small.truncated && small.matches.is_empty());
    }
}
