//! Bounded fuzzing (issue 10, "Prove it") of what a hostile tool controls: the NDJSON byte
//! stream, the request parser and the dispatcher, and `WorkspacePath` normalisation. Any input
//! must give no panic, and no request may be allowed that the policy did not allow: every
//! allowed decision the dispatcher reports is re-checked against the policy here, and the
//! project files outside the writable area are never changed.
//!
//! proptest rather than `cargo fuzz`: the machine's only toolchain is stable Rust, and these run
//! in `./tests/run` within a few seconds each.

use std::sync::{Arc, Mutex};

use futures_executor::block_on;
use jp_core::files::InMemoryProjectFiles;
use jp_core::host::{DispatchEvents, Dispatcher, TraceEvent};
use jp_core::policy::{AccessConfig, AccessPolicy, Capability, WorkspacePath};
use jp_core::protocol::{DEFAULT_MAX_LINE, LineDecoder, RpcMessage, decode_frame};
use proptest::prelude::*;
use serde_json::{Value, json};

#[derive(Default)]
struct Recorder(Mutex<Vec<TraceEvent>>);
impl DispatchEvents for Recorder {
    fn decided(&self, e: &TraceEvent) {
        self.0.lock().unwrap().push(e.clone());
    }
}

/// `.`: nothing; `pub`: read + write; `ro`: read. No network, no processes.
fn policy() -> AccessPolicy {
    let access: AccessConfig = toml::from_str(
        r#"
        filesystem = [
          { path = ".", allow = [] },
          { path = "pub", allow = ["read", "write"] },
          { path = "ro", allow = ["read"] },
        ]
        network = { allow = [] }
        commands = {}
        "#,
    )
    .unwrap();
    AccessPolicy::from_config(None, Some(&access)).unwrap()
}

fn project() -> Arc<InMemoryProjectFiles> {
    Arc::new(
        InMemoryProjectFiles::with_files([
            ("secret/key.txt", "TOP SECRET"),
            ("pub/a.txt", "a"),
            ("pub/sub/b.txt", "b"),
            ("ro/r.txt", "r"),
            ("top.txt", "t"),
        ])
        .unwrap(),
    )
}

const METHODS: [&str; 13] = [
    "fs.read",
    "fs.write",
    "fs.exists",
    "fs.list_dir",
    "fs.metadata",
    "fs.delete",
    "fs.rename",
    "fs.grep",
    "http.get",
    "http.post",
    "process.run",
    "result",
    "nope",
];

/// Path spellings a hostile tool would try, plus random ones.
fn nasty_path() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            ".",
            "",
            "/",
            "..",
            "../x",
            "pub/../secret/key.txt",
            "pub/./a.txt",
            "pub//a.txt",
            "/etc/passwd",
            "secret",
            "secret/key.txt",
            "pub",
            "pub/sub",
            "ro",
            "ro/r.txt",
            "top.txt",
            "~/x",
            "file:///etc",
            "pub\\..\\secret",
            "pub/%2e%2e/secret",
            "pub/\u{0}",
            "pub/a.txt/",
            "PUB/a.txt",
            "pub/new.txt",
            "pub/sub/../../secret/key.txt",
            "\u{212a}",
            "pub/\u{202e}txt.exe",
        ])
        .prop_map(str::to_owned),
        "[a-z./\\\\~%]{0,24}",
        (prop::sample::select(vec!["pub/", "ro/", "secret/", ""]), "[a-z./]{0,12}")
            .prop_map(|(a, b)| format!("{a}{b}")),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        nasty_path().prop_map(Value::String),
        ".{0,16}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A request line: a known method with plausible (and implausible) params.
fn request_line() -> impl Strategy<Value = Vec<u8>> {
    let params = prop::collection::btree_map(
        prop::sample::select(vec![
            "path",
            "from",
            "to",
            "pattern",
            "paths",
            "content",
            "encoding",
            "url",
            "program",
            "args",
            "envs",
            "headers",
            "body",
            "context",
            "extensions",
        ]),
        prop_oneof![
            nasty_path().prop_map(Value::String),
            prop::collection::vec(nasty_path(), 0..3).prop_map(|v| json!(v)),
            json_value()
        ],
        0..5,
    );
    (prop::sample::select(&METHODS[..]), params, prop_oneof![any::<i64>().prop_map(|n| json!(n)), Just(json!("s"))])
        .prop_map(|(method, params, id)| {
            let params: serde_json::Map<String, Value> = params.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
            let mut line = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string();
            line.push('\n');
            line.into_bytes()
        })
}

/// A byte stream: request lines, with random corruption and raw garbage mixed in.
fn stream() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![
            4 => request_line(),
            1 => prop::collection::vec(any::<u8>(), 0..64),
            1 => (request_line(), any::<prop::sample::Index>(), any::<u8>()).prop_map(|(mut l, i, b)| {
                let at = i.index(l.len());
                l[at] = b;
                l
            }),
        ],
        1..12,
    )
    .prop_map(|parts| parts.concat())
}

fn allowed_by_policy(policy: &AccessPolicy, e: &TraceEvent) -> bool {
    let cap = match e.method.as_str() {
        "fs.read" | "fs.exists" | "fs.list_dir" | "fs.metadata" | "fs.grep" => Capability::Read,
        "fs.delete" => Capability::Delete,
        // A write is allowed by create or update: the path must lie where writing is granted.
        "fs.write" => {
            return [Capability::Create, Capability::Update]
                .into_iter()
                .any(|c| policy.check_fs_str(c, &e.target).is_allow())
                && e.target.starts_with("pub");
        }
        // A rename is decided capability by capability for every path it moves (read + delete
        // where it is, create where it lands), and each decision is traced: an allowed event
        // is one of those capabilities granted on that path. (Whether the rename then happened
        // is checked by the snapshots: protected files never change.)
        "fs.rename" => {
            return [Capability::Read, Capability::Create, Capability::Delete]
                .into_iter()
                .any(|c| policy.check_fs_str(c, &e.target).is_allow());
        }
        // No network and no processes are allowed at all.
        _ => return false,
    };
    policy.check_fs_str(cap, &e.target).is_allow()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    #[test]
    fn any_byte_stream_gives_no_panic_and_no_allow_the_policy_did_not_make(bytes in stream(), chunk in 1usize..4096) {
        let policy = policy();
        let files = project();
        let d = Dispatcher::builder("fuzz", Arc::new(policy.clone()), files.clone()).build();
        let events = Recorder::default();
        let mut decoder = LineDecoder::new(DEFAULT_MAX_LINE);
        let mut frames = Vec::new();
        for piece in bytes.chunks(chunk) {
            frames.extend(decoder.push(piece));
        }
        frames.extend(decoder.finish());
        for frame in &frames {
            if let Some(line) = block_on(d.handle_frame(frame, &events)) {
                // Every answer is one valid JSON-RPC response line.
                prop_assert!(line.ends_with(b"\n"));
                let v: Value = serde_json::from_slice(&line).expect("the answer is JSON");
                prop_assert_eq!(&v["jsonrpc"], "2.0");
                let snapshot = files.snapshot();
                prop_assert!(!String::from_utf8_lossy(&line).contains("TOP SECRET"), "{}", String::from_utf8_lossy(&line));
                prop_assert_eq!(snapshot.get("secret/key.txt").map(Vec::as_slice), Some(&b"TOP SECRET"[..]));
                prop_assert_eq!(snapshot.get("ro/r.txt").map(Vec::as_slice), Some(&b"r"[..]));
                prop_assert_eq!(snapshot.get("top.txt").map(Vec::as_slice), Some(&b"t"[..]));
            }
            // Decoding a frame on its own never panics either.
            let _ = decode_frame(frame, DEFAULT_MAX_LINE).map(|m| matches!(m, RpcMessage::Request(_)));
        }
        for e in events.0.lock().unwrap().iter().filter(|e| e.allowed) {
            prop_assert!(allowed_by_policy(&policy, e), "allowed without the policy: {e:?}");
        }
    }

    #[test]
    fn workspace_path_normalisation_never_escapes(input in prop_oneof![
        nasty_path(),
        ".{0,64}",
        prop::collection::vec(prop::sample::select(vec!["..", ".", "", "a", "b", "~", "\\", "/"]), 0..8).prop_map(|c| c.join("/")),
    ]) {
        if let Ok(p) = WorkspacePath::parse(&input) {
            let text = p.as_str();
            prop_assert!(!text.starts_with('/'), "{input:?} -> {text:?}");
            prop_assert!(p.components().all(|c| !c.is_empty() && c != ".." && c != "." && !c.contains('\0') && !c.contains('\\')), "{input:?} -> {text:?}");
            prop_assert_eq!(p.depth(), p.components().count());
            // Normalisation is idempotent: the normal form parses to itself.
            let again = WorkspacePath::parse(if p.is_root() { "." } else { text }).unwrap();
            prop_assert_eq!(again, p);
        }
    }
}
