//! Workspace-relative paths, normalised lexically.
//!
//! Every path a tool names is parsed into a [`WorkspacePath`] before any rule or backend sees it.
//! Parsing never touches a file system: `.` segments and a trailing `/` are dropped, `a/../b`
//! becomes `b`, and every spelling that could mean something outside the workspace — or that is a
//! known trick — is rejected with a reason that says how to write the path instead.

use unicode_normalization::UnicodeNormalization;

/// Longest accepted path, in bytes (Linux `PATH_MAX`).
pub const MAX_PATH_BYTES: usize = 4096;
/// Longest accepted path component, in bytes (Linux `NAME_MAX`).
pub const MAX_COMPONENT_BYTES: usize = 255;

/// Why a path was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// The path contains a NUL byte.
    #[error("path {0:?} contains a NUL byte; remove it")]
    Nul(String),
    /// The path is absolute.
    #[error("path {0:?} is absolute; paths are relative to the workspace root (e.g. \"src/main.rs\")")]
    Absolute(String),
    /// The path is a URL.
    #[error("path {0:?} is a URL, not a path; name the file relative to the workspace root")]
    Url(String),
    /// The path starts with `~`.
    #[error("path {0:?} starts with '~', which is not expanded; paths are relative to the workspace root")]
    Tilde(String),
    /// The path contains a backslash.
    #[error("path {0:?} contains a backslash; use '/' to separate components")]
    Backslash(String),
    /// The path contains an empty component (`a//b`).
    #[error("path {0:?} contains an empty component ('//'); write each separator once")]
    EmptySegment(String),
    /// `..` climbs above the workspace root.
    #[error("path {0:?} escapes the workspace through '..'; name a path inside the workspace")]
    Escapes(String),
    /// The path or one of its components is too long.
    #[error("path {0:?} is too long (at most {MAX_PATH_BYTES} bytes, {MAX_COMPONENT_BYTES} per component)")]
    TooLong(String),
}

/// A normalised path relative to the workspace root. The root itself is the empty path,
/// displayed as `.`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct WorkspacePath(String);

impl WorkspacePath {
    /// The workspace root.
    pub fn root() -> Self {
        Self(String::new())
    }

    /// Parse and normalise a path a tool or a config named.
    pub fn parse(input: &str) -> Result<Self, PathError> {
        let owned = || {
            let mut shown: String = input.chars().take(120).collect();
            if shown.len() < input.len() {
                shown.push('…');
            }
            shown
        };
        if input.contains('\0') {
            return Err(PathError::Nul(owned()));
        }
        if input.len() > MAX_PATH_BYTES {
            return Err(PathError::TooLong(owned()));
        }
        if input.contains("://") {
            return Err(PathError::Url(owned()));
        }
        let bytes = input.as_bytes();
        let drive = bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':';
        if input.starts_with('/') || drive {
            return Err(PathError::Absolute(owned()));
        }
        if input.contains('\\') {
            return Err(PathError::Backslash(owned()));
        }
        if input == "~" || input.starts_with("~/") {
            return Err(PathError::Tilde(owned()));
        }
        // A single trailing '/' is harmless ("src/"); an empty component anywhere else is a trick.
        let body = input.strip_suffix('/').unwrap_or(input);
        let mut parts: Vec<&str> = Vec::new();
        if !body.is_empty() {
            for segment in body.split('/') {
                match segment {
                    "" => return Err(PathError::EmptySegment(owned())),
                    "." => {}
                    ".." => {
                        if parts.pop().is_none() {
                            return Err(PathError::Escapes(owned()));
                        }
                    }
                    s if s.len() > MAX_COMPONENT_BYTES => return Err(PathError::TooLong(owned())),
                    s => parts.push(s),
                }
            }
        }
        // What the input starts with after normalisation must pass the same checks as the
        // input did (`a/../~/x` is `~/x`, `./c:x` is `c:x`), so the normal form re-parses to itself.
        if let Some(first) = parts.first() {
            let b = first.as_bytes();
            if *first == "~" {
                return Err(PathError::Tilde(owned()));
            }
            if b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':' {
                return Err(PathError::Absolute(owned()));
            }
        }
        Ok(Self(parts.join("/")))
    }

    /// The normalised text; empty for the root.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Text for messages: `.` for the root.
    pub fn display(&self) -> &str {
        if self.0.is_empty() { "." } else { &self.0 }
    }

    /// Whether this is the workspace root.
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    /// The components, root first.
    pub fn components(&self) -> impl Iterator<Item = &str> {
        self.0.split('/').filter(|s| !s.is_empty())
    }

    /// Number of components (0 for the root).
    pub fn depth(&self) -> usize {
        self.components().count()
    }

    /// Whether `prefix` is this path or one of its ancestors, compared by whole components
    /// (`src` is a prefix of `src/lib.rs`, not of `src_gen/x`).
    pub fn starts_with(&self, prefix: &WorkspacePath) -> bool {
        prefix.is_root()
            || self.0 == prefix.0
            || (self.0.starts_with(&prefix.0) && self.0.as_bytes().get(prefix.0.len()) == Some(&b'/'))
    }

    /// The parent directory (`None` for the root).
    pub fn parent(&self) -> Option<WorkspacePath> {
        if self.is_root() {
            return None;
        }
        Some(Self(self.0.rsplit_once('/').map(|(p, _)| p.to_owned()).unwrap_or_default()))
    }

    /// The last component (`None` for the root).
    pub fn file_name(&self) -> Option<&str> {
        self.components().last()
    }

    /// A child of this path. `name` must be a single plain component.
    pub fn join(&self, name: &str) -> Result<WorkspacePath, PathError> {
        if name.contains('/') || name.is_empty() || name == "." || name == ".." {
            return Err(PathError::EmptySegment(name.to_owned()));
        }
        if self.is_root() { Self::parse(name) } else { Self::parse(&format!("{}/{name}", self.0)) }
    }

    /// The Unicode NFC form, used for matching rules so that an NFD spelling of a path cannot
    /// slip past a rule written in NFC (they name the same file on some file systems).
    pub fn nfc(&self) -> WorkspacePath {
        Self(self.0.nfc().collect())
    }
}

impl std::fmt::Display for WorkspacePath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises() {
        for (input, expected) in [
            ("", ""),
            (".", ""),
            ("./", ""),
            ("src", "src"),
            ("src/", "src"),
            ("./src/./lib.rs", "src/lib.rs"),
            ("src/.", "src"),
            ("a/../b", "b"),
            ("a/b/../../c", "c"),
            ("a/..", ""),
            ("%2e%2e/etc", "%2e%2e/etc"),
            ("...", "..."),
            ("~user", "~user"),
        ] {
            assert_eq!(WorkspacePath::parse(input).unwrap().as_str(), expected, "{input:?}");
        }
    }

    #[test]
    fn rejects_tricks() {
        let long = "a/".repeat(3000);
        let long_component = "x".repeat(256);
        for (input, needle) in [
            ("/etc/passwd", "absolute"),
            ("C:/Windows", "absolute"),
            ("..", "escapes"),
            ("a/../..", "escapes"),
            ("../x", "escapes"),
            ("a//b", "empty component"),
            ("//etc", "absolute"),
            ("a\\..\\..\\etc", "backslash"),
            ("a\0b", "NUL"),
            ("~/.ssh/id_rsa", "'~'"),
            ("~", "'~'"),
            ("file:///etc/passwd", "URL"),
            (long.as_str(), "too long"),
            (long_component.as_str(), "too long"),
        ] {
            let err = WorkspacePath::parse(input).unwrap_err().to_string();
            assert!(err.contains(needle), "{input:?}: {err}");
        }
    }

    #[test]
    fn prefixes_are_component_aware() {
        let p = |s| WorkspacePath::parse(s).unwrap();
        assert!(p("src/lib.rs").starts_with(&p("src")));
        assert!(p("src").starts_with(&p("src")));
        assert!(!p("src_gen/x").starts_with(&p("src")));
        assert!(!p("srcx").starts_with(&p("src")));
        assert!(p("anything").starts_with(&WorkspacePath::root()));
        assert_eq!(p("a/b/c").parent().unwrap().as_str(), "a/b");
        assert_eq!(p("a").parent().unwrap(), WorkspacePath::root());
        assert_eq!(p("a/b").file_name(), Some("b"));
        assert_eq!(p("a").join("b").unwrap().as_str(), "a/b");
        assert!(p("a").join("..").is_err());
        assert_eq!(p("cafe\u{301}").nfc().as_str(), "caf\u{e9}");
    }
}
