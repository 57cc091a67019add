//! Why a policy configuration does not compile ([`PolicyConfigError`]: the key and a
//! [`PolicyProblem`]), why a URL cannot be compared with network rules ([`UrlError`]), and why
//! an allow rule's header conditions refuse a request.

use super::PathError;
use super::network::METHODS;

/// An error in a policy configuration: the key (relative to the tool table) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {problem}")]
pub struct PolicyConfigError {
    /// The offending key, e.g. `access.filesystem[1].path`.
    pub key: String,
    /// What is wrong and how to fix it (boxed: a glob or URL parser's error is large, and this
    /// travels inside every `RuntimeError`).
    pub problem: Box<PolicyProblem>,
}

/// What is wrong at a [`PolicyConfigError`]'s key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyProblem {
    /// A filesystem rule's path is not a workspace path.
    #[error(transparent)]
    Path(#[from] PathError),
    /// A network rule does not compile.
    #[error(transparent)]
    NetRule(#[from] NetRuleError),
    /// A sensitive path is not a valid pattern.
    #[error(transparent)]
    SensitivePath(#[from] SensitivePathError),
    /// A command table names the empty program.
    #[error("a program name must not be empty")]
    EmptyProgram,
    /// An argument pattern has `**` before its last element.
    #[error("'**' may only be the last element (it matches any remaining arguments)")]
    DoubleStarNotLast,
    /// An `access.secrets` entry does not compile.
    #[error("{0}")]
    Secret(String),
}

/// Why a `sensitive_paths` entry (or the set of them) does not compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SensitivePathError {
    /// The entry is not a valid glob.
    #[error("sensitive path {pattern:?} is not a valid glob ({source})")]
    Glob {
        /// The entry as written.
        pattern: String,
        /// What the glob parser said.
        source: globset::Error,
    },
    /// The patterns do not compile into one set.
    #[error("{0}")]
    Set(globset::Error),
}

/// Why a `network.allow` / `network.deny` rule does not compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetRuleError {
    /// The rule's URL does not parse.
    #[error("{url:?} is not an absolute URL ({source})")]
    NotAbsolute {
        /// The URL as written.
        url: String,
        /// What the URL parser said.
        source: url::ParseError,
    },
    /// The rule's URL parses but cannot be compared with requests.
    #[error("{url:?}: {source}")]
    Url {
        /// The URL as written.
        url: String,
        /// What is wrong with it.
        source: UrlError,
    },
    /// The rule's path has something servers read differently.
    #[error("{url:?} has {what} in its path, which servers read differently; write the path in its plain form")]
    AmbiguousPrefix {
        /// The URL as written.
        url: String,
        /// What, e.g. `a ';' parameter`.
        what: &'static str,
    },
    /// `methods = []`.
    #[error("`methods` is empty: list the methods it covers, or leave it out for all")]
    NoMethods,
    /// A method not in [`METHODS`].
    #[error("method {method:?} is not one of {}", METHODS.join(", "))]
    Method {
        /// The method as written.
        method: String,
    },
    /// `paths = []`.
    #[error("`paths` is empty: list path patterns, or leave it out for every path")]
    NoPaths,
    /// A path pattern that does not start with `/`.
    #[error("path pattern {pattern:?} must be absolute, e.g. \"/repos/*/issues/**\"")]
    RelativePattern {
        /// The pattern as written.
        pattern: String,
    },
    /// A path pattern with something servers read differently (an encoded `/`, a `;`, …).
    #[error(transparent)]
    PatternPath(UrlError),
    /// A path pattern that is not a valid glob.
    #[error("path pattern {pattern:?} is not a valid pattern ({source})")]
    BadPattern {
        /// The pattern as written.
        pattern: String,
        /// What the glob parser said.
        source: globset::Error,
    },
    /// `headers` on a deny rule.
    #[error("`headers` conditions belong on allow rules; a deny rule covers a request whatever its headers")]
    HeadersOnDeny,
}

/// Why a parsed URL (a rule's or a request's) or a path cannot be put in the form rules and
/// requests are compared in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    /// A scheme other than `http` and `https`.
    #[error("scheme '{scheme}' is not supported; only http and https URLs are")]
    Scheme {
        /// The scheme.
        scheme: String,
    },
    /// The URL has no host.
    #[error("the URL has no host")]
    NoHost,
    /// A user name or password in the URL.
    #[error("URLs with credentials (user@host) are not allowed; send them in a header")]
    Credentials,
    /// An encoded `/` or `\` in the path.
    #[error(
        "the path {path:?} has an encoded '{separator}' (%{escape}), which servers read differently; send the path unencoded"
    )]
    EncodedSeparator {
        /// The path.
        path: String,
        /// `/` or `\`.
        separator: char,
        /// The two hex digits as written, e.g. `2F`.
        escape: String,
    },
    /// Something else in the path servers read differently (see `canonical_path`).
    #[error("the path {path:?} has {what}, which servers read differently; send the path in its plain form")]
    AmbiguousPath {
        /// The path.
        path: String,
        /// What, e.g. `an empty segment ('//')`.
        what: &'static str,
    },
}

/// Why an allow rule's header conditions refuse a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum HeaderError {
    /// A required header has another value.
    #[error("header {name} is {value:?}; the rule requires {want:?}")]
    WrongValue {
        /// The header's name (lower case).
        name: String,
        /// The value sent.
        value: String,
        /// The value required.
        want: String,
    },
    /// A required header is missing.
    #[error("the rule requires header {name}: {want}; add it")]
    Missing {
        /// The header's name (lower case).
        name: String,
        /// The value required.
        want: String,
    },
    /// A forbidden header is present.
    #[error("the rule forbids header {name}; remove it")]
    Forbidden {
        /// The header's name (lower case).
        name: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::network::{NetRule, UrlPrefix};
    use crate::policy::{AccessConfig, AccessPolicy, HeaderRules, HttpCheck, NetRuleConfig, NetRuleTable};

    fn compile(table: NetRuleTable, allow: bool) -> NetRuleError {
        NetRule::compile(&NetRuleConfig::Rule(table), allow, "k".into()).unwrap_err()
    }

    fn table(url: &str) -> NetRuleTable {
        NetRuleTable { url: url.into(), ..NetRuleTable::default() }
    }

    #[test]
    fn url_errors_are_variants_with_the_same_words() {
        let e = UrlPrefix::parse("ftp://x").unwrap_err();
        assert!(matches!(&e, NetRuleError::Url { source: UrlError::Scheme { scheme }, .. } if scheme == "ftp"));
        assert_eq!(e.to_string(), r#""ftp://x": scheme 'ftp' is not supported; only http and https URLs are"#);
        let e = UrlPrefix::parse("not a url").unwrap_err();
        let NetRuleError::NotAbsolute { source, .. } = &e else { panic!("{e:?}") };
        assert_eq!(e.to_string(), format!(r#""not a url" is not an absolute URL ({source})"#));
        let e = UrlPrefix::parse("https://u:p@example.com/").unwrap_err();
        assert!(matches!(e, NetRuleError::Url { source: UrlError::Credentials, .. }));
        assert_eq!(
            e.to_string(),
            r#""https://u:p@example.com/": URLs with credentials (user@host) are not allowed; send them in a header"#
        );
        let e = UrlPrefix::parse("https://example.com/a%2fb").unwrap_err();
        let NetRuleError::Url { source: UrlError::EncodedSeparator { separator: '/', escape, .. }, .. } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(escape, "2f");
        assert_eq!(
            e.to_string(),
            r#""https://example.com/a%2fb": the path "/a%2fb" has an encoded '/' (%2f), which servers read differently; send the path unencoded"#
        );
    }

    #[test]
    fn rule_errors_are_variants_with_the_same_words() {
        let e = NetRule::compile(&NetRuleConfig::Url("https://example.com/a;b".into()), true, "k".into()).unwrap_err();
        assert_eq!(e, NetRuleError::AmbiguousPrefix { url: "https://example.com/a;b".into(), what: "a ';' parameter" });
        assert_eq!(
            e.to_string(),
            r#""https://example.com/a;b" has a ';' parameter in its path, which servers read differently; write the path in its plain form"#
        );
        let e = compile(NetRuleTable { methods: Some(vec![]), ..table("https://example.com") }, true);
        assert_eq!(e, NetRuleError::NoMethods);
        assert_eq!(e.to_string(), "`methods` is empty: list the methods it covers, or leave it out for all");
        let e = compile(NetRuleTable { methods: Some(vec!["get".into(), "FETCH".into()]), ..table("https://x") }, true);
        assert_eq!(e, NetRuleError::Method { method: "FETCH".into() });
        assert_eq!(e.to_string(), r#"method "FETCH" is not one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"#);
        let e = compile(NetRuleTable { paths: Some(vec![]), ..table("https://x") }, true);
        assert_eq!(e, NetRuleError::NoPaths);
        assert_eq!(e.to_string(), "`paths` is empty: list path patterns, or leave it out for every path");
        let e = compile(NetRuleTable { paths: Some(vec!["repos/**".into()]), ..table("https://x") }, true);
        assert_eq!(e, NetRuleError::RelativePattern { pattern: "repos/**".into() });
        assert_eq!(e.to_string(), r#"path pattern "repos/**" must be absolute, e.g. "/repos/*/issues/**""#);
        let e = compile(NetRuleTable { paths: Some(vec!["/a//b".into()]), ..table("https://x") }, true);
        assert!(matches!(e, NetRuleError::PatternPath(UrlError::AmbiguousPath { .. })), "{e:?}");
        assert_eq!(
            e.to_string(),
            r#"the path "/a//b" has an empty segment ('//'), which servers read differently; send the path in its plain form"#
        );
        let e = compile(NetRuleTable { paths: Some(vec!["/a%5Cb".into()]), ..table("https://x") }, true);
        assert!(matches!(e, NetRuleError::PatternPath(UrlError::EncodedSeparator { separator: '\\', .. })));
        let e = compile(NetRuleTable { paths: Some(vec!["/a/[b".into()]), ..table("https://x") }, true);
        let NetRuleError::BadPattern { pattern, source } = &e else { panic!("{e:?}") };
        assert_eq!(pattern, "/a/[b");
        assert_eq!(e.to_string(), format!(r#"path pattern "/a/[b" is not a valid pattern ({source})"#));
        let e = compile(NetRuleTable { headers: Some(HeaderRules::default()), ..table("https://x") }, false);
        assert_eq!(e, NetRuleError::HeadersOnDeny);
        assert_eq!(
            e.to_string(),
            "`headers` conditions belong on allow rules; a deny rule covers a request whatever its headers"
        );
    }

    #[test]
    fn policy_config_errors_keep_their_words() {
        let cfg: AccessConfig =
            toml::from_str(r#"network = { deny = [{ url = "https://x", methods = [] }] }"#).unwrap();
        let e = AccessPolicy::from_config(None, Some(&cfg)).unwrap_err();
        assert_eq!(*e.problem, PolicyProblem::NetRule(NetRuleError::NoMethods));
        assert_eq!(
            e.to_string(),
            "access.network.deny[0]: `methods` is empty: list the methods it covers, or leave it out for all"
        );
        let cfg: AccessConfig = toml::from_str(r#"sensitive_paths = ["a[b"]"#).unwrap();
        let e = AccessPolicy::from_config(None, Some(&cfg)).unwrap_err();
        let PolicyProblem::SensitivePath(SensitivePathError::Glob { pattern, source }) = &*e.problem else {
            panic!("{e:?}")
        };
        assert_eq!(pattern, "a[b");
        assert_eq!(
            e.to_string(),
            format!(r#"access.sensitive_paths[0]: sensitive path "a[b" is not a valid glob ({source})"#)
        );
        let cfg: AccessConfig = toml::from_str(r#"commands."" = {}"#).unwrap();
        let e = AccessPolicy::from_config(None, Some(&cfg)).unwrap_err();
        assert_eq!(*e.problem, PolicyProblem::EmptyProgram);
        assert_eq!(e.to_string(), "access.commands: a program name must not be empty");
    }

    #[test]
    fn header_refusals_keep_their_words() {
        let cfg: AccessConfig = toml::from_str(
            r#"network = { allow = [{ url = "https://x", headers = { require = { Accept = "a/b" }, forbid = ["X-Y"] } }] }"#,
        )
        .unwrap();
        let policy = AccessPolicy::from_config(None, Some(&cfg)).unwrap();
        let deny = |headers: &[(String, String)]| {
            policy.check_request(&HttpCheck { method: "GET", url: "https://x/p", headers }).reason().to_owned()
        };
        let h = |n: &str, v: &str| (n.to_owned(), v.to_owned());
        let tail = r#"(access.network.allow[0], "https://x with Accept: a/b without X-Y")"#;
        assert_eq!(
            deny(&[]),
            format!("Access denied: GET https://x/p: the rule requires header accept: a/b; add it {tail}")
        );
        assert_eq!(
            deny(&[h("Accept", "c/d")]),
            format!(r#"Access denied: GET https://x/p: header accept is "c/d"; the rule requires "a/b" {tail}"#)
        );
        assert_eq!(
            deny(&[h("accept", "a/b"), h("x_y", "1")]),
            format!("Access denied: GET https://x/p: the rule forbids header x-y; remove it {tail}")
        );
        assert!(
            policy
                .check_request(&HttpCheck { method: "GET", url: "https://x/p", headers: &[h("accept", "a/b")] })
                .is_allow()
        );
    }
}
