//! Decisions about subprocesses: which host variables they receive ([`AccessPolicy::check_env`])
//! and which programs with which arguments a tool may run ([`AccessPolicy::check_process`]).

use super::{AccessPolicy, Capability, Decision, Fallback, is_base_env};

impl AccessPolicy {
    /// Decide whether every subprocess of the tool (a stdio tool itself, any `process.run`) may
    /// receive host variable `name`: base variables and `access.env`. A command's own `envs`
    /// are for that command only ([`check_process`](Self::check_process)).
    pub fn check_env(&self, name: &str) -> Decision {
        let own = self.check_env_own(name);
        self.bounded(own, |c| c.check_env(name))
    }

    fn check_env_own(&self, name: &str) -> Decision {
        if is_base_env(name) {
            Decision::Allow(format!("{name} is a base variable every subprocess receives"))
        } else if self.env_allowed.contains(name) {
            Decision::Allow(format!("{name} allowed by an env rule"))
        } else {
            Decision::Deny(format!(
                "Access denied: environment variable {name} may not be forwarded; add it to the command's envs (or access.env)"
            ))
        }
    }

    /// Decide a `process.run` of `program` with `args`, forwarding `envs`.
    pub fn check_process(&self, program: &str, args: &[String], envs: &[String]) -> Decision {
        let own = self.check_process_own(program, args, envs);
        self.bounded(own, |c| c.check_process(program, args, envs))
    }

    fn check_process_own(&self, program: &str, args: &[String], envs: &[String]) -> Decision {
        if program.is_empty() {
            return Decision::Deny("Access denied: the program name is empty".into());
        }
        let Some(rule) = self.commands.get(program) else {
            // A program without a rule of its own may only receive what every subprocess of
            // the tool may (an answer to the inquiry below must not hand it another command's
            // or the network's secrets).
            if let Some(var) = envs.iter().find(|v| !is_base_env(v) && !self.env_allowed.contains(*v)) {
                return Decision::Deny(format!(
                    "Access denied: '{program}' may not receive {var}; give '{program}' a rule with commands.{}.envs = [\"{var}\"]",
                    toml_key(program)
                ));
            }
            return match self.commands_fallback {
                Fallback::Deny => Decision::Deny(format!(
                    "Access denied: running '{program}' is not allowed; add it to the tool's commands (e.g. commands.{} = {{ args = [[\"**\"]] }})",
                    toml_key(program)
                )),
                Fallback::Ask => {
                    Decision::Ask(format!("running '{program}' is not covered by the tool's sandbox configuration"))
                }
            };
        };
        if let Some(patterns) = &rule.args
            && !patterns.iter().any(|p| args_match(p, args))
        {
            let shown: Vec<String> = patterns.iter().map(|p| format!("{p:?}")).collect();
            return Decision::Deny(format!(
                "Access denied: '{program}' may not run with arguments {args:?}; allowed: {}",
                if shown.is_empty() { "none".into() } else { shown.join(", ") }
            ));
        }
        for var in envs {
            if !rule.envs.contains(var) && !self.env_allowed.contains(var) && !is_base_env(var) {
                return Decision::Deny(format!(
                    "Access denied: '{program}' may not receive {var}; add it to commands.{program}.envs"
                ));
            }
        }
        if let Some(local) = program.strip_prefix("./") {
            match self.check_fs_str(Capability::Execute, local) {
                Decision::Allow(_) => {}
                other => return other,
            }
        }
        Decision::Allow(format!("running '{program}' allowed by commands.{program}"))
    }
}

/// Sudo-style argument matching: equal element by element, `*` matches one argument, a final
/// `**` matches any remaining arguments (including none).
fn args_match(pattern: &[String], args: &[String]) -> bool {
    match pattern.split_first() {
        None => args.is_empty(),
        Some((p, _)) if p == "**" => true,
        Some((p, rest)) => match args.split_first() {
            Some((a, args_rest)) => (p == "*" || p == a) && args_match(rest, args_rest),
            None => false,
        },
    }
}

/// `program` as a TOML key, as a hint writes it: bare when TOML allows (`git`), else quoted
/// (`"/usr/bin/python3"`), so that the hint can be pasted as it is.
pub(super) fn toml_key(program: &str) -> String {
    let bare = !program.is_empty() && program.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare { program.to_owned() } else { serde_json::to_string(program).unwrap_or_else(|_| format!("{program:?}")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_patterns() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert!(args_match(&s(&["check", "**"]), &s(&["check"])));
        assert!(args_match(&s(&["check", "**"]), &s(&["check", "-p", "x"])));
        assert!(!args_match(&s(&["check", "**"]), &s(&["build"])));
        assert!(args_match(&s(&["*", "x"]), &s(&["a", "x"])));
        assert!(!args_match(&s(&["status"]), &s(&["status", "-s"])));
        assert!(args_match(&s(&[]), &s(&[])));
    }
}
