//! Learning mode's proposal (`jp policy suggest`): from what a run was refused, the smallest
//! widening of a tool's `access` table that would have allowed it — paths as narrow as the
//! accesses, origins rather than hosts or networks, programs with the arguments they were given.
//!
//! The refusals come from the decisions a run traced ([`Need::from_trace`]); [`widen`] turns them
//! into the table as it would be written. Nothing here grants anything: the user reads the table
//! and approves it (`jp trust`) like any change.

use std::collections::BTreeMap;

use super::config::{AccessConfig, CapabilityName, CommandRule, FsRuleConfig, NetworkRulesConfig};
use super::network::NetRuleConfig;
use super::{AccessPolicy, Capability, Origin, WorkspacePath};

/// One thing a run needed and was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Need {
    /// A workspace path and what was done to it.
    File {
        /// The path, as the policy compares it.
        path: WorkspacePath,
        /// The capability the request needed.
        cap: Capability,
    },
    /// An origin a request or connection went to (`https://host[:port]`).
    Origin(Origin),
    /// A program and the arguments it was run with.
    Program {
        /// The program as the tool named it.
        program: String,
        /// Its arguments.
        args: Vec<String>,
    },
}

impl Need {
    /// What a refused decision needed, from its trace (`method`, `target`); `exists` says
    /// whether a workspace path exists (a write to a missing file needs `create`, to an existing
    /// one `update`). `None` for what this does not learn.
    pub fn from_trace(method: &str, target: &str, exists: &dyn Fn(&WorkspacePath) -> bool) -> Option<Self> {
        let file = |cap: Capability| WorkspacePath::parse(target).ok().map(|path| Self::File { path, cap });
        match method {
            "fs.read" | "fs.list_dir" | "fs.grep" | "fs.exists" | "fs.metadata" => file(Capability::Read),
            "fs.delete" => file(Capability::Delete),
            // A write to a missing file creates it; the source of a rename goes away, its
            // destination is created.
            "fs.write" | "fs.rename" => {
                let path = WorkspacePath::parse(target).ok()?;
                let cap = match (method, exists(&path)) {
                    ("fs.write", true) => Capability::Update,
                    ("fs.rename", true) => Capability::Delete,
                    _ => Capability::Create,
                };
                Some(Self::File { path, cap })
            }
            "http.get" | "http.post" => Origin::of_url(target).map(Self::Origin),
            // `METHOD http://…` of a process through the egress proxy.
            crate::host::HTTP_METHOD => {
                Origin::of_url(target.split_once(' ').map_or(target, |(_, url)| url)).map(Self::Origin)
            }
            // `host:port` of a tunnel: an https origin.
            crate::host::CONNECT_METHOD => {
                let (host, port) = target.rsplit_once(':')?;
                let port: u16 = port.parse().ok()?;
                let host = host.trim_start_matches('[').trim_end_matches(']');
                Some(Self::Origin(Origin { scheme: "https".into(), host: super::canonical_host(host), port }))
            }
            "process.run" => {
                let mut words = split_command_line(target)?.into_iter();
                let program = words.next()?;
                Some(Self::Program { program, args: words.collect() })
            }
            _ => None,
        }
    }

    /// The need in words (`files: out/a.txt create`).
    pub fn describe(&self) -> String {
        match self {
            Self::File { path, cap } => format!("files: {} {}", path.display(), cap.name()),
            Self::Origin(o) => format!("network: {o}"),
            Self::Program { program, args } => {
                format!("program: {}", crate::host::command_line(program, args))
            }
        }
    }
}

/// Words of a command line as `command_line` writes them: plain words, or JSON strings.
fn split_command_line(line: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = line.trim_start();
    while !rest.is_empty() {
        if rest.starts_with('"') {
            let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<String>();
            let word = stream.next()?.ok()?;
            rest = rest[stream.byte_offset()..].trim_start();
            out.push(word);
        } else {
            let end = rest.find(' ').unwrap_or(rest.len());
            out.push(rest[..end].to_owned());
            rest = rest[end..].trim_start();
        }
    }
    Some(out)
}

/// A tool's `access` table widened: the table as it would be written, and what was added.
#[derive(Debug, Clone, PartialEq)]
pub struct Widened {
    /// The whole table.
    pub access: AccessConfig,
    /// One line per addition ([`Need::describe`]).
    pub added: Vec<String>,
    /// What no rule can allow (jp's own directory), one line each.
    pub impossible: Vec<String>,
}

fn cap_name(cap: Capability) -> CapabilityName {
    match cap {
        Capability::Read => CapabilityName::Read,
        Capability::Create => CapabilityName::Create,
        Capability::Update => CapabilityName::Update,
        Capability::Delete => CapabilityName::Delete,
        Capability::Execute => CapabilityName::Execute,
    }
}

impl AccessPolicy {
    /// This policy's own file rules as an `access.filesystem` list would write them.
    pub fn filesystem_config(&self) -> Vec<FsRuleConfig> {
        self.fs_rules
            .iter()
            .map(|r| FsRuleConfig {
                path: r.path.display().to_owned(),
                allow: Capability::ALL.into_iter().filter(|c| r.caps.contains(*c)).map(cap_name).collect(),
            })
            .collect()
    }
}

/// `access` (the tool's table as written, `None` when it has none) widened so that `needs` are
/// allowed; `policy` is what the tool runs under now (its runtime's default filling what the
/// table leaves out). `None` when nothing needs adding.
pub fn widen(access: Option<&AccessConfig>, policy: &AccessPolicy, needs: &[Need]) -> Option<Widened> {
    let mut out = access.cloned().unwrap_or_default();
    let mut added = Vec::new();
    let mut impossible = Vec::new();

    // Files: each path gets a rule of its own (the most specific rule decides in full, so it
    // keeps what the path had and adds what was needed).
    let mut paths: BTreeMap<WorkspacePath, Vec<Capability>> = BTreeMap::new();
    for need in needs {
        let Need::File { path, cap } = need else { continue };
        if policy.check_fs(*cap, path).is_allow() {
            continue;
        }
        if *cap != Capability::Read && policy.is_protected(path) {
            let line = format!("{} (jp's own directory: no rule lets a tool write there)", need.describe());
            if !impossible.contains(&line) {
                impossible.push(line);
            }
            continue;
        }
        let caps = paths
            .entry(path.clone())
            .or_insert_with(|| Capability::ALL.into_iter().filter(|c| policy.check_fs(*c, path).is_allow()).collect());
        if !caps.contains(cap) {
            caps.push(*cap);
            added.push(need.describe());
        }
    }
    if !paths.is_empty() {
        let mut rules = out.filesystem.take().unwrap_or_else(|| policy.filesystem_config());
        for (path, caps) in paths {
            let shown = path.display().to_owned();
            let allow: Vec<CapabilityName> =
                Capability::ALL.into_iter().filter(|c| caps.contains(c)).map(cap_name).collect();
            match rules.iter_mut().find(|r| WorkspacePath::parse(&r.path).is_ok_and(|p| p == path)) {
                Some(rule) => rule.allow = allow,
                None => rules.push(FsRuleConfig { path: shown, allow }),
            }
        }
        out.filesystem = Some(rules);
    }

    // Origins: added to the allow list as they are.
    for need in needs {
        let Need::Origin(origin) = need else { continue };
        let network = out.network.get_or_insert_with(NetworkRulesConfig::default);
        let text = origin.to_string();
        if !network
            .allow
            .iter()
            .any(|r| matches!(r, NetRuleConfig::Url(u) if Origin::parse(u).ok().as_ref() == Some(origin)))
        {
            network.allow.push(NetRuleConfig::Url(text));
            added.push(need.describe());
        }
    }

    // Programs: with the arguments they were given.
    for need in needs {
        let Need::Program { program, args } = need else { continue };
        if policy.check_process(program, args, &[]).is_allow() {
            continue;
        }
        let commands = out.commands.get_or_insert_with(BTreeMap::new);
        let rule =
            commands.entry(program.clone()).or_insert_with(|| CommandRule { args: Some(Vec::new()), envs: Vec::new() });
        if let Some(lists) = &mut rule.args
            && !lists.contains(args)
        {
            lists.push(args.clone());
            added.push(need.describe());
        }
    }

    (!added.is_empty() || !impossible.is_empty()).then_some(Widened { access: out, added, impossible })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needs(lines: &[(&str, &str)], existing: &[&str]) -> Vec<Need> {
        let exists = |p: &WorkspacePath| existing.contains(&p.display());
        lines.iter().filter_map(|(m, t)| Need::from_trace(m, t, &exists)).collect()
    }

    #[test]
    fn refusals_become_what_they_needed() {
        let n = needs(
            &[
                ("fs.write", "out/new.txt"),
                ("fs.write", "notes.md"),
                ("fs.read", "src/main.rs"),
                ("http.get", "https://API.example.com/v1/items?x=1"),
                ("net.connect", "[::1]:8443"),
                ("net.http", "GET http://127.0.0.1:8080/a"),
                ("process.run", "git log \"--format=%H %s\" -n 3"),
                ("mcp tools/call", "x"),
            ],
            &["notes.md"],
        );
        let shown: Vec<String> = n.iter().map(Need::describe).collect();
        assert_eq!(
            shown,
            [
                "files: out/new.txt create",
                "files: notes.md update",
                "files: src/main.rs read",
                "network: https://api.example.com",
                "network: https://[::1]:8443",
                "network: http://127.0.0.1:8080",
                "program: git log \"--format=%H %s\" -n 3",
            ]
        );
        let Need::Program { args, .. } = &n[6] else { panic!() };
        assert_eq!(args, &["log", "--format=%H %s", "-n", "3"]);
    }

    #[test]
    fn a_widened_table_keeps_what_was_there_and_adds_only_what_was_needed() {
        // A VFS tool with no table: the default (workspace read-only) is written out, then the
        // narrow additions; the paths keep what they had.
        let policy = AccessPolicy::vfs_default();
        let n = needs(
            &[
                ("fs.write", "out/new.txt"),
                ("fs.write", "out/new.txt"),
                ("fs.read", "src/lib.rs"),
                ("http.get", "https://api.example.com/v1"),
                ("process.run", "cargo check"),
                ("fs.write", ".jp/config.toml"),
            ],
            &[],
        );
        let w = widen(None, &policy, &n).unwrap();
        let text = toml::to_string(&w.access).unwrap();
        assert_eq!(w.added, ["files: out/new.txt create", "network: https://api.example.com", "program: cargo check"]);
        assert_eq!(w.impossible.len(), 1, "{:?}", w.impossible);
        let fs = w.access.filesystem.as_ref().unwrap();
        assert_eq!(fs.len(), 2, "{text}");
        assert_eq!(fs[1].path, "out/new.txt");
        assert_eq!(fs[1].allow, [CapabilityName::Read, CapabilityName::Create]);
        // Compiled, it allows exactly what was refused, and nothing it was not asked for.
        let widened = AccessPolicy::from_config(None, Some(&w.access)).unwrap();
        assert!(widened.check_fs(Capability::Create, &WorkspacePath::parse("out/new.txt").unwrap()).is_allow());
        assert!(!widened.check_fs(Capability::Create, &WorkspacePath::parse("out/other.txt").unwrap()).is_allow());
        assert!(!widened.check_fs(Capability::Update, &WorkspacePath::parse("out/new.txt").unwrap()).is_allow());
        assert!(widened.check_request(&super::super::HttpCheck::new("GET", "https://api.example.com/v1/x")).is_allow());
        assert!(!widened.check_request(&super::super::HttpCheck::new("GET", "https://example.com/")).is_allow());
        assert!(widened.check_process("cargo", &["check".into()], &[]).is_allow());
        assert!(!widened.check_process("cargo", &["publish".into()], &[]).is_allow());
        // Run again with the widened table: nothing more to add.
        assert_eq!(widen(Some(&w.access), &widened, &n).map(|w| w.added), Some(vec![]));
    }
}
