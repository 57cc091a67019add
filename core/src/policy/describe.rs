//! What a policy grants, in words: one line for listings (`jp tool list`) and the whole of it
//! (`jp tool show`), both read from the compiled rules — what is shown is what is enforced.

use super::{AccessPolicy, Capability, Caps, Fallback};

fn caps(c: Caps) -> String {
    let names: Vec<&str> = Capability::ALL.into_iter().filter(|k| c.contains(*k)).map(Capability::name).collect();
    if names.is_empty() { "none".into() } else { names.join("+") }
}

fn fallback(f: Fallback) -> &'static str {
    if f == Fallback::Ask { "ask" } else { "deny" }
}

impl AccessPolicy {
    /// A one-line description for listings: `files: . read; network: none; processes: none`.
    pub fn summary(&self) -> String {
        let files: Vec<String> =
            self.fs_rules.iter().map(|r| format!("{} {}", r.path.display(), caps(r.caps))).collect();
        let files = if files.is_empty() { String::new() } else { format!("{}, ", files.join(", ")) };
        let net: Vec<&str> = self.net_rules.iter().filter(|r| r.allow).map(|r| r.text.as_str()).collect();
        let net = if net.is_empty() { String::new() } else { format!("{}, ", net.join(", ")) };
        let procs: Vec<&str> = self.commands.keys().map(String::as_str).collect();
        let procs = if procs.is_empty() { String::new() } else { format!("{}, ", procs.join(", ")) };
        let secrets: Vec<String> = self
            .secrets
            .iter()
            .map(|b| {
                let to: Vec<String> = b.origins.iter().map(ToString::to_string).collect();
                format!("{} only to {}", b.name, to.join(", "))
            })
            .collect();
        let secrets = if secrets.is_empty() { String::new() } else { format!("; secrets: {}", secrets.join("; ")) };
        let own = format!(
            "files: {files}else {}; network: {net}else {}{secrets}; processes: {procs}else {}",
            fallback(self.fs_fallback),
            fallback(self.net_fallback),
            fallback(self.commands_fallback)
        );
        match &self.ceiling {
            Some(c) => format!("{own} (within the operator's policy: {})", c.summary()),
            None => own,
        }
    }

    /// The whole policy, one line per rule with where it comes from: the file rules, what else
    /// happens to a path, the network rules, the programs, the variables, the sensitive paths.
    /// `direct`: the tool is a process the OS sandbox holds (a stdio tool, an MCP server), which
    /// cannot be asked mid-call — a file request no rule covers is refused by the kernel.
    pub fn details(&self, direct: bool) -> Vec<String> {
        let mut out = Vec::new();
        for r in &self.fs_rules {
            out.push(format!("files    {} {}   ({})", r.path.display(), caps(r.caps), r.origin));
        }
        let files_else = match (self.fs_fallback, direct) {
            (Fallback::Ask, true) => "refused (asking needs a tool jp mediates; the OS sandbox refuses it)",
            (Fallback::Ask, false) => "asked",
            (Fallback::Deny, _) => "refused",
        };
        out.push(format!("files    anything else: {files_else}"));
        out.push(format!("files    never written: {}/ (jp's own directory)", super::PROTECTED_DIR));
        for r in &self.net_rules {
            out.push(format!("network  {} {}   ({})", if r.allow { "allow" } else { "deny " }, r.text, r.origin));
        }
        out.push(format!(
            "network  anything else: {}",
            if self.net_fallback == Fallback::Ask { "asked" } else { "refused" }
        ));
        if !self.net_envs.is_empty() {
            let names: Vec<&str> = self.net_envs.iter().map(String::as_str).collect();
            out.push(format!("network  secrets for ${{VAR}} headers: {}", names.join(", ")));
        }
        for b in &self.secrets {
            let origins: Vec<String> = b.origins.iter().map(ToString::to_string).collect();
            let how = if direct {
                "the process holds a placeholder; jp puts the value in requests there"
            } else {
                "for ${VAR} in headers of requests there"
            };
            out.push(format!("network  secret {} only to {}   ({how})", b.name, origins.join(", ")));
        }
        for (program, rule) in &self.commands {
            let args = match &rule.args {
                None => "any arguments".to_owned(),
                Some(lists) => lists.iter().map(|a| format!("[{}]", a.join(" "))).collect::<Vec<_>>().join(" "),
            };
            let envs =
                if rule.envs.is_empty() { String::new() } else { format!("; variables {}", rule.envs.join(", ")) };
            out.push(format!("program  {program}: {args}{envs}"));
        }
        out.push(format!(
            "program  anything else: {}",
            if self.commands_fallback == Fallback::Ask { "asked" } else { "refused" }
        ));
        if !self.env_allowed.is_empty() {
            let names: Vec<&str> = self.env_allowed.iter().map(String::as_str).collect();
            out.push(format!("env      passed to programs: {}", names.join(", ")));
        }
        let asked =
            if direct { "hidden from the process unless a file rule names one" } else { "asked before each use" };
        out.push(format!("sensitive {} ({asked})", self.sensitive_patterns.join(", ")));
        if let Some(c) = &self.ceiling {
            out.push(format!("within the operator's policy: {}", c.summary()));
        }
        out
    }
}
