//! Brokered secrets (`access.secrets`) for a process that reaches the network itself.
//!
//! The process never holds a bound secret: its variable holds a placeholder, random per process
//! ([`SecretBroker::child_env`]). jp's egress proxy terminates TLS for the bound `https` origins
//! with a certificate authority made for this one process ([`SecretBroker::server_config`]),
//! which only this process is told to trust (the standard variables, [`CA_VARIABLES`]), and puts
//! the value in place of the placeholder in the headers of requests to those origins only
//! ([`SecretBroker::put_in`]); every other `https` origin keeps going through an opaque tunnel.
//!
//! What the authority can vouch for is bounded twice: its name constraints permit only the
//! bound hosts, and its key never leaves jp (it lives in this process's memory and dies with
//! the proxy). The upstream is verified as any client would: against the system's roots plus the
//! file `SSL_CERT_FILE` names in jp's own environment ([`upstream_roots`]).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use aho_corasick::AhoCorasick;
use jp_core::policy::{AccessPolicy, Origin};
use rcgen::{
    BasicConstraints, CertificateParams, CidrSubnet, DnType, GeneralSubtree, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    NameConstraints,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// The variables that point common TLS clients at a bundle with the process's authority in it:
/// OpenSSL and what links it (Python's `ssl`, curl, Ruby, PHP), Go, rustls-native-certs
/// (`SSL_CERT_FILE`); Python `requests` (`REQUESTS_CA_BUNDLE`); the curl tool
/// (`CURL_CA_BUNDLE`); git (`GIT_SSL_CAINFO`); Deno (`DENO_CERT`); pip (`PIP_CERT`). Each names
/// the whole bundle (the system's roots and the authority), so other origins keep working.
pub const CA_VARIABLES: [&str; 6] =
    ["SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "DENO_CERT", "PIP_CERT"];

/// Node adds the certificates of this file to its own roots: it names the authority alone.
pub const NODE_CA_VARIABLE: &str = "NODE_EXTRA_CA_CERTS";

/// What each byte of a secret becomes in what comes back to the process.
const MASK: u8 = b'*';

/// One bound variable of one process.
struct Bound {
    name: String,
    placeholder: String,
    value: String,
    origins: Vec<Origin>,
}

/// The secrets of one process: placeholders, values, and the authority its proxy terminates
/// TLS with. Dropped with the proxy.
pub struct SecretBroker {
    bound: Vec<Bound>,
    issuer: Issuer<'static, KeyPair>,
    ca_pem: String,
    /// A server configuration per host, made on first use.
    servers: Mutex<BTreeMap<String, Arc<rustls::ServerConfig>>>,
    /// What upstream TLS connections verify against.
    upstream: Arc<rustls::ClientConfig>,
    /// The values, to take out of what comes back (an upstream that echoes a header).
    values: Option<AhoCorasick>,
    longest: usize,
}

impl std::fmt::Debug for SecretBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.bound.iter().map(|b| b.name.as_str()).collect();
        f.debug_struct("SecretBroker").field("names", &names).finish_non_exhaustive()
    }
}

/// A placeholder: what the process holds instead of `name`'s value. Random per process, so one
/// process cannot guess another's, and a value no real token has.
fn placeholder(name: &str) -> Result<String, String> {
    let mut bytes = [0u8; 16];
    rustix::rand::getrandom(&mut bytes, rustix::rand::GetRandomFlags::empty())
        .map_err(|e| format!("cannot make a placeholder for {name}: {e}"))?;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("jp-placeholder-{hex}"))
}

impl SecretBroker {
    /// The broker of a process under `policy`, with the values from jp's environment `env`;
    /// `None` when the policy binds no secret. `who` names the process in errors.
    pub fn new(policy: &AccessPolicy, env: &BTreeMap<String, String>, who: &str) -> Result<Option<Self>, String> {
        let bindings = policy.secret_bindings();
        if bindings.is_empty() {
            return Ok(None);
        }
        let mut bound = Vec::with_capacity(bindings.len());
        for b in bindings {
            let value = env.get(&b.name).filter(|v| !v.is_empty()).ok_or_else(|| {
                format!(
                    "{who} was not started: its access.secrets binds {} to {}, but {} is not set in jp's environment; export it before starting jp",
                    b.name,
                    b.origins.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "),
                    b.name
                )
            })?;
            if value.len() < jp_core::policy::MIN_SECRET_LEN {
                return Err(format!(
                    "{who} was not started: {} is shorter than {} characters, too short to be told apart from other text; a secret that short cannot be brokered",
                    b.name,
                    jp_core::policy::MIN_SECRET_LEN
                ));
            }
            bound.push(Bound {
                name: b.name.clone(),
                placeholder: placeholder(&b.name)?,
                value: value.clone(),
                origins: b.origins.clone(),
            });
        }
        if let Some((b, o)) = bound.iter().find_map(|b| b.origins.iter().find(|o| o.scheme != "https").map(|o| (b, o)))
        {
            return Err(format!(
                "{who} was not started: access.secrets binds {} to {o}, a plain-http origin; jp puts a secret into a process's requests over https only (what comes back over plain http cannot be masked reliably), so bind it to an https origin",
                b.name
            ));
        }
        let hosts: Vec<String> =
            bound.iter().flat_map(|b| &b.origins).filter(|o| o.scheme == "https").map(|o| o.host.clone()).collect();
        let (issuer, ca_pem) =
            authority(&hosts).map_err(|e| format!("{who}: cannot make its certificate authority: {e}"))?;
        let values: Vec<&str> = bound.iter().map(|b| b.value.as_str()).collect();
        let longest = values.iter().map(|v| v.len()).max().unwrap_or(0);
        // Leftmost-longest: a value that contains another is masked whole.
        let values = AhoCorasick::builder().match_kind(aho_corasick::MatchKind::LeftmostLongest).build(&values).ok();
        crate::http::crypto_provider();
        Ok(Some(Self {
            bound,
            issuer,
            ca_pem,
            servers: Mutex::default(),
            upstream: Arc::new(upstream_config(env)?),
            values,
            longest,
        }))
    }

    /// What a process under `policy` is started with (its stdio tool's or server's start, one
    /// place for both): the broker, its variables put into `env` (each bound name holding its
    /// placeholder, over any value `env` had), `None` when nothing is bound. Refused without the
    /// OS sandbox (`os_sandbox` false): only the egress proxy puts a value in. `host_env` is jp's
    /// own environment; `scratch` the process's temporary directory.
    pub fn for_process(
        policy: &AccessPolicy,
        host_env: &BTreeMap<String, String>,
        who: &str,
        os_sandbox: bool,
        scratch: &Path,
        env: &mut BTreeMap<String, String>,
    ) -> Result<Option<Arc<Self>>, String> {
        let Some(broker) = Self::new(policy, host_env, who)? else { return Ok(None) };
        if !os_sandbox {
            return Err(format!(
                "{who} was not started: its access.secrets are put in by jp's egress proxy, which needs the OS sandbox; run it without --no-os-sandbox"
            ));
        }
        let vars = broker.child_env(scratch).map_err(|e| format!("{who}: cannot write its certificate files: {e}"))?;
        env.extend(vars);
        Ok(Some(Arc::new(broker)))
    }

    /// The process's variables: each bound name holding its placeholder, and the bundle
    /// variables ([`CA_VARIABLES`], [`NODE_CA_VARIABLE`]) naming files written into `scratch`
    /// (the process's own temporary directory).
    pub fn child_env(&self, scratch: &Path) -> std::io::Result<Vec<(String, String)>> {
        let ca = scratch.join("jp-egress-ca.pem");
        let bundle = scratch.join("jp-egress-bundle.pem");
        std::fs::write(&ca, &self.ca_pem)?;
        let mut all = system_bundle().unwrap_or_default();
        if !all.is_empty() && !all.ends_with('\n') {
            all.push('\n');
        }
        all.push_str(&self.ca_pem);
        std::fs::write(&bundle, all)?;
        let mut env: Vec<(String, String)> =
            self.bound.iter().map(|b| (b.name.clone(), b.placeholder.clone())).collect();
        let bundle = bundle.to_string_lossy().into_owned();
        env.extend(CA_VARIABLES.iter().map(|k| (k.to_string(), bundle.clone())));
        env.push((NODE_CA_VARIABLE.into(), ca.to_string_lossy().into_owned()));
        Ok(env)
    }

    /// Whether the proxy terminates TLS for `host:port` (an `https` origin a secret is bound to).
    pub fn terminates(&self, host: &str, port: u16) -> bool {
        let host = jp_core::policy::canonical_host(host.trim_start_matches('[').trim_end_matches(']'));
        self.bound.iter().flat_map(|b| &b.origins).any(|o| o.scheme == "https" && o.port == port && o.host == host)
    }

    /// The TLS server side for `host`: a certificate for it signed by the process's authority.
    pub fn server_config(&self, host: &str) -> Result<Arc<rustls::ServerConfig>, String> {
        let mut servers = self.servers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(config) = servers.get(host) {
            return Ok(config.clone());
        }
        let key = KeyPair::generate().map_err(|e| e.to_string())?;
        let mut params = CertificateParams::new(vec![host.to_owned()]).map_err(|e| e.to_string())?;
        // The name is in the subject alternative names only: OpenSSL holds a common name to
        // the authority's DNS constraints too, which an IP address would fail.
        params.is_ca = IsCa::ExplicitNoCa;
        params.not_before = rcgen::date_time_ymd(2024, 1, 1);
        params.not_after = rcgen::date_time_ymd(2099, 1, 1);
        let cert = params.signed_by(&key, &self.issuer).map_err(|e| e.to_string())?;
        let chain = vec![cert.der().clone()];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let mut config = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| e.to_string())?;
        // HTTP/1.1 only: each request is read, decided and passed on one at a time.
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let config = Arc::new(config);
        servers.insert(host.to_owned(), config.clone());
        Ok(config)
    }

    /// The client side of upstream connections.
    pub fn upstream(&self) -> Arc<rustls::ClientConfig> {
        self.upstream.clone()
    }

    /// Put the values in place of the placeholders bound to `origin` in `headers`. Returns the
    /// names put in, and the names whose placeholders stay (bound elsewhere: sent as they are).
    pub fn put_in(&self, origin: &Origin, headers: &mut [(String, String)]) -> (Vec<&str>, Vec<&str>) {
        let (mut put, mut left) = (Vec::new(), Vec::new());
        for b in &self.bound {
            let mut seen = false;
            let here = b.origins.contains(origin);
            for (_, value) in headers.iter_mut() {
                if value.contains(&b.placeholder) {
                    seen = true;
                    if here {
                        *value = value.replace(&b.placeholder, &b.value);
                    }
                }
            }
            if seen {
                if here { put.push(b.name.as_str()) } else { left.push(b.name.as_str()) }
            }
        }
        (put, left)
    }

    /// The names whose placeholders are in `text` (a request to an origin jp does not
    /// terminate: they stay placeholders, and the attempt is traced).
    pub fn placeholders_in<'a>(&'a self, text: &str) -> Vec<&'a str> {
        self.bound.iter().filter(|b| text.contains(&b.placeholder)).map(|b| b.name.as_str()).collect()
    }

    /// Bytes with every secret masked (a response header's value): each byte of a secret
    /// becomes `*`, so lengths stay true.
    pub fn scrub_bytes(&self, bytes: &[u8]) -> Vec<u8> {
        let mut carry = Carry::default();
        let mut out = carry.piece(self, bytes);
        out.extend(carry.finish(self));
        out
    }

    /// Whether `headers` carry the placeholder of a secret bound to `origin` (the request is
    /// one jp puts a value into).
    pub fn carries(&self, origin: &Origin, headers: &[(String, String)]) -> bool {
        self.bound
            .iter()
            .filter(|b| b.origins.contains(origin))
            .any(|b| headers.iter().any(|(_, v)| v.contains(&b.placeholder)))
    }
}

/// Masks the secrets in a byte stream (a response): each byte of a secret becomes `*`, so the
/// stream's framing stays true. A secret split between two pieces is caught, since the last
/// bytes that could begin one are held back until the next piece.
#[derive(Debug, Default)]
pub(super) struct Carry(Vec<u8>);

impl Carry {
    /// The next piece, scrubbed (possibly shorter: its end may wait for the next piece).
    pub(super) fn piece(&mut self, broker: &SecretBroker, piece: &[u8]) -> Vec<u8> {
        let Some(ac) = &broker.values else { return piece.to_vec() };
        let mut buf = std::mem::take(&mut self.0);
        buf.extend_from_slice(piece);
        // Every secret that starts before `safe` ends within `buf`, so it is found whole.
        let safe = buf.len().saturating_sub(broker.longest.saturating_sub(1));
        let mut out = Vec::with_capacity(buf.len());
        let mut at = 0;
        for m in ac.find_iter(&buf) {
            if m.start() >= safe {
                break;
            }
            out.extend_from_slice(&buf[at..m.start()]);
            out.resize(out.len() + m.len(), MASK);
            at = m.end();
        }
        let cut = at.max(safe);
        out.extend_from_slice(&buf[at..cut]);
        self.0 = buf[cut..].to_vec();
        out
    }

    /// What was held back, at the end of the body.
    pub(super) fn finish(&mut self, broker: &SecretBroker) -> Vec<u8> {
        let mut rest = std::mem::take(&mut self.0);
        if let Some(ac) = &broker.values {
            let found: Vec<(usize, usize)> = ac.find_iter(&rest).map(|m| (m.start(), m.end())).collect();
            for (start, end) in found {
                rest[start..end].fill(MASK);
            }
        }
        rest
    }
}

/// A certificate authority for one process, constrained to `hosts`.
fn authority(hosts: &[String]) -> Result<(Issuer<'static, KeyPair>, String), rcgen::Error> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::default();
    params.distinguished_name.push(DnType::CommonName, "jp egress proxy (this process only)");
    params.distinguished_name.push(DnType::OrganizationName, "jp-host");
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
    params.not_before = rcgen::date_time_ymd(2024, 1, 1);
    params.not_after = rcgen::date_time_ymd(2099, 1, 1);
    // It can vouch for the bound hosts and nothing else: names outside them are refused by a
    // client even if this certificate were found and trusted elsewhere.
    let mut permitted = Vec::new();
    let mut any_ip = false;
    for host in hosts {
        match host.parse::<std::net::IpAddr>() {
            Ok(ip) => {
                any_ip = true;
                permitted.push(GeneralSubtree::IpAddress(CidrSubnet::from_addr_prefix(
                    ip,
                    if ip.is_ipv4() { 32 } else { 128 },
                )));
            }
            Err(_) => permitted.push(GeneralSubtree::DnsName(host.clone())),
        }
    }
    if permitted.iter().all(|s| matches!(s, GeneralSubtree::IpAddress(_))) {
        // No DNS name is bound: permit only the reserved `.invalid`.
        permitted.push(GeneralSubtree::DnsName("invalid".into()));
    }
    let excluded = if any_ip {
        Vec::new()
    } else {
        vec![
            GeneralSubtree::IpAddress(CidrSubnet::from_addr_prefix(std::net::Ipv4Addr::UNSPECIFIED.into(), 0)),
            GeneralSubtree::IpAddress(CidrSubnet::from_addr_prefix(std::net::Ipv6Addr::UNSPECIFIED.into(), 0)),
        ]
    };
    params.name_constraints = Some(NameConstraints { permitted_subtrees: permitted, excluded_subtrees: excluded });
    let cert = params.self_signed(&key)?;
    Ok((Issuer::new(params, key), cert.pem()))
}

/// The system's bundle of root certificates (PEM), as the first of the usual places has it.
fn system_bundle() -> Option<String> {
    SYSTEM_BUNDLES.iter().find_map(|p| std::fs::read_to_string(p).ok())
}

/// Where Linux distributions keep the system's roots as one file.
const SYSTEM_BUNDLES: [&str; 5] = [
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
];

/// The roots upstream certificates are verified against: the system's, plus the file
/// `SSL_CERT_FILE` names in jp's own environment `env` (when set).
pub fn upstream_roots(env: &BTreeMap<String, String>) -> Result<rustls::RootCertStore, String> {
    let mut roots = rustls::RootCertStore::empty();
    let mut add = |certs: Vec<CertificateDer<'static>>| {
        roots.add_parsable_certificates(certs);
    };
    match SYSTEM_BUNDLES.iter().map(Path::new).find(|p| p.exists()) {
        Some(file) => add(rustls_native_certs::load_certs_from_paths(Some(file), None).certs),
        None => add(rustls_native_certs::load_native_certs().certs),
    }
    if let Some(file) = env.get("SSL_CERT_FILE").filter(|f| !f.is_empty()) {
        let loaded = rustls_native_certs::load_certs_from_paths(Some(Path::new(file)), None);
        if loaded.certs.is_empty() {
            return Err(format!(
                "SSL_CERT_FILE names {file}, which holds no certificate jp can read ({}); fix or unset it",
                loaded.errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
            ));
        }
        add(loaded.certs);
    }
    if roots.is_empty() {
        return Err(
            "no root certificates were found on this system (install ca-certificates, or set SSL_CERT_FILE)".into()
        );
    }
    Ok(roots)
}

fn upstream_config(env: &BTreeMap<String, String>) -> Result<rustls::ClientConfig, String> {
    let mut config = rustls::ClientConfig::builder().with_root_certificates(upstream_roots(env)?).with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn broker(value: &str) -> SecretBroker {
        let access: jp_core::policy::AccessConfig = toml::from_str(
            "network = { allow = [\"https://api.example.com\"] }\nsecrets = { TOKEN = [\"https://api.example.com\"] }",
        )
        .unwrap();
        let policy = AccessPolicy::from_config(None, Some(&access)).unwrap();
        let env = BTreeMap::from([("TOKEN".to_owned(), value.to_owned())]);
        SecretBroker::new(&policy, &env, "t").unwrap().unwrap()
    }

    #[test]
    fn the_process_gets_a_placeholder_and_a_bundle_never_the_value() {
        let b = broker("s3cr3t-value-0123456789");
        let dir = tempfile::tempdir().unwrap();
        let env: BTreeMap<String, String> = b.child_env(dir.path()).unwrap().into_iter().collect();
        let held = &env["TOKEN"];
        assert!(held.starts_with("jp-placeholder-") && !held.contains("s3cr3t"), "{held}");
        assert_ne!(held, &broker("s3cr3t-value-0123456789").bound[0].placeholder, "random per process");
        for k in CA_VARIABLES {
            let bundle = std::fs::read_to_string(&env[k]).unwrap();
            assert!(bundle.ends_with(&b.ca_pem), "{k}");
        }
        assert_eq!(std::fs::read_to_string(&env[NODE_CA_VARIABLE]).unwrap(), b.ca_pem);
        for file in std::fs::read_dir(dir.path()).unwrap() {
            assert!(!std::fs::read_to_string(file.unwrap().path()).unwrap().contains("s3cr3t"));
        }
    }

    #[test]
    fn placeholders_become_values_only_for_their_origins() {
        let b = broker("s3cr3t-value-0123456789");
        let p = b.bound[0].placeholder.clone();
        let mut headers = vec![("Authorization".to_owned(), format!("Bearer {p}"))];
        let (put, left) = b.put_in(&Origin::parse("https://api.example.com").unwrap(), &mut headers);
        assert_eq!((put, left), (vec!["TOKEN"], vec![]));
        assert_eq!(headers[0].1, "Bearer s3cr3t-value-0123456789");
        let mut elsewhere = vec![("Authorization".to_owned(), format!("Bearer {p}"))];
        let (put, left) = b.put_in(&Origin::parse("https://evil.example").unwrap(), &mut elsewhere);
        assert_eq!((put, left), (vec![], vec!["TOKEN"]));
        assert_eq!(elsewhere[0].1, format!("Bearer {p}"));
        assert!(b.terminates("API.example.com", 443) && !b.terminates("api.example.com", 80));
        assert!(!b.terminates("evil.example", 443));
    }

    #[test]
    fn a_secret_split_across_pieces_is_still_taken_out() {
        let secret = "s3cr3t-value-0123456789";
        let b = broker(secret);
        let body = format!("echo: {secret}; again {secret}.");
        for step in 1..body.len() {
            let mut s = Carry::default();
            let mut out = Vec::new();
            for chunk in body.as_bytes().chunks(step) {
                out.extend(s.piece(&b, chunk));
            }
            out.extend(s.finish(&b));
            let mask = "*".repeat(secret.len());
            assert_eq!(String::from_utf8(out).unwrap(), format!("echo: {mask}; again {mask}."), "{step}");
        }
        assert_eq!(
            b.scrub_bytes(format!("x {secret}").as_bytes()),
            format!("x {}", "*".repeat(secret.len())).into_bytes()
        );
    }

    #[test]
    fn a_missing_or_short_secret_is_a_clear_error() {
        let access: jp_core::policy::AccessConfig =
            toml::from_str("secrets = { TOKEN = [\"https://api.example.com\"] }").unwrap();
        let policy = AccessPolicy::from_config(None, Some(&access)).unwrap();
        let e = SecretBroker::new(&policy, &BTreeMap::new(), "server x").unwrap_err();
        assert!(e.contains("TOKEN is not set in jp's environment; export it"), "{e}");
        let env = BTreeMap::from([("TOKEN".to_owned(), "ab".to_owned())]);
        assert!(SecretBroker::new(&policy, &env, "server x").unwrap_err().contains("too short"));
        let access: jp_core::policy::AccessConfig =
            toml::from_str("secrets = { TOKEN = [\"http://api.example.com\"] }").unwrap();
        let policy = AccessPolicy::from_config(None, Some(&access)).unwrap();
        let env = BTreeMap::from([("TOKEN".to_owned(), "s3cr3t-value-0123456789".to_owned())]);
        let e = SecretBroker::new(&policy, &env, "server x").unwrap_err();
        assert!(e.contains("plain-http origin") && e.contains("bind it to an https origin"), "{e}");
    }

    #[test]
    fn a_value_containing_another_is_masked_whole() {
        let access: jp_core::policy::AccessConfig =
            toml::from_str("secrets = { A = [\"https://a.example\"], B = [\"https://a.example\"] }").unwrap();
        let policy = AccessPolicy::from_config(None, Some(&access)).unwrap();
        let env = BTreeMap::from([
            ("A".to_owned(), "short-secret-1234".to_owned()),
            ("B".to_owned(), "xx-short-secret-1234-and-more".to_owned()),
        ]);
        let b = SecretBroker::new(&policy, &env, "t").unwrap().unwrap();
        let out = b.scrub_bytes(b"[xx-short-secret-1234-and-more]");
        assert_eq!(out, format!("[{}]", "*".repeat(29)).into_bytes());
    }
}
