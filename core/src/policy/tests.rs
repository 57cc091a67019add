//! Unit tests of the policy's construction and file/network decisions.

use super::*;

fn p(s: &str) -> WorkspacePath {
    WorkspacePath::parse(s).unwrap()
}

fn access(toml_text: &str) -> AccessPolicy {
    let cfg: AccessConfig = toml::from_str(toml_text).unwrap();
    AccessPolicy::from_config(None, Some(&cfg)).unwrap()
}

#[test]
fn most_specific_rule_wins_in_full_and_ties_go_last() {
    let pol = access(
        r#"filesystem = [
            { path = ".", allow = ["read", "write"] },
            { path = "src", allow = ["read"] },
            { path = "src/gen", allow = [] },
            { path = "docs", allow = ["read"] },
            { path = "docs", allow = ["read", "create"] },
        ]"#,
    );
    assert!(pol.check_fs(Capability::Update, &p("README.md")).is_allow());
    assert_eq!(pol.check_fs(Capability::Update, &p("src/lib.rs")).kind(), "deny");
    assert_eq!(pol.check_fs(Capability::Read, &p("src/gen/x.rs")).kind(), "deny");
    assert!(pol.check_fs(Capability::Update, &p("src_gen/x")).is_allow());
    assert!(pol.check_fs(Capability::Create, &p("docs/new.md")).is_allow());
    assert!(pol.check_fs(Capability::Read, &p(".env")).kind() == "ask");
}

#[test]
fn summary_names_rules_and_fallbacks() {
    assert_eq!(
        AccessPolicy::vfs_default().summary(),
        "files: . read, else deny; network: else deny; processes: else deny"
    );
    let s = access(r#"filesystem = [{ path = "src", allow = ["write"] }]"#).summary();
    assert!(s.starts_with("files: src create+update+delete, else"), "{s}");
}

#[test]
fn no_policy_lets_a_tool_write_in_jps_own_directory() {
    let rw = access(
        "filesystem = [{ path = \".\", allow = [\"read\", \"create\", \"update\", \"delete\"] }, { path = \".jp\", allow = [\"read\", \"write\", \"execute\"] }]",
    );
    for cap in [Capability::Create, Capability::Update, Capability::Delete, Capability::Execute] {
        for path in [".jp", ".jp/config.toml", ".jp/kb/topic/x.md"] {
            let d = rw.check_fs(cap, &p(path));
            assert_eq!(d.kind(), "deny", "{cap:?} {path}: {d:?}");
            assert!(d.reason().contains("jp trust"), "{d:?}");
        }
    }
    assert!(rw.check_fs(Capability::Read, &p(".jp/config.toml")).is_allow());
    assert!(rw.check_fs(Capability::Update, &p(".jpx/config.toml")).is_allow());
    assert!(rw.check_fs(Capability::Update, &p("src/.jp/config.toml")).is_allow(), "only the workspace's own");
    assert_eq!(rw.check_fs(Capability::Update, &p(".JP/config.toml")).kind(), "deny", "case-insensitive mounts");
    // The user's own hand (the page's file tree) may.
    assert!(AccessPolicy::allow_all().check_fs(Capability::Update, &p(".jp/config.toml")).is_allow());
}

#[test]
fn a_callers_own_write_is_not_asked_about_but_still_decided() {
    let rw = AccessPolicy::stdio_default();
    assert_eq!(rw.check_fs(Capability::Create, &p(".env")).kind(), "ask");
    assert!(rw.check_fs_by_caller(Capability::Create, &p(".env")).is_allow());
    assert_eq!(rw.check_fs_by_caller(Capability::Create, &p(".jp/config.toml")).kind(), "deny");
    let ro = AccessPolicy::vfs_default();
    assert_eq!(ro.check_fs_by_caller(Capability::Create, &p("a.txt")).kind(), "deny");
    let bounded = AccessPolicy::stdio_default().within(AccessPolicy::vfs_default());
    assert!(bounded.is_err(), "read-write is wider than read-only");
}

#[test]
fn home_sensitive_paths_apply_when_workspace_contains_home() {
    let mut pol = AccessPolicy::allow_all();
    assert!(pol.check_fs(Capability::Read, &p("u/.ssh/id_rsa")).is_allow());
    pol.set_home("/home", "/home/u");
    assert_eq!(pol.check_fs(Capability::Read, &p("u/.ssh/id_rsa")).kind(), "ask");
    assert_eq!(pol.check_fs(Capability::Read, &p("u/.aws/credentials")).kind(), "ask");
    assert!(pol.check_fs(Capability::Read, &p("u/.aws/config")).is_allow());
    pol.set_home("/home/u", "/home/u");
    assert_eq!(pol.check_fs(Capability::Read, &p(".kube/config")).kind(), "ask");
    pol.set_home("/work/project", "/home/u");
    assert!(pol.check_fs(Capability::Read, &p(".ssh/x")).is_allow());
}

#[test]
fn policies_made_from_the_shared_builtin_patterns_keep_their_own_home_and_extras() {
    let plain = AccessPolicy::allow_all();
    let mut homed = plain.clone();
    homed.set_home("/home", "/home/u");
    // The clone's set was compiled for no home; the other's for home at `u`.
    assert!(plain.check_fs(Capability::Read, &p("u/.ssh/id_rsa")).is_allow());
    assert_eq!(homed.check_fs(Capability::Read, &p("u/.ssh/id_rsa")).kind(), "ask");
    assert!(plain.check_fs(Capability::Read, &p("u/.ssh/id_rsa")).is_allow());
    let cfg: AccessConfig = toml::from_str(
        r#"filesystem = [{ path = ".", allow = ["read"] }]
sensitive_paths = ["keys/*.key"]"#,
    )
    .unwrap();
    let extra = AccessPolicy::from_config(None, Some(&cfg)).unwrap();
    assert_eq!(extra.check_fs(Capability::Read, &p("keys/a.key")).kind(), "ask");
    assert_eq!(extra.check_fs(Capability::Read, &p(".env")).kind(), "ask", "the built-in patterns still hold");
    assert!(AccessPolicy::vfs_default().check_fs(Capability::Read, &p("keys/a.key")).is_allow());
}

#[test]
fn config_errors_name_the_key() {
    let cfg: AccessConfig =
        toml::from_str(r#"filesystem = [{ path = "ok" }, { path = "../up", allow = ["read"] }]"#).unwrap();
    let e = AccessPolicy::from_config(None, Some(&cfg)).unwrap_err();
    assert_eq!(e.key, "access.filesystem[1].path");
    assert!(matches!(*e.problem, PolicyProblem::Path(PathError::Escapes(_))), "{e}");
    assert!(e.problem.to_string().contains("escapes"));
    let cfg: SandboxConfig = toml::from_str(r#"network = { allow = ["ftp://x"] }"#).unwrap();
    let e = AccessPolicy::from_config(Some(&cfg), None).unwrap_err();
    assert_eq!(e.key, "sandbox.network.allow[0]");
    assert!(
        matches!(&*e.problem, PolicyProblem::NetRule(NetRuleError::Url { source: UrlError::Scheme { scheme }, .. }) if scheme == "ftp"),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        r#"sandbox.network.allow[0]: "ftp://x": scheme 'ftp' is not supported; only http and https URLs are"#
    );
    let cfg: SandboxConfig = toml::from_str(r#"commands.git = { args = [["**", "x"]] }"#).unwrap();
    let e = AccessPolicy::from_config(Some(&cfg), None).unwrap_err();
    assert_eq!(e.key, "sandbox.commands.git.args[0]");
    assert_eq!(*e.problem, PolicyProblem::DoubleStarNotLast);
    let e = toml::from_str::<AccessConfig>(r#"filesystem = [{ path = ".", allow = ["wirte"] }]"#).unwrap_err();
    assert!(e.to_string().contains("wirte"));
}

#[test]
fn the_name_filter_passes_every_sensitive_name_and_gives_way_to_patterns_it_cannot_hold() {
    let policy = AccessPolicy::default();
    let names = policy.sensitive_name_filter().unwrap();
    for name in [".env", ".env.local", ".ssh", "credentials", "config", "config.json", "gcloud", "ënv"] {
        assert!(names.may_be(name), "{name}");
    }
    for name in ["main.rs", "README.md", "env", "src"] {
        assert!(!names.may_be(name), "{name}");
    }
    // Every path the policy calls sensitive has a name the filter passes.
    for path in [".env", "a/b/.env.prod", "deploy/.env"] {
        let p = WorkspacePath::parse(path).unwrap();
        assert!(policy.is_sensitive(&p) && names.may_be(path.rsplit('/').next().unwrap()), "{path}");
    }
    let cfg: crate::policy::AccessConfig = toml::from_str(r#"sensitive_paths = ["secrets/**"]"#).unwrap();
    let wide = AccessPolicy::from_config(None, Some(&cfg)).unwrap();
    assert!(wide.sensitive_name_filter().is_none(), "a pattern ending in ** is asked of every path");
}

/// The text a denial suggests after "e.g. " (up to the closing parenthesis).
fn suggested(decision: &Decision) -> String {
    let text = decision.reason();
    let start = text.find("(e.g. ").expect("a hint") + "(e.g. ".len();
    text[start..text.rfind(')').unwrap()].to_owned()
}

#[test]
fn each_fix_hint_works_when_pasted_as_it_is() {
    // No rule for the URL: its origin, with the port a prefix pins.
    let url = "http://127.0.0.1:8766/api/items";
    let policy = access("network.allow = [\"https://example.com\"]\n");
    let hint = suggested(&policy.check_http(url));
    assert_eq!(hint, "\"http://127.0.0.1:8766\"");
    let fixed = access(&format!("network.allow = [\"https://example.com\", {hint}]\n"));
    assert!(matches!(fixed.check_http(url), Decision::Allow(_)), "{:?}", fixed.check_http(url));
    // A rule for the origin under another path: this path, not the origin again.
    let policy = access("network.allow = [\"http://127.0.0.1:8766/health\"]\n");
    let denied = policy.check_http(url);
    assert!(denied.reason().contains("allows only paths under \"/health\" on that origin"), "{}", denied.reason());
    let hint = suggested(&denied);
    assert_eq!(hint, "\"http://127.0.0.1:8766/api/items\"");
    let fixed = access(&format!("network.allow = [\"http://127.0.0.1:8766/health\", {hint}]\n"));
    assert!(matches!(fixed.check_http(url), Decision::Allow(_)));
    // A program with a path: a key TOML takes as written.
    let policy = access("commands = {}\n");
    let denied = policy.check_process("/usr/bin/python3", &["x.py".into()], &[]);
    let hint = suggested(&denied);
    assert_eq!(hint, "commands.\"/usr/bin/python3\" = { args = [[\"**\"]] }");
    let fixed = access(&format!("{hint}\n"));
    assert!(matches!(fixed.check_process("/usr/bin/python3", &["x.py".into()], &[]), Decision::Allow(_)));
}
