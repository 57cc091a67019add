//! What a kernel sandbox must grant a process that touches the workspace directly — a stdio
//! tool ([`AccessPolicy::workspace_grant`]) or a `process.run` child
//! ([`AccessPolicy::process_grant`]) — and the policies it cannot hold, refused with the rule.

use super::{AccessPolicy, Capability, Caps, WorkspacePath};

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
    /// Whether the process may open network connections at all (the policy allows some URL).
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

    /// What an OS sandbox must grant a tool that touches the workspace directly (a legacy stdio
    /// tool): the workspace as a whole, read-only or read-write. Kernel sandboxes grant whole
    /// directory trees, so a policy with rules below the root, or one that allows network access
    /// (which a direct-access tool could not be held to per URL), cannot be enforced and is an
    /// error naming the rule. Sensitive-path inquiries cannot be asked for direct file access.
    pub fn workspace_grant(&self) -> Result<WorkspaceGrant, String> {
        if let Some(ceiling) = &self.ceiling {
            let (own, theirs) = (self.unbounded().workspace_grant()?, ceiling.workspace_grant()?);
            return Ok(WorkspaceGrant { read: own.read && theirs.read, write: own.write && theirs.write });
        }
        if let Some(rule) = self.fs_rules.iter().find(|r| !r.path.is_root()) {
            return Err(format!(
                "its filesystem rule for '{}' ({}) is finer than the whole workspace",
                rule.path.display(),
                rule.origin
            ));
        }
        if let Some(rule) = self.net_rules.iter().find(|r| r.allow) {
            return Err(format!(
                "it allows network access ({}), which can only be checked per URL through the protocol",
                rule.text
            ));
        }
        let caps = self.fs_rules.iter().rev().find(|r| r.path.is_root()).map_or(Caps::default(), |r| r.caps);
        let write = [Capability::Create, Capability::Update, Capability::Delete].into_iter().any(|c| caps.contains(c));
        Ok(WorkspaceGrant { read: caps.contains(Capability::Read) || write, write })
    }

    /// What an OS sandbox must grant a process started by `process.run` on this tool's behalf:
    /// the workspace as a whole (read-only or read-write, from the rule for the root) and the
    /// network when any URL is allowed (the kernel cannot narrow it to those URLs). A process
    /// touches files directly, so a rule below the root that takes away a capability the root
    /// grants (e.g. `secrets` with no access under a readable workspace) cannot be held by the
    /// kernel and is an error naming the rule. Rules below the root that grant *more* are not
    /// extended to the process (narrower is safe). Sensitive-path inquiries cannot be asked for
    /// direct access.
    pub fn process_grant(&self) -> Result<ProcessGrant, String> {
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
        let expressible = |caps: Caps, origin: &str, path: &WorkspacePath| -> Result<WorkspaceGrant, String> {
            let held = Caps(caps.0 & rw.0);
            if held == Caps::default() || held == Caps::READ || held == rw {
                Ok(WorkspaceGrant { read: held.contains(Capability::Read), write: held == rw })
            } else {
                Err(format!(
                    "its filesystem rule for '{}' ({origin}) grants {}, which the kernel cannot hold a process to (only nothing, read, or read and write of a whole tree)",
                    path.display(),
                    held.describe()
                ))
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
                return Err(format!(
                    "its filesystem rule for '{}' ({}) takes away access that the rest of the workspace has, which the kernel cannot hold a process to",
                    rule.path.display(),
                    rule.origin
                ));
            }
        }
        Ok(ProcessGrant { workspace, network: self.net_rules.iter().any(|r| r.allow) })
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
            assert!(g.as_ref().is_err_and(|e| e.contains("'secrets'")), "{below}: {g:?}");
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
        assert!(finer.workspace_grant().unwrap_err().contains("'src'"));
        let net = access(r#"network = { allow = ["https://api.example.com/"] }"#);
        assert!(net.workspace_grant().unwrap_err().contains("network"));
    }
}
