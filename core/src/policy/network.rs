//! Network rules (issue 26): what a tool may send where.
//!
//! A rule is a URL prefix — it pins scheme, host and port; its path matches at segment boundaries
//! — written as a string, or as a table that also names the methods, path patterns and headers
//! it allows:
//!
//! ```toml
//! network = { allow = [
//!   "https://example.com/docs",
//!   { url = "https://api.github.com/repos/o/r", methods = ["GET"], paths = ["/repos/o/r/issues/**"],
//!     headers = { require = { accept = "application/vnd.github+json" }, forbid = ["x-http-method-override"] } },
//! ], deny = [{ url = "https://api.github.com/repos/o/r/actions", methods = ["POST"] }] }
//! ```
//!
//! A request is decided by the most specific rule that covers it (the longest prefix; a tie goes
//! to the deny): a rule covers a request whose origin and path it covers and whose method it
//! names (any, without `methods`); an allow rule's header conditions then decide. A request is
//! compared in its canonical form: host lowercased without a trailing dot, the default port made
//! explicit, dot segments resolved (`%2e%2e` too) and unreserved characters percent-decoded (so
//! `/%61dmin` is `/admin`); an encoded `/` or `\` in the path is refused outright, since servers
//! disagree on whether it separates segments. Mediated requests (`http.*` of VFS tools and
//! components, the page, the edge) are decided per request and per redirect hop
//! ([`AccessPolicy::check_request`]); a process that reaches the network directly is held per
//! host and port ([`AccessPolicy::check_connect`]), and a rule finer than its origin cannot hold
//! it.

use globset::{GlobBuilder, GlobMatcher};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

use super::error::HeaderError;
use super::{AccessPolicy, Decision, Fallback, NetRuleError, UrlError};

/// The methods a rule may name.
pub const METHODS: [&str; 7] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/// One `network.allow` / `network.deny` entry as written: a URL prefix, or a table.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum NetRuleConfig {
    /// `"https://api.example.com/v1"`.
    Url(String),
    /// `{ url = "…", methods = […], paths = […], headers = { require = {…}, forbid = […] } }`.
    Rule(NetRuleTable),
}

/// The table form of a network rule.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetRuleTable {
    /// The URL prefix.
    pub url: String,
    /// The methods it covers (upper case); absent means every method.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub methods: Option<Vec<String>>,
    /// Path patterns (absolute: `/repos/*/issues/**`; `*` is one segment, `**` any number); a
    /// request's path must match one. Absent means every path under the prefix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paths: Option<Vec<String>>,
    /// Header conditions of an allow rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<HeaderRules>,
}

/// `headers = { require = { name = "value" }, forbid = ["name"] }`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeaderRules {
    /// Headers the request must carry, with exactly these values (names case-insensitive).
    #[serde(default)]
    pub require: std::collections::BTreeMap<String, String>,
    /// Headers the request must not carry.
    #[serde(default)]
    pub forbid: Vec<String>,
}

impl NetRuleConfig {
    /// The URL prefix.
    pub fn url(&self) -> &str {
        match self {
            Self::Url(u) => u,
            Self::Rule(r) => &r.url,
        }
    }
}

impl std::fmt::Display for NetRuleConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Url(u) => write!(f, "{u}"),
            Self::Rule(r) => {
                write!(f, "{}", r.url)?;
                if let Some(m) = &r.methods {
                    write!(f, " [{}]", m.join(", "))?;
                }
                if let Some(p) = &r.paths {
                    write!(f, " paths {}", p.join(", "))?;
                }
                if let Some(h) = &r.headers {
                    for (name, value) in &h.require {
                        write!(f, " with {name}: {value}")?;
                    }
                    for name in &h.forbid {
                        write!(f, " without {name}")?;
                    }
                }
                Ok(())
            }
        }
    }
}

impl<'de> Deserialize<'de> for NetRuleConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct RuleVisitor;
        impl<'de> Visitor<'de> for RuleVisitor {
            type Value = NetRuleConfig;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a URL prefix (\"https://api.example.com/v1\") or a table { url = \"…\", methods = […], paths = […], headers = {…} }")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(NetRuleConfig::Url(v.to_owned()))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                NetRuleTable::deserialize(de::value::MapAccessDeserializer::new(map)).map(NetRuleConfig::Rule)
            }
        }
        deserializer.deserialize_any(RuleVisitor)
    }
}

/// A URL in the form rules and requests are compared in.
#[derive(Debug, Clone)]
pub(super) struct UrlPrefix {
    pub(super) scheme: String,
    pub(super) host: String,
    pub(super) port: Option<u16>,
    pub(super) path: String,
    /// What in the path servers read differently, if anything ([`ambiguity`]).
    ambiguity: Option<&'static str>,
}

impl UrlPrefix {
    pub(super) fn parse(text: &str) -> Result<Self, NetRuleError> {
        let url = url::Url::parse(text).map_err(|source| NetRuleError::NotAbsolute { url: text.into(), source })?;
        Self::from_url(&url).map_err(|source| NetRuleError::Url { url: text.into(), source })
    }

    pub(super) fn from_url(url: &url::Url) -> Result<Self, UrlError> {
        let scheme = url.scheme().to_owned();
        if scheme != "http" && scheme != "https" {
            return Err(UrlError::Scheme { scheme });
        }
        let host = canonical_host(url.host_str().ok_or(UrlError::NoHost)?);
        if !url.username().is_empty() || url.password().is_some() {
            return Err(UrlError::Credentials);
        }
        let path = canonical_escapes(url.path())?;
        Ok(Self {
            scheme,
            host,
            port: url.port_or_known_default(),
            path: path.trim_end_matches('/').to_owned(),
            ambiguity: ambiguity(url.path()),
        })
    }

    /// `scheme://host[:port]` as a rule would be written: the port only when it is not the
    /// scheme's default (a prefix pins the port, so a hint must name it).
    pub(super) fn origin(&self) -> String {
        let default = match self.scheme.as_str() {
            "https" => Some(443),
            "http" => Some(80),
            _ => None,
        };
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        match self.port {
            Some(p) if Some(p) != default => format!("{}://{host}:{p}", self.scheme),
            _ => format!("{}://{host}", self.scheme),
        }
    }

    /// Whether `url` has the same scheme, host and port.
    fn same_origin(&self, url: &UrlPrefix) -> bool {
        self.scheme == url.scheme && self.host == url.host && self.port == url.port
    }

    /// Whether `self` (a rule) covers `url` (a request). Returns the rule's path length.
    fn covers(&self, url: &UrlPrefix) -> Option<usize> {
        let same_origin = self.scheme == url.scheme && self.host == url.host && self.port == url.port;
        let path_ok = url.path == self.path
            || (url.path.starts_with(&self.path) && url.path.as_bytes().get(self.path.len()) == Some(&b'/'));
        (same_origin && path_ok).then_some(self.path.len())
    }
}

/// A host as compared: lower case, without the trailing dot of a fully qualified name (the URL
/// parser has already applied IDNA, decoded percent-escapes and normalized IP literals).
pub fn canonical_host(host: &str) -> String {
    host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase()
}

/// A path as compared: unreserved characters percent-decoded, other escapes in upper case.
/// What servers read differently from one another is refused rather than guessed at: an
/// encoded `/` or `\`, an empty segment (`//admin`: nginx merges slashes), a `;` parameter
/// (`/admin;x`, `/pub/..;/admin`: servlet containers drop or resolve it), a NUL, an encoded
/// `%` (double encoding), and a segment ending in `.` or a space (Windows servers drop them).
fn canonical_path(path: &str) -> Result<String, UrlError> {
    if let Some(what) = ambiguity(path) {
        return Err(UrlError::AmbiguousPath { path: path.into(), what });
    }
    canonical_escapes(path)
}

/// What in `path` servers read differently from one another, if anything (see
/// [`canonical_path`]); decisive only where a rule for the origin looks at paths.
fn ambiguity(path: &str) -> Option<&'static str> {
    if path.contains("//") {
        return Some("an empty segment ('//')");
    }
    if path.contains(';') || path.to_ascii_uppercase().contains("%3B") {
        return Some("a ';' parameter");
    }
    if path.contains("%00") {
        return Some("a NUL (%00)");
    }
    if path.contains("%25") {
        return Some("an encoded '%' (%25)");
    }
    let odd_end =
        |seg: &&str| !seg.is_empty() && *seg != "." && *seg != ".." && (seg.ends_with('.') || seg.ends_with("%20"));
    if path.split('/').any(|seg| odd_end(&seg)) {
        return Some("a segment ending in '.' or a space");
    }
    None
}

/// Unreserved escapes decoded, others in upper case; an encoded `/` or `\` refused.
fn canonical_escapes(path: &str) -> Result<String, UrlError> {
    let bytes = path.as_bytes();
    let mut out = String::with_capacity(path.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = path.get(i + 1..i + 3)
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            match b {
                b'/' | b'\\' => {
                    return Err(UrlError::EncodedSeparator {
                        path: path.into(),
                        separator: b as char,
                        escape: hex.into(),
                    });
                }
                b if b.is_ascii_alphanumeric() || b"-._~".contains(&b) => out.push(b as char),
                _ => {
                    out.push('%');
                    out.push_str(&hex.to_ascii_uppercase());
                }
            }
            i += 3;
            continue;
        }
        out.push(bytes[i] as char);
        i += 1;
    }
    Ok(out)
}

/// One compiled rule.
#[derive(Debug, Clone)]
pub(super) struct NetRule {
    pub(super) prefix: UrlPrefix,
    pub(super) allow: bool,
    pub(super) origin: String,
    /// The rule as written (its URL, and methods, paths and headers if any).
    pub(super) text: String,
    /// Its URL prefix as written.
    pub(super) url: String,
    methods: Option<Vec<String>>,
    paths: Option<Vec<GlobMatcher>>,
    require: Vec<(String, String)>,
    forbid: Vec<String>,
}

impl NetRule {
    /// Compile `config` (at `key`, e.g. `access.network.allow[0]`).
    pub(super) fn compile(config: &NetRuleConfig, allow: bool, key: String) -> Result<Self, NetRuleError> {
        let prefix = UrlPrefix::parse(config.url())?;
        if let Some(what) = prefix.ambiguity {
            return Err(NetRuleError::AmbiguousPrefix { url: config.url().into(), what });
        }
        let mut rule = NetRule {
            prefix,
            allow,
            origin: key,
            text: config.to_string(),
            url: config.url().to_owned(),
            methods: None,
            paths: None,
            require: Vec::new(),
            forbid: Vec::new(),
        };
        let NetRuleConfig::Rule(table) = config else { return Ok(rule) };
        if let Some(methods) = &table.methods {
            if methods.is_empty() {
                return Err(NetRuleError::NoMethods);
            }
            let mut upper = Vec::new();
            for m in methods {
                let u = m.to_ascii_uppercase();
                if !METHODS.contains(&u.as_str()) {
                    return Err(NetRuleError::Method { method: m.clone() });
                }
                upper.push(u);
            }
            rule.methods = Some(upper);
        }
        if let Some(paths) = &table.paths {
            if paths.is_empty() {
                return Err(NetRuleError::NoPaths);
            }
            let mut matchers = Vec::new();
            for p in paths {
                if !p.starts_with('/') {
                    return Err(NetRuleError::RelativePattern { pattern: p.clone() });
                }
                let canonical = canonical_path(p).map_err(NetRuleError::PatternPath)?;
                let glob = GlobBuilder::new(canonical.trim_end_matches('/'))
                    .literal_separator(true)
                    .backslash_escape(false)
                    .build()
                    .map_err(|source| NetRuleError::BadPattern { pattern: p.clone(), source })?;
                matchers.push(glob.compile_matcher());
            }
            rule.paths = Some(matchers);
        }
        if let Some(headers) = &table.headers {
            if !allow {
                return Err(NetRuleError::HeadersOnDeny);
            }
            rule.require = headers.require.iter().map(|(n, v)| (n.to_ascii_lowercase(), v.clone())).collect();
            rule.forbid = headers.forbid.iter().map(|n| n.to_ascii_lowercase()).collect();
        }
        Ok(rule)
    }

    /// The methods it covers (every one when it names none).
    pub(super) fn methods(&self) -> Vec<&str> {
        match &self.methods {
            Some(m) => m.iter().map(String::as_str).collect(),
            None => METHODS.to_vec(),
        }
    }

    /// Whether the rule's decision depends on the path (a path below the origin, or patterns).
    fn looks_at_paths(&self) -> bool {
        !self.prefix.path.is_empty() || self.paths.is_some()
    }

    /// Whether the rule looks at more than the origin (a path below it, methods, paths, headers).
    pub(super) fn finer_than_origin(&self) -> bool {
        !self.prefix.path.is_empty()
            || self.methods.is_some()
            || self.paths.is_some()
            || !self.require.is_empty()
            || !self.forbid.is_empty()
    }

    fn covers(&self, method: &str, url: &UrlPrefix) -> Option<usize> {
        let len = self.prefix.covers(url)?;
        if let Some(methods) = &self.methods
            && !methods.iter().any(|m| m == method)
        {
            return None;
        }
        if let Some(paths) = &self.paths
            && !paths.iter().any(|g| g.is_match(&url.path) || g.is_match(format!("{}/", url.path)))
        {
            return None;
        }
        Some(len)
    }

    /// The header conditions' verdict on `headers` (an allow rule), `Err` naming the failure.
    fn headers_ok(&self, headers: &[(String, String)]) -> Result<(), HeaderError> {
        // Names compared case-insensitively and with `_` as `-` (CGI-style servers read them as
        // one); every occurrence of a required header must have the value.
        let same = |a: &str, b: &str| {
            a.len() == b.len()
                && a.bytes().zip(b.bytes()).all(|(x, y)| {
                    let norm = |c: u8| if c == b'_' { b'-' } else { c.to_ascii_lowercase() };
                    norm(x) == norm(y)
                })
        };
        let values = |name: &str| -> Vec<&str> {
            headers.iter().filter(|(n, _)| same(n, name)).map(|(_, v)| v.as_str()).collect()
        };
        for (name, want) in &self.require {
            let mut any = false;
            for v in values(name) {
                any = true;
                if v != want {
                    return Err(HeaderError::WrongValue { name: name.clone(), value: v.into(), want: want.clone() });
                }
            }
            if !any {
                return Err(HeaderError::Missing { name: name.clone(), want: want.clone() });
            }
        }
        if let Some(name) = self.forbid.iter().find(|n| !values(n).is_empty()) {
            return Err(HeaderError::Forbidden { name: name.clone() });
        }
        Ok(())
    }
}

/// An HTTP request as the policy sees it: method, URL and the headers the tool sent (before the
/// host substitutes secrets).
#[derive(Debug, Clone, Copy)]
pub struct HttpCheck<'a> {
    /// `GET`, `POST`, … (upper case).
    pub method: &'a str,
    /// The absolute URL.
    pub url: &'a str,
    /// `(name, value)` pairs.
    pub headers: &'a [(String, String)],
}

impl<'a> HttpCheck<'a> {
    /// A request without headers.
    pub fn new(method: &'a str, url: &'a str) -> Self {
        Self { method, url, headers: &[] }
    }
}

impl AccessPolicy {
    /// Compile `list` into allow or deny rules (`key` e.g. `access.network.allow`).
    pub(super) fn add_net_rules(
        &mut self,
        list: &[NetRuleConfig],
        allow: bool,
        key: &str,
    ) -> Result<(), (String, NetRuleError)> {
        for (i, config) in list.iter().enumerate() {
            let key = format!("{key}[{i}]");
            let rule = NetRule::compile(config, allow, key.clone()).map_err(|e| (key, e))?;
            self.net_rules.push(rule);
        }
        Ok(())
    }

    /// Decide an HTTP `GET` to `url` without headers (see [`check_request`](Self::check_request)).
    pub fn check_http(&self, url: &str) -> Decision {
        self.check_request(&HttpCheck::new("GET", url))
    }

    /// Decide one HTTP request (each redirect hop is a request of its own).
    pub fn check_request(&self, request: &HttpCheck<'_>) -> Decision {
        let own = self.check_request_own(request);
        self.bounded(own, |c| c.check_request(request))
    }

    fn check_request_own(&self, request: &HttpCheck<'_>) -> Decision {
        let url = request.url;
        let parsed = match url::Url::parse(url) {
            Ok(u) => u,
            Err(e) => {
                return Decision::Deny(format!(
                    "Access denied: {url:?} is not an absolute URL ({e}); use e.g. \"https://api.example.com/path\""
                ));
            }
        };
        let target = match UrlPrefix::from_url(&parsed) {
            Ok(t) => t,
            Err(e) => return Decision::Deny(format!("Access denied: {url:?}: {e}")),
        };
        let method = request.method.to_ascii_uppercase();
        // A path servers read differently cannot be held to a rule that looks at paths.
        if let Some(what) = target.ambiguity
            && let Some(rule) = self.net_rules.iter().find(|r| r.looks_at_paths() && r.prefix.same_origin(&target))
        {
            return Decision::Deny(format!(
                "Access denied: {method} {url}: the path has {what}, which servers read differently, and {} ({:?}) decides by path; send the path in its plain form",
                rule.origin, rule.text
            ));
        }
        let mut best: Option<(usize, &NetRule)> = None;
        for rule in &self.net_rules {
            if let Some(len) = rule.covers(&method, &target) {
                let better = match best {
                    None => true,
                    Some((l, b)) => len > l || (len == l && b.allow && !rule.allow),
                };
                if better {
                    best = Some((len, rule));
                }
            }
        }
        match best {
            Some((_, rule)) if rule.allow => match rule.headers_ok(request.headers) {
                Ok(()) => Decision::Allow(format!("{method} {url} allowed by {} ({:?})", rule.origin, rule.text)),
                Err(why) => {
                    Decision::Deny(format!("Access denied: {method} {url}: {why} ({}, {:?})", rule.origin, rule.text))
                }
            },
            Some((_, rule)) => Decision::Deny(format!(
                "Access denied: {method} {url} is denied by {} ({:?}); remove that rule to allow it",
                rule.origin, rule.text
            )),
            None => match self.net_fallback {
                Fallback::Deny => {
                    // A rule for this URL that names other methods or paths: say which.
                    let near = self.net_rules.iter().find(|r| r.allow && r.prefix.covers(&target).is_some());
                    // A rule for the same origin under another path: the fix is this path.
                    let sibling = self.net_rules.iter().find(|r| r.allow && r.prefix.same_origin(&target));
                    Decision::Deny(match (near, sibling) {
                        (Some(rule), _) => format!(
                            "Access denied: no network rule allows {method} {url}; {} ({:?}) covers it only for the methods and paths it names",
                            rule.origin, rule.text
                        ),
                        (None, Some(rule)) => format!(
                            "Access denied: no network rule allows {method} {url}; {} ({:?}) allows only paths under {:?} on that origin: add this path to the tool's network allow list (e.g. \"{}{}\")",
                            rule.origin,
                            rule.text,
                            if rule.prefix.path.is_empty() { "/" } else { rule.prefix.path.as_str() },
                            target.origin(),
                            target.path
                        ),
                        (None, None) => format!(
                            "Access denied: no network rule allows {method} {url}; add its origin to the tool's network allow list (e.g. \"{}\")",
                            target.origin()
                        ),
                    })
                }
                Fallback::Ask => Decision::Ask(format!(
                    "network request {method} {url} is not covered by the tool's sandbox configuration"
                )),
            },
        }
    }

    /// Decide a connection to `host:port` by a process that reaches the network directly (its
    /// traffic through jp's egress proxy: a `CONNECT` tunnel, which shows neither method nor
    /// path). Allowed when an `https` rule allows the whole origin on that host and port (an
    /// `http` origin is reached by absolute-URI requests instead, each decided); a rule finer
    /// than its origin (a path, methods, path patterns, headers) cannot be held to a tunnel and
    /// is refused, naming it.
    pub fn check_connect(&self, host: &str, port: u16) -> Decision {
        let own = self.check_connect_own(host, port);
        self.bounded(own, |c| c.check_connect(host, port))
    }

    fn check_connect_own(&self, host: &str, port: u16) -> Decision {
        let host = canonical_host(host.trim_start_matches('[').trim_end_matches(']'));
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let on_it: Vec<&NetRule> = self
            .net_rules
            .iter()
            .filter(|r| {
                r.prefix.port == Some(port) && r.prefix.host.trim_start_matches('[').trim_end_matches(']') == bare
            })
            .collect();
        if let Some(rule) = on_it.iter().find(|r| !r.allow && !r.finer_than_origin()) {
            return Decision::Deny(format!(
                "Access denied: a connection to {host}:{port} is denied by {} ({:?})",
                rule.origin, rule.text
            ));
        }
        if self.inspected(&host, port) {
            // jp terminates this TLS (a secret is bound to it): every request inside is decided
            // by `check_request`, so rules finer than the origin hold.
            if let Some(rule) = on_it.iter().find(|r| r.allow) {
                return Decision::Allow(format!(
                    "a connection to {host}:{port} (each request inside decided, as jp sees it) allowed by {} ({:?})",
                    rule.origin, rule.text
                ));
            }
        } else if let Some(rule) = on_it.iter().find(|r| r.finer_than_origin()) {
            return Decision::Deny(format!(
                "Access denied: a connection to {host}:{port} cannot be held to {} ({:?}): a process that reaches the network itself is held per host and port, not per method, path or header; allow the whole origin, or reach it through jp's http requests",
                rule.origin, rule.text
            ));
        }
        // A tunnel is for TLS: what is inside is not seen. Plain HTTP goes through the proxy as
        // absolute-URI requests, which jp decides (and whose `Host` it sets) one by one.
        if let Some(rule) = on_it.iter().find(|r| r.allow && r.prefix.scheme == "https") {
            return Decision::Allow(format!(
                "a connection to {host}:{port} allowed by {} ({:?})",
                rule.origin, rule.text
            ));
        }
        if let Some(rule) = on_it.iter().find(|r| r.allow) {
            return Decision::Deny(format!(
                "Access denied: a tunnel (CONNECT) to {host}:{port} is refused: {} ({:?}) allows plain HTTP there, which goes through the proxy as requests jp checks one by one (HTTP_PROXY), not through a tunnel",
                rule.origin, rule.text
            ));
        }
        match self.net_fallback {
            Fallback::Deny => Decision::Deny(format!(
                "Access denied: no network rule allows a connection to {host}:{port}; add its origin to the tool's network allow list (e.g. \"https://{host}\")"
            )),
            Fallback::Ask => Decision::Ask(format!(
                "a connection to {host}:{port} is not covered by the tool's sandbox configuration"
            )),
        }
    }
}
