//! The one access policy (RFDs 075 / 076 / 016 as summarised in DESIGN.md).
//!
//! Every file, network and process request of every runtime on every platform is decided here:
//! [`AccessPolicy::check_fs`], [`check_http`](AccessPolicy::check_http),
//! [`check_process`](AccessPolicy::check_process) and [`check_env`](AccessPolicy::check_env)
//! answer [`Decision::Allow`], [`Decision::Deny`] (with a reason naming the rule and the fix) or
//! [`Decision::Ask`] (an inquiry for the user).
//!
//! Semantics:
//! - **Filesystem.** Rules are workspace-relative path prefixes matched by whole component. The
//!   most specific matching rule (most components) decides in full — no inheritance — and ties go
//!   to the last rule. Matching uses the NFC form of the path.
//! - **Network.** Rules are URL prefixes that pin scheme, host and port; the path prefix matches at
//!   a `/` boundary. The longest matching prefix decides; a tie denies.
//! - **Commands.** Sudo-style argument patterns (`*` one argument, final `**` anything after).
//! - **Environment.** Subprocesses get PATH, HOME, USER, LANG and `LC_*` plus what rules allow.
//! - **Uncovered requests.** A kind with rules in an `access` table is default-deny. A request the
//!   `sandbox` allowlist does not mention is *not covered* and becomes an inquiry (D11). With no
//!   configuration at all a VFS tool gets the D11 default: workspace read-only, no network, no
//!   processes.
//! - **Sensitive paths** (`~/.ssh`, `**/.env`, …) always ask, even when a rule allows them; users
//!   can only add to the list.

mod ceiling;
mod commands;
mod config;
mod describe;
mod error;
mod grant;
mod network;
mod path;
mod scrub;
mod secrets;
mod sensitive;
mod suggest;

use std::collections::{BTreeMap, BTreeSet};

pub use config::{
    AccessConfig, CapabilityName, CommandRule, FsRuleConfig, NetworkRulesConfig, SandboxConfig, SandboxFilesystem,
    SandboxNetwork,
};
pub use error::{NetRuleError, PolicyConfigError, PolicyProblem, SensitivePathError, UrlError};
pub use grant::{GrantError, PolicyHints, ProcessGrant, WorkspaceGrant};
use network::NetRule;
pub use network::{HeaderRules, HttpCheck, METHODS, NetRuleConfig, NetRuleTable, canonical_host};
pub use path::{MAX_COMPONENT_BYTES, MAX_PATH_BYTES, PathError, WorkspacePath};
pub use scrub::{MIN_SECRET_LEN, REDACTED, Scrubber, StreamScrubber};
pub use secrets::{Origin, SecretBinding};
use sensitive::Sensitive;
pub use sensitive::SensitiveNames;
pub use suggest::{Need, Widened, widen};

/// A filesystem capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Capability {
    /// Read files, list directories, check existence.
    Read,
    /// Create a file that does not exist.
    Create,
    /// Overwrite an existing file.
    Update,
    /// Delete a file.
    Delete,
    /// Run a program stored in the workspace.
    Execute,
}

impl Capability {
    /// Every capability.
    pub const ALL: [Capability; 5] = [Self::Read, Self::Create, Self::Update, Self::Delete, Self::Execute];

    /// The configuration name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Create => "create",
            Self::Update => "update",
            Self::Delete => "delete",
            Self::Execute => "execute",
        }
    }

    /// Parse a name; `write` is not a single capability (see [`CapabilityName::Write`]).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }

    const fn bit(self) -> u8 {
        match self {
            Self::Read => 1,
            Self::Create => 2,
            Self::Update => 4,
            Self::Delete => 8,
            Self::Execute => 16,
        }
    }
}

/// A set of capabilities.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Caps(u8);

impl Caps {
    /// Read only.
    pub const READ: Caps = Caps(1);
    /// Read, create, update, delete.
    pub const READ_WRITE: Caps = Caps(1 | 2 | 4 | 8);

    /// Whether `cap` is in the set.
    pub fn contains(self, cap: Capability) -> bool {
        self.0 & cap.bit() != 0
    }

    /// Add the capabilities a configuration name stands for.
    pub fn with(self, name: CapabilityName) -> Caps {
        let bits = match name {
            CapabilityName::Read => Capability::Read.bit(),
            CapabilityName::Create => Capability::Create.bit(),
            CapabilityName::Update => Capability::Update.bit(),
            CapabilityName::Delete => Capability::Delete.bit(),
            CapabilityName::Execute => Capability::Execute.bit(),
            CapabilityName::Write => Caps::READ_WRITE.0 & !Capability::Read.bit(),
        };
        Caps(self.0 | bits)
    }

    fn describe(self) -> String {
        let names: Vec<&str> =
            Capability::ALL.into_iter().filter(|c| self.contains(*c)).map(Capability::name).collect();
        if names.is_empty() { "nothing".into() } else { names.join(", ") }
    }
}

/// The answer to one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Go ahead; the text names the rule that allowed it.
    Allow(String),
    /// Refuse; the text names the rule (or its absence) and how to allow it.
    Deny(String),
    /// Ask the user; the text says why.
    Ask(String),
}

impl Decision {
    /// `allow`, `deny` or `ask`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Allow(_) => "allow",
            Self::Deny(_) => "deny",
            Self::Ask(_) => "ask",
        }
    }

    /// The explanation.
    pub fn reason(&self) -> &str {
        match self {
            Self::Allow(r) | Self::Deny(r) | Self::Ask(r) => r,
        }
    }

    /// Whether this is [`Decision::Allow`].
    pub fn is_allow(&self) -> bool {
        matches!(self, Self::Allow(_))
    }
}

/// What happens to a request no rule of its kind matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fallback {
    /// Refuse it.
    Deny,
    /// Ask the user (not covered by the configuration).
    Ask,
}

#[derive(Debug, Clone)]
struct FsRule {
    path: WorkspacePath,
    caps: Caps,
    origin: String,
}

/// Built-in sensitive paths (RFD 075). Home-relative entries apply when the workspace contains
/// the home directory (see [`AccessPolicy::set_home`]).
pub const BUILTIN_SENSITIVE: [&str; 8] = [
    "~/.ssh",
    "~/.gnupg",
    "~/.aws/credentials",
    "~/.config/gcloud",
    "~/.kube/config",
    "~/.docker/config.json",
    "**/.env",
    "**/.env.*",
];

/// Variables every subprocess receives from the host environment.
pub const BASE_ENV: [&str; 4] = ["PATH", "HOME", "USER", "LANG"];

/// Whether `name` is one of the base variables every subprocess gets (PATH, HOME, USER, LANG, LC_*).
pub fn is_base_env(name: &str) -> bool {
    BASE_ENV.contains(&name) || name.starts_with("LC_")
}

/// The compiled access policy of one tool.
#[derive(Debug, Clone)]
pub struct AccessPolicy {
    fs_rules: Vec<FsRule>,
    fs_fallback: Fallback,
    net_rules: Vec<NetRule>,
    net_fallback: Fallback,
    net_envs: BTreeSet<String>,
    commands: BTreeMap<String, CommandRule>,
    commands_fallback: Fallback,
    env_allowed: BTreeSet<String>,
    /// `access.secrets`: host variables bound to the origins they may be sent to.
    secrets: Vec<SecretBinding>,
    sensitive_patterns: Vec<String>,
    sensitive: Sensitive,
    /// Paths no tool may create, change or delete, whatever the rules say ([`PROTECTED_DIR`]).
    protected: Vec<WorkspacePath>,
    /// A policy that bounds this one ([`AccessPolicy::within`]).
    ceiling: Option<std::sync::Arc<AccessPolicy>>,
}

/// jp's own directory in a workspace (configuration, knowledge base). Nothing a tool writes may
/// widen what jp grants, so no policy can let a tool create, change or delete anything in it:
/// the user edits it and approves it (`jp trust`).
pub const PROTECTED_DIR: &str = ".jp";

impl Default for AccessPolicy {
    /// The D11 default for a VFS tool without a sandbox section.
    fn default() -> Self {
        Self::vfs_default()
    }
}

impl AccessPolicy {
    fn empty() -> Self {
        // Parsed once per process; every policy starts from it, and shares its set until its
        // patterns or home change.
        static BUILTIN: std::sync::OnceLock<(Vec<String>, Sensitive)> = std::sync::OnceLock::new();
        let (patterns, sensitive) = BUILTIN
            .get_or_init(|| {
                let patterns: Vec<String> = BUILTIN_SENSITIVE.iter().map(|s| s.to_string()).collect();
                let sensitive = Sensitive::new(&patterns, None).expect("the built-in sensitive paths are valid globs");
                (patterns, sensitive)
            })
            .clone();
        Self {
            fs_rules: Vec::new(),
            fs_fallback: Fallback::Ask,
            net_rules: Vec::new(),
            net_fallback: Fallback::Ask,
            net_envs: BTreeSet::new(),
            commands: BTreeMap::new(),
            commands_fallback: Fallback::Ask,
            env_allowed: BTreeSet::new(),
            secrets: Vec::new(),
            sensitive_patterns: patterns,
            sensitive,
            protected: vec![WorkspacePath::parse(PROTECTED_DIR).unwrap_or_else(|_| WorkspacePath::root())],
            ceiling: None,
        }
    }

    /// D11 default: workspace read-only, no network, no processes.
    pub fn vfs_default() -> Self {
        let mut p = Self::empty();
        p.fs_rules.push(FsRule {
            path: WorkspacePath::root(),
            caps: Caps::READ,
            origin: "the default policy (workspace read-only)".into(),
        });
        p.fs_fallback = Fallback::Deny;
        p.net_fallback = Fallback::Deny;
        p.commands_fallback = Fallback::Deny;
        p
    }

    /// This policy with the parts a tool's `access` table left out taken from `default` (the
    /// tool's runtime's default): its file rules unless `filesystem` was written, its network
    /// rules unless `network` was, its programs unless `commands` was. A table composes with
    /// the default this way, so that granting one thing never takes away another.
    pub fn keeping_from(mut self, default: &AccessPolicy, access: &AccessConfig) -> Self {
        if access.filesystem.is_none() {
            self.fs_rules = default.fs_rules.clone();
            self.fs_fallback = default.fs_fallback;
        }
        if access.network.is_none() {
            self.net_rules = default.net_rules.clone();
            self.net_fallback = default.net_fallback;
        }
        if access.commands.is_none() {
            self.commands = default.commands.clone();
            self.commands_fallback = default.commands_fallback;
        }
        self
    }

    /// RFD 075 default for a legacy stdio tool: workspace read-write, no network, no processes.
    pub fn stdio_default() -> Self {
        Self::workspace_read_write("the default stdio policy (workspace read-write)")
    }

    /// The workspace read-write, no network, no processes, its one rule named `origin` in every
    /// decision it makes (the page's default is not a stdio tool's).
    pub fn workspace_read_write(origin: impl Into<String>) -> Self {
        let mut p = Self::vfs_default();
        p.fs_rules[0] = FsRule { path: WorkspacePath::root(), caps: Caps::READ_WRITE, origin: origin.into() };
        p
    }

    /// A policy that allows everything in the workspace (for the host's own trusted use, e.g.
    /// the browser file tree). Sensitive paths still ask.
    pub fn allow_all() -> Self {
        let mut p = Self::empty();
        p.fs_rules.push(FsRule { path: WorkspacePath::root(), caps: Caps(0b11111), origin: "allow-all policy".into() });
        // The user's own hand (not a tool's) may edit jp's directory.
        p.protected.clear();
        p
    }

    /// Whether `path` lies in a protected directory (see [`PROTECTED_DIR`]).
    pub fn is_protected(&self, path: &WorkspacePath) -> bool {
        // Compared without ASCII case: on a case-insensitive mount (vfat, CIFS, ext4 casefold)
        // `.JP/config.toml` is the same file.
        let key = path.nfc();
        let names: Vec<&str> = key.components().collect();
        self.protected.iter().any(|p| {
            let want: Vec<&str> = p.components().collect();
            !want.is_empty()
                && names.len() >= want.len()
                && want.iter().zip(&names).all(|(w, got)| got.eq_ignore_ascii_case(w))
        })
    }

    /// Compile a tool's configuration. With neither table this is [`vfs_default`](Self::vfs_default).
    /// Keys in errors are relative to the tool's table (`sandbox.…`, `access.…`).
    pub fn from_config(
        sandbox: Option<&SandboxConfig>,
        access: Option<&AccessConfig>,
    ) -> Result<Self, PolicyConfigError> {
        if sandbox.is_none() && access.is_none() {
            return Ok(Self::vfs_default());
        }
        let err = |key: String, problem: PolicyProblem| PolicyConfigError { key, problem: Box::new(problem) };
        let mut p = Self::empty();
        let mut extra_sensitive = Vec::new();

        if let Some(sb) = sandbox {
            match &sb.filesystem {
                None => p.fs_rules.push(FsRule {
                    path: WorkspacePath::root(),
                    caps: Caps::READ,
                    origin: "the default sandbox.filesystem (workspace read-only)".into(),
                }),
                Some(fs) => {
                    let caps = if fs.writable { Caps::READ_WRITE } else { Caps::READ };
                    for (i, path) in fs.allow.iter().enumerate() {
                        let key = format!("sandbox.filesystem.allow[{i}]");
                        let parsed = WorkspacePath::parse(path).map_err(|e| err(key.clone(), e.into()))?;
                        p.fs_rules.push(FsRule {
                            path: parsed.nfc(),
                            caps,
                            origin: format!("{key} ({path:?}, {})", caps.describe()),
                        });
                    }
                }
            }
            // Not in the allowlist = not covered = ask (D11); the D11 default denies.
            p.fs_fallback = Fallback::Ask;
            p.net_fallback = if sb.network.is_some() { Fallback::Ask } else { Fallback::Deny };
            if let Some(net) = &sb.network {
                p.add_net_rules(&net.allow, true, "sandbox.network.allow").map_err(|(k, e)| err(k, e.into()))?;
                p.net_envs.extend(net.envs.iter().cloned());
            }
            p.commands_fallback = if sb.commands.is_some() { Fallback::Ask } else { Fallback::Deny };
            if let Some(cmds) = &sb.commands {
                p.add_commands(cmds, "sandbox.commands")?;
            }
            extra_sensitive.extend(sb.sensitive_paths.iter().cloned().map(|s| ("sandbox.sensitive_paths", s)));
        }

        if let Some(ac) = access {
            if let Some(rules) = &ac.filesystem {
                for (i, rule) in rules.iter().enumerate() {
                    let key = format!("access.filesystem[{i}].path");
                    let parsed = WorkspacePath::parse(&rule.path).map_err(|e| err(key, e.into()))?;
                    let caps = rule.allow.iter().fold(Caps::default(), |c, n| c.with(*n));
                    p.fs_rules.push(FsRule {
                        path: parsed.nfc(),
                        caps,
                        origin: format!("access.filesystem[{i}] ({:?}, {})", rule.path, caps.describe()),
                    });
                }
                p.fs_fallback = Fallback::Deny;
            } else if sandbox.is_none() {
                p.fs_fallback = Fallback::Ask;
            }
            if let Some(net) = &ac.network {
                p.add_net_rules(&net.allow, true, "access.network.allow").map_err(|(k, e)| err(k, e.into()))?;
                p.add_net_rules(&net.deny, false, "access.network.deny").map_err(|(k, e)| err(k, e.into()))?;
                p.net_envs.extend(net.envs.iter().cloned());
                p.net_fallback = Fallback::Deny;
            } else if sandbox.is_none() {
                p.net_fallback = Fallback::Ask;
            }
            if let Some(cmds) = &ac.commands {
                p.add_commands(cmds, "access.commands")?;
                p.commands_fallback = Fallback::Deny;
            } else if sandbox.is_none() {
                p.commands_fallback = Fallback::Ask;
            }
            if let Some(env) = &ac.env {
                p.env_allowed.extend(env.iter().cloned());
            }
            if let Some(table) = &ac.secrets {
                p.secrets = secrets::compile(table).map_err(|(k, e)| err(k, PolicyProblem::Secret(e)))?;
            }
            extra_sensitive.extend(ac.sensitive_paths.iter().cloned().map(|s| ("access.sensitive_paths", s)));
        }

        // A bound secret goes only where it is bound: handed out another way (a header anywhere,
        // a variable of a process) it would go anywhere, while `jp trust` shows the binding.
        for b in &p.secrets {
            let also = if p.net_envs.contains(&b.name) {
                Some("network.envs".to_owned())
            } else if p.env_allowed.contains(&b.name) {
                Some("env".to_owned())
            } else {
                p.commands
                    .iter()
                    .find(|(_, r)| r.envs.contains(&b.name))
                    .map(|(prog, _)| format!("commands.{prog}.envs"))
            };
            if let Some(also) = also {
                return Err(err(
                    format!("access.secrets.{}", b.name),
                    PolicyProblem::Secret(format!(
                        "{} is bound to origins here and also listed in {also}, which would hand out its value; remove it from {also}",
                        b.name
                    )),
                ));
            }
        }
        if !extra_sensitive.is_empty() {
            for (i, (table, pattern)) in extra_sensitive.into_iter().enumerate() {
                sensitive::check(&pattern, None).map_err(|e| err(format!("{table}[{i}]"), e.into()))?;
                p.sensitive_patterns.push(pattern);
            }
            p.sensitive = Sensitive::checked(&p.sensitive_patterns, None);
        }
        Ok(p)
    }

    fn add_commands(&mut self, cmds: &BTreeMap<String, CommandRule>, table: &str) -> Result<(), PolicyConfigError> {
        for (program, rule) in cmds {
            if program.is_empty() {
                return Err(PolicyConfigError {
                    key: table.to_string(),
                    problem: Box::new(PolicyProblem::EmptyProgram),
                });
            }
            if let Some(args) = &rule.args {
                for (i, pattern) in args.iter().enumerate() {
                    if let Some(pos) = pattern.iter().position(|a| a == "**")
                        && pos + 1 != pattern.len()
                    {
                        return Err(PolicyConfigError {
                            key: format!("{table}.{program}.args[{i}]"),
                            problem: Box::new(PolicyProblem::DoubleStarNotLast),
                        });
                    }
                }
            }
            self.commands.insert(program.clone(), rule.clone());
        }
        Ok(())
    }

    /// Tell the policy where the home directory lies relative to the workspace, so the `~/…`
    /// sensitive paths apply when the workspace contains home. Both are absolute, canonical
    /// paths; the computation is lexical.
    pub fn set_home(&mut self, workspace_abs: &str, home_abs: &str) {
        let ws = workspace_abs.trim_end_matches('/');
        let home = home_abs.trim_end_matches('/');
        let rel = if home == ws {
            Some(WorkspacePath::root())
        } else {
            home.strip_prefix(ws).and_then(|r| r.strip_prefix('/')).and_then(|r| WorkspacePath::parse(r).ok())
        };
        if let Ok(sensitive) = self.sensitive.with_home(&self.sensitive_patterns, rel) {
            self.sensitive = sensitive;
        }
    }

    /// Host variables this policy may hand to a tool: `network.envs` (header substitution) and
    /// the variables commands or env rules may receive. Their values are the secrets to scrub.
    pub fn resolvable_env(&self) -> impl Iterator<Item = &str> {
        self.net_envs
            .iter()
            .chain(self.env_allowed.iter())
            .chain(self.secrets.iter().map(|b| &b.name))
            .chain(self.commands.values().flat_map(|rule| rule.envs.iter()))
            .map(String::as_str)
    }

    /// The sensitive path patterns in force (built-in first).
    pub fn sensitive_patterns(&self) -> &[String] {
        &self.sensitive_patterns
    }

    /// A quick test on one file name that every sensitive path's last component passes (a
    /// path can be sensitive only if its own name matches the last component of a pattern, or
    /// it lies beneath a sensitive directory): for a walk that looks for sensitive paths, which
    /// then asks [`is_sensitive`](Self::is_sensitive) only of the names that pass. `None` when
    /// no such test exists (a pattern ending in `**` or with classes, alternatives or escapes; a
    /// ceiling): ask of every path.
    pub fn sensitive_name_filter(&self) -> Option<SensitiveNames> {
        if self.ceiling.is_some() {
            return None;
        }
        self.sensitive.names().cloned()
    }

    /// Whether a path is sensitive: it, or a directory it lies in, matches a sensitive pattern.
    pub fn is_sensitive(&self, path: &WorkspacePath) -> bool {
        let own = !path.is_root() && self.sensitive.matches(&self.sensitive_patterns, path.nfc().as_str());
        own || self.ceiling.as_ref().is_some_and(|c| c.is_sensitive(path))
    }

    /// Decide a filesystem capability on a normalised path.
    pub fn check_fs(&self, cap: Capability, path: &WorkspacePath) -> Decision {
        let own = self.check_fs_own(cap, path, true);
        self.bounded(own, |c| c.check_fs(cap, path))
    }

    /// Decide a write the caller makes itself, not a tool (an edge request's own `files`):
    /// the rules, the protected directory and the ceiling as for a tool, but a sensitive path is
    /// not asked about — the caller writes what it already has.
    pub fn check_fs_by_caller(&self, cap: Capability, path: &WorkspacePath) -> Decision {
        let own = self.check_fs_own(cap, path, false);
        self.bounded(own, |c| c.check_fs_by_caller(cap, path))
    }

    fn check_fs_own(&self, cap: Capability, path: &WorkspacePath, sensitive_asks: bool) -> Decision {
        let key = path.nfc();
        let mut best: Option<(usize, &FsRule)> = None;
        for rule in &self.fs_rules {
            if key.starts_with(&rule.path) {
                let depth = rule.path.depth();
                // `>=` so that on a tie the later rule wins.
                if best.is_none_or(|(d, _)| depth >= d) {
                    best = Some((depth, rule));
                }
            }
        }
        let op = cap.name();
        let shown = path.display();
        if cap != Capability::Read && self.is_protected(path) {
            return Decision::Deny(format!(
                "Access denied: {op} '{shown}' is in jp's own directory {PROTECTED_DIR}/, which no tool may write, whatever its policy: the user edits it and approves it with `jp trust`"
            ));
        }
        let decision = match best {
            Some((_, rule)) if rule.caps.contains(cap) => {
                Decision::Allow(format!("{op} '{shown}' allowed by {}", rule.origin))
            }
            Some((_, rule)) => Decision::Deny(format!(
                "Access denied: {op} '{shown}' is not allowed by {}; to allow it, grant '{op}' on that path or add a more specific rule for '{shown}'",
                rule.origin
            )),
            None => match self.fs_fallback {
                Fallback::Deny => Decision::Deny(format!(
                    "Access denied: no filesystem rule covers '{shown}'; add a rule for it (e.g. {{ path = \"{shown}\", allow = [\"{op}\"] }})"
                )),
                Fallback::Ask => {
                    Decision::Ask(format!("{op} '{shown}' is not covered by the tool's sandbox configuration"))
                }
            },
        };
        match decision {
            Decision::Allow(_) if sensitive_asks && self.is_sensitive(path) => {
                Decision::Ask(format!("{op} '{shown}' touches a sensitive path; confirm to allow"))
            }
            other => other,
        }
    }

    /// Parse a path and decide; an invalid path is denied with the parse error.
    pub fn check_fs_str(&self, cap: Capability, path: &str) -> Decision {
        match WorkspacePath::parse(path) {
            Ok(p) => self.check_fs(cap, &p),
            Err(e) => Decision::Deny(format!("Access denied: {e}")),
        }
    }
}

#[cfg(test)]
mod tests;
