//! What a kernel sandbox must grant a process that touches the workspace directly — a stdio
//! tool ([`AccessPolicy::workspace_grant`]) or a `process.run` child
//! ([`AccessPolicy::process_grant`]) — and the policies it cannot hold, refused with the rule.

use super::{AccessPolicy, Capability, Caps, WorkspacePath};

/// Why a policy cannot be held by a kernel sandbox (a direct-access tool, an MCP server, a
/// `process.run` child): the sandbox grants whole trees and whole origins. Each names the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GrantError {
    /// A filesystem rule below the root (a direct-access tool gets the whole workspace or none).
    #[error("its filesystem rule for '{path}' ({origin}) is finer than the whole workspace")]
    FinerThanWorkspace {
        /// The rule's path.
        path: String,
        /// Where the rule is written.
        origin: String,
    },
    /// A rule granting part of write, or write without read (only nothing, read, or read and
    /// write of a whole tree can be held).
    #[error(
        "its filesystem rule for '{path}' ({origin}) grants {granted}, which the kernel cannot hold a process to (only nothing, read, or read and write of a whole tree)"
    )]
    NotWholeTree {
        /// The rule's path.
        path: String,
        /// Where the rule is written.
        origin: String,
        /// What it grants, in words.
        granted: String,
    },
    /// A rule below the root taking away access the rest of the workspace has.
    #[error(
        "its filesystem rule for '{path}' ({origin}) takes away access that the rest of the workspace has, which the kernel cannot hold a process to"
    )]
    TakesAway {
        /// The rule's path.
        path: String,
        /// Where the rule is written.
        origin: String,
    },
    /// A network rule finer than its origin (a path, methods, headers): a tunnel is decided per
    /// host and port only. The reason `check_connect` gives.
    #[error("{0}")]
    FinerThanOrigin(String),
}

/// How much of the workspace an OS sandbox grants a direct-access tool
/// ([`AccessPolicy::workspace_grant`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkspaceGrant {
    /// Read files and list directories.
    pub read: bool,
    /// Create, change and delete files.
    pub write: bool,
}

/// What an OS sandbox grants a process started by `process.run` ([`AccessPolicy::process_grant`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessGrant {
    /// The workspace as a whole.
    pub workspace: WorkspaceGrant,
    /// Whether the process reaches the network — through jp's egress proxy, each connection
    /// decided per host and port ([`AccessPolicy::network_grant`]).
    pub network: bool,
}

/// What a policy lets a tool do at most, for the hints an agent sees (MCP tool annotations).
/// Conservative: anything an inquiry could allow counts as possible.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PolicyHints {
    /// It may create, change or delete files (directly or through a command it may run).
    pub writes: bool,
    /// It may overwrite or delete existing files.
    pub destructive: bool,
    /// It may reach the network.
    pub network: bool,
    /// It may run programs (`process.run`).
    pub commands: bool,
}

impl AccessPolicy {
    /// What this policy lets a tool do at most (see [`PolicyHints`]).
    pub fn hints(&self) -> PolicyHints {
        if let Some(ceiling) = &self.ceiling {
            // Bounded: it may do something only if both policies may.
            let (own, theirs) = (self.unbounded().hints(), ceiling.hints());
            return PolicyHints {
                writes: own.writes && theirs.writes,
                destructive: own.destructive && theirs.destructive,
                network: own.network && theirs.network,
                commands: own.commands && theirs.commands,
            };
        }
        // Paths no rule covers are asked about; with a rule for the root, every path is covered.
        let asks_fs = self.fs_fallback == super::Fallback::Ask && !self.fs_rules.iter().any(|r| r.path.is_root());
        let any = |c: Capability| asks_fs || self.fs_rules.iter().any(|r| r.caps.contains(c));
        let commands = self.commands_fallback == super::Fallback::Ask || !self.commands.is_empty();
        let command_writes = commands && self.process_grant().is_ok_and(|g| g.workspace.write);
        let network = self.net_fallback == super::Fallback::Ask || self.net_rules.iter().any(|r| r.allow);
        PolicyHints {
            writes: any(Capability::Create) || any(Capability::Update) || any(Capability::Delete) || command_writes,
            destructive: any(Capability::Update) || any(Capability::Delete) || command_writes,
            network: network || (commands && self.process_grant().is_ok_and(|g| g.network)),
            commands,
        }
    }

    /// Whether a process that reaches the network itself (a stdio tool, an MCP server, a
    /// `process.run` child) gets it: `Ok(true)` when the policy allows some URL — its traffic
    /// then leaves through jp's egress proxy, each connection decided by
    /// [`check_connect`](Self::check_connect) —, `Ok(false)` when it allows none. A network rule
    /// finer than its origin (a path, methods, path patterns, headers) cannot hold a tunnel, so
    /// such a policy is an error with `check_connect`'s reason (fail closed, before anything
    /// starts).
    pub fn network_grant(&self) -> Result<bool, GrantError> {
        if let Some(ceiling) = &self.ceiling {
            let (own, theirs) = (self.unbounded().network_grant()?, ceiling.network_grant()?);
            return Ok(own && theirs);
        }
        if !self.net_rules.iter().any(|r| r.allow) {
            return Ok(false);
        }
        let held_per_request =
            |r: &&super::NetRule| r.prefix.port.is_some_and(|port| self.inspected(&r.prefix.host, port));
        if let Some(rule) = self.net_rules.iter().find(|r| r.finer_than_origin() && !held_per_request(r)) {
            let port = rule.prefix.port.unwrap_or(0);
            return Err(GrantError::FinerThanOrigin(match self.check_connect(&rule.prefix.host, port) {
                super::Decision::Deny(why) => why,
                // (check_connect refuses every connection a finer rule is on; never reached.)
                other => other.reason().to_owned(),
            }));
        }
        Ok(true)
    }

    /// What an OS sandbox must grant a tool that touches the workspace directly (a legacy stdio
    /// tool): the workspace as a whole, read-only or read-write. Kernel sandboxes grant whole
    /// directory trees, so a policy with rules below the root cannot be enforced and is an
    /// error naming the rule. Sensitive-path inquiries cannot be asked for direct file access.
    /// (Its network is [`network_grant`](Self::network_grant).)
    pub fn workspace_grant(&self) -> Result<WorkspaceGrant, GrantError> {
        if let Some(ceiling) = &self.ceiling {
            let (own, theirs) = (self.unbounded().workspace_grant()?, ceiling.workspace_grant()?);
            return Ok(WorkspaceGrant { read: own.read && theirs.read, write: own.write && theirs.write });
        }
        let caps = self.fs_rules.iter().rev().find(|r| r.path.is_root()).map_or(Caps::default(), |r| r.caps);
        // A rule below the root cannot be held — but for a sensitive path that grants what the
        // rest of the workspace has: that is how a direct-access tool is given one, which its
        // mount view otherwise hides ([`sensitive_granted`](Self::sensitive_granted)).
        let rw = Caps::READ_WRITE;
        let unveils = |r: &super::FsRule| {
            self.is_sensitive(&r.path) && (r.caps.0 & rw.0) == (caps.0 & rw.0) && r.caps.contains(Capability::Read)
        };
        if let Some(rule) = self.fs_rules.iter().find(|r| !r.path.is_root() && !unveils(r)) {
            return Err(GrantError::FinerThanWorkspace {
                path: rule.path.display().to_owned(),
                origin: rule.origin.clone(),
            });
        }
        let write = [Capability::Create, Capability::Update, Capability::Delete].into_iter().any(|c| caps.contains(c));
        Ok(WorkspaceGrant { read: caps.contains(Capability::Read) || write, write })
    }

    /// Whether a process that touches files directly (a stdio tool, an MCP server, a
    /// `process.run` child) may see the sensitive `path`: only when the most specific
    /// filesystem rule covering it is one below the root that grants read — a rule the user
    /// wrote for it (e.g. `{ path = ".env", allow = ["read"] }`). Otherwise the process's mount
    /// view hides it: nobody can be asked on its behalf. Bounded by the ceiling, if any.
    pub fn sensitive_granted(&self, path: &WorkspacePath) -> bool {
        let key = path.nfc();
        let best = self.fs_rules.iter().filter(|r| key.starts_with(&r.path)).max_by_key(|r| r.path.depth());
        best.is_some_and(|r| !r.path.is_root() && r.caps.contains(Capability::Read))
            && self.ceiling.as_ref().is_none_or(|c| c.sensitive_granted(path))
    }

    /// What an OS sandbox must grant a process started by `process.run` on this tool's behalf:
    /// the workspace as a whole (read-only or read-write, from the rule for the root) and the
    /// network through jp's egress proxy when any URL is allowed ([`network_grant`](Self::network_grant):
    /// a rule finer than its origin is an error). A process
    /// touches files directly, so a rule below the root that takes away a capability the root
    /// grants (e.g. `secrets` with no access under a readable workspace) cannot be held by the
    /// kernel and is an error naming the rule. Rules below the root that grant *more* are not
    /// extended to the process (narrower is safe). Sensitive-path inquiries cannot be asked for
    /// direct access.
    pub fn process_grant(&self) -> Result<ProcessGrant, GrantError> {
        if let Some(ceiling) = &self.ceiling {
            let (own, theirs) = (self.unbounded().process_grant()?, ceiling.process_grant()?);
            return Ok(ProcessGrant {
                workspace: WorkspaceGrant {
                    read: own.workspace.read && theirs.workspace.read,
                    write: own.workspace.write && theirs.workspace.write,
                },
                network: own.network && theirs.network,
            });
        }
        // The kernel grant is the workspace read-only or read-write as a whole, so each rule
        // must be exactly nothing, read, or read + create + update + delete: a write-only or
        // delete-only rule cannot be held (granting it would also grant read and the rest).
        let rw = Caps::READ_WRITE;
        let expressible = |caps: Caps, origin: &str, path: &WorkspacePath| -> Result<WorkspaceGrant, GrantError> {
            let held = Caps(caps.0 & rw.0);
            if held == Caps::default() || held == Caps::READ || held == rw {
                Ok(WorkspaceGrant { read: held.contains(Capability::Read), write: held == rw })
            } else {
                Err(GrantError::NotWholeTree {
                    path: path.display().to_owned(),
                    origin: origin.to_owned(),
                    granted: held.describe(),
                })
            }
        };
        let root = self.fs_rules.iter().rev().find(|r| r.path.is_root());
        let workspace = match root {
            Some(r) => expressible(r.caps, &r.origin, &r.path)?,
            None => WorkspaceGrant { read: false, write: false },
        };
        for rule in self.fs_rules.iter().filter(|r| !r.path.is_root()) {
            // A rule that grants more than the root is not extended to the process (narrower
            // is safe); one that grants less, or something the kernel cannot express, is refused.
            let takes_away = Capability::ALL
                .into_iter()
                .filter(|c| *c != Capability::Execute)
                .any(|c| root.is_some_and(|r| r.caps.contains(c)) && !rule.caps.contains(c));
            if takes_away {
                return Err(GrantError::TakesAway {
                    path: rule.path.display().to_owned(),
                    origin: rule.origin.clone(),
                });
            }
        }
        Ok(ProcessGrant { workspace, network: self.network_grant()? })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::AccessConfig;

    fn access(toml_text: &str) -> AccessPolicy {
        let cfg: AccessConfig = toml::from_str(toml_text).unwrap();
        AccessPolicy::from_config(None, Some(&cfg)).unwrap()
    }

    #[test]
    fn a_rule_of_its_own_grants_a_sensitive_path_to_a_direct_access_tool() {
        let p = |fs: &str| access(&format!("filesystem = {fs}"));
        let path = |s: &str| WorkspacePath::parse(s).unwrap();
        let rw = r#"{ path = ".", allow = ["read", "write"] }"#;
        // Without a rule of its own, hidden (the workspace's rule does not name it).
        let plain = p(&format!("[{rw}]"));
        assert!(!plain.sensitive_granted(&path(".env")));
        assert_eq!(plain.workspace_grant(), Ok(WorkspaceGrant { read: true, write: true }));
        // Named with what the workspace has: granted, and still a whole-workspace grant.
        let named = p(&format!(r#"[{rw}, {{ path = ".env", allow = ["read", "write"] }}]"#));
        assert!(named.sensitive_granted(&path(".env")));
        assert!(!named.sensitive_granted(&path("deploy/.env")), "another .env is not named");
        assert_eq!(named.workspace_grant(), Ok(WorkspaceGrant { read: true, write: true }));
        // A directory rule grants what is beneath it.
        let dir = p(&format!(r#"[{rw}, {{ path = "config/.env", allow = ["read", "write"] }}]"#));
        assert!(dir.sensitive_granted(&path("config/.env/db")));
        // A rule that takes access away, or names a path that is not sensitive, stays finer than
        // the workspace for a stdio tool; one that denies read grants nothing.
        let less = p(&format!(r#"[{rw}, {{ path = ".env", allow = ["read"] }}]"#));
        assert!(matches!(less.workspace_grant(), Err(GrantError::FinerThanWorkspace { .. })));
        let other = p(&format!(r#"[{rw}, {{ path = "src", allow = ["read", "write"] }}]"#));
        assert!(matches!(other.workspace_grant(), Err(GrantError::FinerThanWorkspace { .. })));
        let none = p(&format!(r#"[{rw}, {{ path = ".env", allow = [] }}]"#));
        assert!(!none.sensitive_granted(&path(".env")));
    }

    #[test]
    fn process_grant_refuses_what_the_kernel_cannot_hold() {
        let grant = |fs: &str| {
            let ac: AccessConfig = toml::from_str(&format!("filesystem = {fs}")).unwrap();
            AccessPolicy::from_config(None, Some(&ac)).unwrap().process_grant()
        };
        let rw = |read, write| Ok(ProcessGrant { workspace: WorkspaceGrant { read, write }, network: false });
        assert_eq!(grant(r#"[{ path = ".", allow = ["read", "write"] }]"#), rw(true, true));
        assert_eq!(
            grant(r#"[{ path = ".", allow = ["read"] }, { path = "out", allow = ["read", "write"] }]"#),
            rw(true, false)
        );
        assert_eq!(grant("[]"), rw(false, false));
        // A write-only drop folder or a delete-only rule under a read-write workspace takes read away.
        for below in [r#"["create"]"#, r#"["delete"]"#, "[]", r#"["read"]"#] {
            let g = grant(&format!(
                r#"[{{ path = ".", allow = ["read", "write"] }}, {{ path = "secrets", allow = {below} }}]"#
            ));
            assert!(
                g.as_ref().is_err_and(|e| matches!(e, GrantError::TakesAway { path, .. } | GrantError::NotWholeTree { path, .. } if path == "secrets")
                    && e.to_string().contains("'secrets'")),
                "{below}: {g:?}"
            );
        }
        // A root the kernel cannot express (create without read) is refused too.
        for root in [r#"["create"]"#, r#"["read", "create"]"#, r#"["delete"]"#] {
            let g = grant(&format!(r#"[{{ path = ".", allow = {root} }}]"#));
            assert!(g.is_err(), "{root}: {g:?}");
        }
    }

    #[test]
    fn hints_say_what_a_policy_allows_at_most() {
        let h = AccessPolicy::vfs_default().hints();
        assert_eq!((h.writes, h.destructive, h.network), (false, false, false));
        let h = AccessPolicy::stdio_default().hints();
        assert_eq!((h.writes, h.destructive, h.network), (true, true, false));
        let create_only =
            access(r#"filesystem = [{ path = ".", allow = ["read"] }, { path = "out", allow = ["create"] }]"#);
        assert_eq!((create_only.hints().writes, create_only.hints().destructive), (true, false));
        let net = access(r#"network = { allow = ["https://api.example.com/"] }"#);
        assert!(net.hints().network);
    }

    #[test]
    fn workspace_grant_is_whole_workspace_or_an_error() {
        assert_eq!(AccessPolicy::stdio_default().workspace_grant(), Ok(WorkspaceGrant { read: true, write: true }));
        assert_eq!(AccessPolicy::vfs_default().workspace_grant(), Ok(WorkspaceGrant { read: true, write: false }));
        let none = access(r#"filesystem = [{ path = ".", allow = [] }]"#);
        assert_eq!(none.workspace_grant(), Ok(WorkspaceGrant { read: false, write: false }));
        let finer = access(r#"filesystem = [{ path = ".", allow = ["read"] }, { path = "src", allow = ["write"] }]"#);
        let why = finer.workspace_grant().unwrap_err();
        assert!(matches!(&why, GrantError::FinerThanWorkspace { path, .. } if path == "src"), "{why:?}");
        assert!(why.to_string().contains("'src'"));
        // The network is not the workspace's business (see `network_grant`).
        let net = access(r#"network = { allow = ["https://api.example.com/"] }"#);
        assert_eq!(net.workspace_grant(), Ok(WorkspaceGrant { read: false, write: false }));
    }

    #[test]
    fn network_grant_is_per_origin_or_an_error_naming_the_rule() {
        assert_eq!(AccessPolicy::stdio_default().network_grant(), Ok(false));
        let origin = access(r#"network = { allow = ["https://api.example.com/", "http://127.0.0.1:8080"] }"#);
        assert_eq!(origin.network_grant(), Ok(true));
        assert!(origin.process_grant().unwrap().network);
        for finer in [
            r#"network = { allow = ["https://api.example.com/v1"] }"#,
            r#"network = { allow = [{ url = "https://api.example.com", methods = ["GET"] }] }"#,
            r#"network = { allow = ["https://api.example.com"], deny = ["https://api.example.com/admin"] }"#,
        ] {
            let why = access(finer).network_grant().unwrap_err();
            assert!(matches!(why, GrantError::FinerThanOrigin(_)), "{finer}: {why:?}");
            let why = why.to_string();
            assert!(why.contains("api.example.com:443") && why.contains("per host and port"), "{finer}: {why}");
            assert!(access(finer).process_grant().is_err(), "{finer}");
        }
        // Denying a whole origin is held per host and port.
        let deny = access(r#"network = { allow = ["https://a.example"], deny = ["https://b.example"] }"#);
        assert_eq!(deny.network_grant(), Ok(true));
    }
}
