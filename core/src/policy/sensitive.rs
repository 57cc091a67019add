//! Sensitive paths (RFD 075): the patterns compiled into one glob set — only when a path could
//! match one. Compiling the set is a regex build, most of what a cold process's first policy
//! cost; most paths a call touches cannot match any pattern, which a test on their names (the
//! literal start and end of each pattern's last component) shows without it.

use std::sync::{Arc, OnceLock};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use super::WorkspacePath;
use super::error::SensitivePathError;

/// A test on one file name that every sensitive path's last component passes: from
/// [`AccessPolicy::sensitive_name_filter`](super::AccessPolicy::sensitive_name_filter).
#[derive(Debug, Clone)]
pub struct SensitiveNames(Arc<[NameBounds]>);

impl SensitiveNames {
    /// Whether a path whose last component is `name` may be sensitive. A name that is not
    /// ASCII always may (the policy compares the NFC form, which this test does not make).
    pub fn may_be(&self, name: &str) -> bool {
        !name.is_ascii() || self.0.iter().any(|b| b.admits(name))
    }
}

/// What every name a pattern's last component matches starts and ends with (the text before its
/// first wildcard and after its last), or the whole name when it has none.
#[derive(Debug, Clone)]
struct NameBounds {
    prefix: String,
    suffix: String,
    exact: bool,
}

impl NameBounds {
    /// The bounds of `pattern`'s last component, or `None` when it has none that hold: a last
    /// component with `**`, or a pattern with classes, alternatives or escapes (whose last
    /// component cannot be told from the text after its last `/`).
    fn of(pattern: &str) -> Option<Self> {
        if pattern.contains(['[', ']', '{', '}', '\\']) {
            return None;
        }
        let last = pattern.trim_end_matches('/').rsplit('/').next().unwrap_or(pattern);
        if last.is_empty() || last.contains("**") {
            return None;
        }
        let wild = |c: char| c == '*' || c == '?';
        Some(match (last.find(wild), last.rfind(wild)) {
            (Some(first), Some(end)) => {
                Self { prefix: last[..first].to_owned(), suffix: last[end + 1..].to_owned(), exact: false }
            }
            _ => Self { prefix: last.to_owned(), suffix: String::new(), exact: true },
        })
    }

    fn admits(&self, name: &str) -> bool {
        if self.exact {
            return name == self.prefix;
        }
        name.len() >= self.prefix.len() + self.suffix.len()
            && name.starts_with(&self.prefix)
            && name.ends_with(&self.suffix)
    }
}

/// The sensitive patterns of a policy, compiled on first use.
#[derive(Debug, Clone)]
pub(super) struct Sensitive {
    /// Where home lies in the workspace, for the `~/…` patterns (`None`: they do not apply).
    home: Option<WorkspacePath>,
    /// The names a sensitive path's components must include one of; `None`: any name may be.
    names: Option<SensitiveNames>,
    /// The compiled set, shared by the clones; `None` inside when it cannot be compiled (then
    /// every path is sensitive: asked, never allowed silently).
    set: Arc<OnceLock<Option<GlobSet>>>,
}

impl Sensitive {
    /// `patterns` with home at `home`. Each glob is parsed (a bad one is the error); the set is
    /// compiled when a path first needs it.
    pub(super) fn new(patterns: &[String], home: Option<WorkspacePath>) -> Result<Self, SensitivePathError> {
        for pattern in patterns {
            check(pattern, home.as_ref())?;
        }
        Ok(Self::checked(patterns, home))
    }

    /// `patterns` with home at `home`, each of them already [`check`]ed with that home.
    pub(super) fn checked(patterns: &[String], home: Option<WorkspacePath>) -> Self {
        let names: Option<Vec<NameBounds>> = patterns.iter().map(|p| NameBounds::of(p)).collect();
        Self { home, names: names.map(|n| SensitiveNames(n.into())), set: Arc::default() }
    }

    /// These patterns with home at `home`: only the `~/…` ones, whose glob is where home lies,
    /// are parsed again.
    pub(super) fn with_home(
        &self,
        patterns: &[String],
        home: Option<WorkspacePath>,
    ) -> Result<Self, SensitivePathError> {
        if home == self.home {
            return Ok(self.clone());
        }
        for pattern in patterns.iter().filter(|p| p.starts_with("~/")) {
            check(pattern, home.as_ref())?;
        }
        Ok(Self { home, names: self.names.clone(), set: Arc::default() })
    }

    /// The name test of these patterns, if they have one.
    pub(super) fn names(&self) -> Option<&SensitiveNames> {
        self.names.as_ref()
    }

    /// Whether `path` (NFC, not the root) or a directory it lies in matches one of `patterns`
    /// (the ones this was made from).
    pub(super) fn matches(&self, patterns: &[String], path: &str) -> bool {
        if let Some(names) = &self.names
            && !path.split('/').any(|name| names.may_be(name))
        {
            return false;
        }
        match self.set.get_or_init(|| sensitive_set(patterns, self.home.as_ref()).ok()) {
            Some(set) => set.is_match(path) || path.match_indices('/').any(|(end, _)| set.is_match(&path[..end])),
            None => true,
        }
    }
}

/// `pattern` relative to the workspace: a `~/…` one below home (`None` without a home in it),
/// others without a leading `./` or a trailing `/`.
fn expand(pattern: &str, home: Option<&WorkspacePath>) -> Option<String> {
    match pattern.strip_prefix("~/") {
        Some(rest) => match home {
            Some(h) if h.is_root() => Some(rest.to_owned()),
            Some(h) => Some(format!("{}/{rest}", h.as_str())),
            None => None,
        },
        None => Some(pattern.trim_start_matches("./").trim_end_matches('/').to_owned()),
    }
}

/// Whether `pattern` is a glob (a `~/…` one with home at `home`, or below the workspace's root
/// when home is not in it).
pub(super) fn check(pattern: &str, home: Option<&WorkspacePath>) -> Result<(), SensitivePathError> {
    // A `~/…` pattern is checked whether or not home is in the workspace.
    let expanded = expand(pattern, home).unwrap_or_else(|| pattern[2..].to_owned());
    glob(pattern, &expanded).map(drop)
}

fn glob(pattern: &str, expanded: &str) -> Result<globset::Glob, SensitivePathError> {
    GlobBuilder::new(expanded)
        .literal_separator(true)
        .build()
        .map_err(|source| SensitivePathError::Glob { pattern: pattern.to_owned(), source })
}

fn sensitive_set(patterns: &[String], home: Option<&WorkspacePath>) -> Result<GlobSet, SensitivePathError> {
    // Every tool of a workspace has the same patterns and home, so a set is compiled once per
    // process and cloned (its automata are shared). At most `KEPT` are kept.
    type Key = (Vec<String>, Option<String>);
    const KEPT: usize = 64;
    static SETS: OnceLock<std::sync::Mutex<std::collections::HashMap<Key, GlobSet>>> = OnceLock::new();
    let key = (patterns.to_vec(), home.map(|h| h.as_str().to_owned()));
    let sets = SETS.get_or_init(Default::default);
    if let Some(set) = sets.lock().ok().and_then(|kept| kept.get(&key).cloned()) {
        return Ok(set);
    }
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        // What lies beneath a matching directory is sensitive too: `matches` asks of the
        // path's directories as well, rather than compiling a `PATTERN/**` beside each one.
        if let Some(expanded) = expand(pattern, home) {
            builder.add(glob(pattern, &expanded)?);
        }
    }
    let set = builder.build().map_err(SensitivePathError::Set)?;
    if let Ok(mut kept) = sets.lock()
        && kept.len() < KEPT
    {
        kept.insert(key, set.clone());
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_bounds_admit_every_name_the_last_component_matches() {
        let cases = [
            (".env", &[".env"][..], &["env", ".envx", "x.env"][..]),
            (".env.*", &[".env.", ".env.local"], &[".env", "env.local"]),
            ("*.pem", &[".pem", "key.pem"], &["key.pem.bak", "pem"]),
            ("id_?sa*", &["id_rsa", "id_dsa.pub"], &["id_rs", "xid_rsa"]),
            ("a*b*c", &["abc", "a-b-c", "abbc"], &["ab", "bc", "acb"]),
        ];
        for (pattern, yes, no) in cases {
            let b = NameBounds::of(&format!("**/{pattern}")).unwrap();
            let glob = GlobBuilder::new(pattern).literal_separator(true).build().unwrap().compile_matcher();
            for name in yes {
                assert!(glob.is_match(name) && b.admits(name), "{pattern} {name}");
            }
            for name in no {
                assert!(!glob.is_match(name), "{pattern} {name}");
            }
        }
        // What the name of a last component cannot be told from: no bounds.
        for pattern in ["secrets/**", "x/{a/b,c}", "x[/]y", "a\\*", ""] {
            assert!(NameBounds::of(pattern).is_none(), "{pattern}");
        }
    }

    /// The meaning before the name test and the directory walk: each pattern and `PATTERN/**`.
    fn reference(patterns: &[String], home: Option<&WorkspacePath>) -> GlobSet {
        let mut builder = GlobSetBuilder::new();
        for pattern in patterns {
            if let Some(e) = expand(pattern, home) {
                for g in [e.clone(), format!("{e}/**")] {
                    builder.add(GlobBuilder::new(&g).literal_separator(true).build().unwrap());
                }
            }
        }
        builder.build().unwrap()
    }

    #[test]
    fn every_path_is_judged_as_each_pattern_and_everything_beneath_it() {
        let patterns: Vec<String> = [
            "~/.ssh",
            "~/.aws/credentials",
            "**/.env",
            "**/.env.*",
            "*.pem",
            "deploy/id_?sa*",
            "secrets",
            "a/*/b",
            "x/{a/b,c}",
        ]
        .map(String::from)
        .to_vec();
        let names =
            [".env", ".env.x", ".envrc", "a", "b", "c", ".ssh", "id_rsa", "key.pem", "x", "secrets", "deploy", "ënv"];
        let mut paths: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        for _ in 0..2 {
            let deeper: Vec<String> =
                paths.iter().flat_map(|p| names.iter().map(move |n| format!("{p}/{n}"))).collect();
            paths.extend(deeper);
        }
        for home in [None, Some(WorkspacePath::root()), Some(WorkspacePath::parse("a").unwrap())] {
            // With the pattern the name test cannot hold, and without it (the test then applies).
            for set in [&patterns[..], &patterns[..patterns.len() - 1]] {
                let s = Sensitive::new(set, home.clone()).unwrap();
                assert_eq!(s.names().is_some(), set.len() < patterns.len());
                let meant = reference(set, home.as_ref());
                for path in &paths {
                    assert_eq!(s.matches(set, path), meant.is_match(path), "{path} home {home:?}");
                }
            }
        }
    }

    #[test]
    fn no_set_is_compiled_for_a_path_no_pattern_can_match() {
        let patterns: Vec<String> = ["**/.env", "**/.env.*"].map(String::from).to_vec();
        let s = Sensitive::new(&patterns, None).unwrap();
        assert!(!s.matches(&patterns, "src/main.rs") && !s.matches(&patterns, "notes.txt"));
        assert!(s.set.get().is_none(), "nothing compiled for names no pattern admits");
        assert!(s.matches(&patterns, "deploy/.env.prod") && s.matches(&patterns, ".env/inner/file"));
        assert!(!s.matches(&patterns, "deploy/.envrc"), "a name that passes the test is still matched whole");
        assert!(s.set.get().is_some());
    }
}
