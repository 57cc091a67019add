//! A property test of the policy through the dispatcher (issue 10, "Prove it"): for random
//! trees, random rule sets and random operations (read, write, delete, rename of files and
//! directories), the dispatcher allows an operation only if every path it touches is allowed by
//! its own rule — checked against a naive reference model written here, independent of
//! `AccessPolicy`. A refused operation leaves the tree exactly as it was.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use futures_executor::block_on;
use jp_core::files::{InMemoryProjectFiles, ProjectFiles};
use jp_core::host::{Dispatcher, NoEvents};
use jp_core::policy::{AccessConfig, AccessPolicy, WorkspacePath};
use jp_core::protocol::{EntryKind, HostRequest, Id};
use proptest::prelude::*;
use serde_json::json;

const NAMES: [&str; 4] = ["a", "b", "s", ".env"];
const CAPS: [&str; 4] = ["read", "create", "update", "delete"];

/// A path of 1–3 components from a small alphabet, so rules, trees and operations collide.
fn path() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(&NAMES[..]), 1..=3).prop_map(|c| c.join("/"))
}

#[derive(Debug, Clone)]
struct Rule {
    path: String,
    caps: BTreeSet<&'static str>,
}

fn rule() -> impl Strategy<Value = Rule> {
    (prop_oneof![Just(".".to_owned()), path()], prop::sample::subsequence(&CAPS[..], 0..=4))
        .prop_map(|(path, caps)| Rule { path, caps: caps.into_iter().collect() })
}

#[derive(Debug, Clone)]
enum Op {
    Read(String),
    Write(String),
    Delete(String),
    Rename(String, String),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        path().prop_map(Op::Read),
        path().prop_map(Op::Write),
        path().prop_map(Op::Delete),
        (path(), path()).prop_map(|(a, b)| Op::Rename(a, b)),
    ]
}

/// The reference model: the most specific rule (most components, the later on a tie) decides
/// in full; no rule denies; a path with a `.env` component is sensitive and asks, which the
/// default (non-interactive) inquirer denies.
fn model_allows(rules: &[Rule], cap: &str, path: &str) -> bool {
    let comps: Vec<&str> = if path == "." { vec![] } else { path.split('/').collect() };
    let mut best: Option<(usize, &Rule)> = None;
    for r in rules {
        let rc: Vec<&str> = if r.path == "." { vec![] } else { r.path.split('/').collect() };
        if comps.starts_with(&rc) && best.is_none_or(|(d, _)| rc.len() >= d) {
            best = Some((rc.len(), r));
        }
    }
    let by_rule = best.is_some_and(|(_, r)| r.caps.contains(cap));
    by_rule && !comps.contains(&".env")
}

/// Every file and directory in the project (a naive walk).
fn tree(files: &InMemoryProjectFiles) -> BTreeMap<String, EntryKind> {
    let mut out = BTreeMap::new();
    let mut stack = vec![WorkspacePath::root()];
    while let Some(dir) = stack.pop() {
        for e in block_on(files.list_dir(&dir)).unwrap() {
            let child = dir.join(&e.path).unwrap();
            if e.kind == EntryKind::Dir {
                stack.push(child.clone());
            }
            out.insert(child.as_str().to_owned(), e.kind);
        }
    }
    out
}

fn under(path: &str, root: &str) -> bool {
    path == root || path.starts_with(&format!("{root}/"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn the_dispatcher_allows_only_what_every_touched_path_allows(
        seed in prop::collection::btree_set(path(), 0..8),
        rules in prop::collection::vec(rule(), 0..5),
        ops in prop::collection::vec(op(), 1..8),
    ) {
        // A tree from the seed paths: each becomes a file unless another seed path lies below it.
        let seed: Vec<&String> = seed.iter().filter(|p| !seed.iter().any(|q| q != *p && under(q, p))).collect();
        let files = Arc::new(InMemoryProjectFiles::with_files(seed.iter().map(|p| (p.as_str(), "x"))).unwrap());
        let table: Vec<serde_json::Value> =
            rules.iter().map(|r| json!({ "path": r.path, "allow": r.caps.iter().collect::<Vec<_>>() })).collect();
        let access: AccessConfig = serde_json::from_value(json!({ "filesystem": table })).unwrap();
        let policy = AccessPolicy::from_config(None, Some(&access)).unwrap();
        let d = Dispatcher::builder("prop", Arc::new(policy), files.clone()).build();

        for (i, op) in ops.iter().enumerate() {
            let before = tree(&files);
            let snapshot = files.snapshot();
            let exists = |p: &str| before.contains_key(p);
            let (request, allowed, valid) = match op {
                Op::Read(p) => (
                    HostRequest::parse("fs.read", json!({ "path": p })),
                    model_allows(&rules, "read", p),
                    before.get(p) == Some(&EntryKind::File),
                ),
                Op::Write(p) => {
                    let cap = if exists(p) { "update" } else { "create" };
                    let parent_is_file = before.iter().any(|(q, k)| *k == EntryKind::File && p.starts_with(&format!("{q}/")));
                    (
                        HostRequest::parse("fs.write", json!({ "path": p, "content": "new" })),
                        model_allows(&rules, cap, p),
                        before.get(p) != Some(&EntryKind::Dir) && !parent_is_file,
                    )
                }
                Op::Delete(p) => (
                    HostRequest::parse("fs.delete", json!({ "path": p })),
                    model_allows(&rules, "delete", p),
                    before.get(p) == Some(&EntryKind::File),
                ),
                Op::Rename(from, to) => {
                    // Every path the move touches: `from` and everything below it.
                    let moved: Vec<&String> = before.keys().filter(|q| under(q, from)).collect();
                    let allowed = !moved.is_empty() && moved.iter().all(|q| {
                        let landing = format!("{to}{}", &q[from.len()..]);
                        model_allows(&rules, "read", q)
                            && model_allows(&rules, "delete", q)
                            && model_allows(&rules, "create", &landing)
                    });
                    let parent_is_file = before.iter().any(|(q, k)| *k == EntryKind::File && to.starts_with(&format!("{q}/")));
                    let valid = exists(from) && !exists(to) && !under(to, from) && !parent_is_file;
                    (HostRequest::parse("fs.rename", json!({ "from": from, "to": to })), allowed, valid)
                }
            };
            let result = block_on(d.handle(&request.unwrap(), &Id::Number(i as i64), &NoEvents));
            if result.is_ok() {
                prop_assert!(allowed, "op {op:?} succeeded but the model refuses it (rules {rules:?}, tree {before:?})");
            }
            if allowed && valid {
                prop_assert!(result.is_ok(), "op {op:?} is allowed and valid but failed: {result:?} (rules {rules:?}, tree {before:?})");
            }
            if result.is_err() {
                prop_assert_eq!(&tree(&files), &before, "refused {:?} changed the tree", op);
                prop_assert_eq!(&files.snapshot(), &snapshot, "refused {:?} changed a file", op);
            }
        }
    }
}
