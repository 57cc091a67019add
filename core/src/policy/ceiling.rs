//! A policy bounded by another (issue 24): at the edge the operator's policy is a ceiling, and a
//! client's policy may only narrow it. [`AccessPolicy::within`] refuses a client policy that
//! grants anything the ceiling does not, naming every such right; an accepted one decides every
//! request as the stricter of the two decisions (deny before ask before allow), so a rule of the
//! client that covers more than the ceiling's (`.` read-write under a ceiling that denies
//! `secrets/`) is still held to the ceiling path by path. Decided here so that every platform
//! (native, wasm32, the browser, the edge) computes it the same way.

use std::sync::Arc;

use super::{AccessPolicy, Capability, Decision, Fallback};

impl AccessPolicy {
    /// `self` bounded by `ceiling`: refused with every right it grants that `ceiling` denies —
    /// a filesystem capability on a rule's path, an allowed URL prefix, a header or environment
    /// variable, a program — otherwise a policy whose every decision is the stricter of the two.
    pub fn within(mut self, ceiling: AccessPolicy) -> Result<AccessPolicy, Vec<String>> {
        let refused = self.exceeding(&ceiling);
        if !refused.is_empty() {
            return Err(refused);
        }
        self.ceiling = Some(Arc::new(ceiling));
        Ok(self)
    }

    /// The ceiling this policy is bounded by, if any.
    pub fn ceiling(&self) -> Option<&AccessPolicy> {
        self.ceiling.as_deref()
    }

    /// This policy without its ceiling.
    pub(super) fn unbounded(&self) -> AccessPolicy {
        let mut own = self.clone();
        own.ceiling = None;
        own
    }

    /// What `self` grants that `ceiling` refuses, one line per right.
    fn exceeding(&self, ceiling: &AccessPolicy) -> Vec<String> {
        let mut out = Vec::new();
        for rule in &self.fs_rules {
            for cap in Capability::ALL.into_iter().filter(|c| rule.caps.contains(*c)) {
                if let Decision::Deny(_) = ceiling.check_fs(cap, &rule.path) {
                    out.push(format!("filesystem: {} on '{}'", cap.name(), rule.path.display()));
                }
            }
        }
        for rule in self.net_rules.iter().filter(|r| r.allow) {
            let refused = rule.methods().into_iter().any(|method| {
                matches!(ceiling.check_request(&super::HttpCheck::new(method, &rule.url)), Decision::Deny(_))
            });
            if refused {
                out.push(format!("network: {}", rule.text));
            }
        }
        for var in self.net_envs.iter().filter(|v| !ceiling.net_envs.contains(*v)) {
            out.push(format!("header variable: ${{{var}}}"));
        }
        for binding in &self.secrets {
            for origin in &binding.origins {
                if !ceiling.check_header_env_for(&binding.name, &origin.to_string()).is_allow() {
                    out.push(format!("secret: {} to {origin}", binding.name));
                }
            }
        }
        for var in self.env_allowed.iter().filter(|v| !ceiling.env_allowed.contains(*v)) {
            out.push(format!("environment variable: {var}"));
        }
        for (program, rule) in &self.commands {
            let ceiling_has = ceiling.commands.get(program);
            if ceiling_has.is_none() && ceiling.commands_fallback == Fallback::Deny {
                out.push(format!("program: {program}"));
            }
            for var in &rule.envs {
                let allowed = ceiling_has.is_some_and(|r| r.envs.contains(var)) || ceiling.env_allowed.contains(var);
                if !allowed {
                    out.push(format!("environment variable for {program}: {var}"));
                }
            }
        }
        out
    }

    /// `own` (this policy's decision), or the ceiling's when that one is stricter.
    pub(super) fn bounded(&self, own: Decision, ceiling: impl FnOnce(&AccessPolicy) -> Decision) -> Decision {
        let Some(c) = &self.ceiling else { return own };
        let rank = |d: &Decision| match d {
            Decision::Deny(_) => 0,
            Decision::Ask(_) => 1,
            Decision::Allow(_) => 2,
        };
        let theirs = ceiling(c);
        if rank(&theirs) >= rank(&own) {
            return own;
        }
        match theirs {
            Decision::Deny(r) => Decision::Deny(format!("{r} (the operator's policy, which bounds this one)")),
            Decision::Ask(r) => Decision::Ask(format!("{r} (the operator's policy, which bounds this one)")),
            allow => allow,
        }
    }
}
