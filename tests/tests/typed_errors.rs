//! The host's errors are typed: each way a workspace, a configuration or a call can be wrong is a
//! variant a caller can match (issue 28), with words that say what to fix. These load real
//! workspaces from temp dirs and call real tools through `App`.

use std::path::Path;

use jp_core::runtime::{CommandError, ComponentError, KbPlace, KnowledgeBaseError, RuntimeError, ToolCall};
use jp_core::schema::SchemaError;
use jp_native::app::{App, AppError, AppOptions};
use serde_json::{Map, Value, json};

/// `App` over `ws`, configured by `config` (a file outside the workspace).
fn load(ws: &Path, config: &str) -> Result<App, AppError> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.toml");
    std::fs::write(&file, config).unwrap();
    let mut options = AppOptions::new(ws);
    options.config_file = Some(file);
    let app = App::load(options);
    drop(dir);
    app
}

fn args(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap()
}

async fn call(app: &App, name: &str, arguments: Value) -> RuntimeError {
    match app.call(ToolCall::new(name, "c", args(arguments))).await {
        Ok(outcome) => panic!("{name}: expected an error, got {outcome:?}"),
        Err(e) => e,
    }
}

#[test]
fn a_workspace_that_cannot_be_used_is_named_by_its_cause() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let e = App::load(AppOptions::new(&missing)).unwrap_err();
    assert!(matches!(&e, AppError::NoWorkspace { path, .. } if path == &missing), "{e:?}");
    assert!(e.to_string().contains("pass an existing directory with --workspace"), "{e}");

    let file = dir.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let e = App::load(AppOptions::new(&file)).unwrap_err();
    assert!(matches!(&e, AppError::NotADirectory { .. }), "{e:?}");

    // A configuration file inside the workspace, where tools may write it, is refused.
    let ws = tempfile::tempdir().unwrap();
    let inside = ws.path().join("jp.toml");
    std::fs::write(&inside, "").unwrap();
    let mut options = AppOptions::new(ws.path());
    options.config_file = Some(inside.clone());
    let e = App::load(options).unwrap_err();
    assert!(matches!(&e, AppError::ConfigInWorkspace { path } if path == &inside), "{e:?}");
    assert!(e.to_string().contains("put it outside the workspace"), "{e}");
}

#[test]
fn a_configuration_that_cannot_be_used_is_named_by_its_cause() {
    let ws = tempfile::tempdir().unwrap();
    let e = load(ws.path(), "[conversation.tools.nope]\nsource = \"builtin\"\n").unwrap_err();
    assert!(
        matches!(&e, AppError::NoSuchBuiltin { name, builtins, .. } if name == "nope" && builtins.contains("learn")),
        "{e:?}"
    );
    assert!(e.to_string().contains("use source = \"local\" with a `command`"), "{e}");

    let bad_policy = "[conversation.tools.t]\ncommand = \"true\"\n[conversation.tools.t.access]\nfilesystem = [{ path = \"/etc\", allow = [\"read\"] }]\n";
    let e = load(ws.path(), bad_policy).unwrap_err();
    assert!(matches!(&e, AppError::Config(c) if c.key == "conversation.tools.t.access.filesystem[0].path"), "{e:?}");
    assert!(e.to_string().contains("is absolute"), "{e}");

    let e = load(ws.path(), "[conversation.tools.t]\nruntime = 7\n").unwrap_err();
    assert!(matches!(&e, AppError::Config(c) if c.key.contains("runtime")), "{e:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn learn_names_what_is_wrong_with_its_knowledge_base_or_the_call() {
    let ws = tempfile::tempdir().unwrap();
    let app = load(ws.path(), "").unwrap();
    let e = call(&app, "learn", json!({})).await;
    assert!(matches!(&e, RuntimeError::KnowledgeBase(KnowledgeBaseError::Missing { kb }) if kb == ".jp/kb"), "{e:?}");

    std::fs::create_dir_all(ws.path().join(".jp/kb/a")).unwrap();
    std::fs::create_dir_all(ws.path().join(".jp/kb/b")).unwrap();
    // The caller's mistakes are input errors: a topic that is not there, none of several, not a string.
    for arguments in [json!({"topic": "nope"}), json!({}), json!({"topic": 5})] {
        let e = call(&app, "learn", arguments.clone()).await;
        assert!(
            matches!(&e, RuntimeError::Input(m) if m.contains("learn") && m.contains("topic")),
            "{arguments}: {e:?}"
        );
    }

    // A knowledge base that is a link out of the workspace.
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join(".jp")).unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.path().join(".jp/kb")).unwrap();
    let app = load(ws.path(), "").unwrap();
    let e = call(&app, "learn", json!({})).await;
    assert!(
        matches!(&e, RuntimeError::KnowledgeBase(KnowledgeBaseError::LeadsOutside { place, .. }) if *place == KbPlace::KnowledgeBase),
        "{e:?}"
    );
    assert!(e.to_string().contains("or set `options.kb` of the learn tool"), "{e}");

    let app = load(ws.path(), "[conversation.tools.learn]\nsource = \"builtin\"\noptions.kb = 3\n").unwrap();
    let e = call(&app, "learn", json!({})).await;
    assert!(
        matches!(&e, RuntimeError::KnowledgeBase(KnowledgeBaseError::NotAString { got, .. }) if got == "3"),
        "{e:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_that_cannot_be_run_is_named_by_its_cause() {
    let ws = tempfile::tempdir().unwrap();
    let config = r#"
[conversation.tools.quotes]
source = "local"
command = "'unbalanced"
parameters = {}
[conversation.tools.absent]
source = "local"
command = "no-such-program-anywhere"
parameters = {}
[conversation.tools.component]
source = "local"
wasm = "missing.wasm"
parameters = {}
"#;
    let app = load(ws.path(), config).unwrap();
    let e = call(&app, "quotes", json!({})).await;
    assert!(matches!(&e, RuntimeError::Command(CommandError::UnbalancedQuotes { .. })), "{e:?}");
    let e = call(&app, "absent", json!({})).await;
    assert!(
        matches!(&e, RuntimeError::Command(CommandError::ProgramNotFound { program, .. }) if program == "no-such-program-anywhere"),
        "{e:?}"
    );
    let e = call(&app, "component", json!({})).await;
    assert!(matches!(&e, RuntimeError::Component(c @ ComponentError::NotFound { .. }) if c.is_config()), "{e:?}");

    let e = call(&app, "nope", json!({})).await;
    assert!(
        matches!(&e, RuntimeError::UnknownTool { name, available } if name == "nope" && available.contains("quotes")),
        "{e:?}"
    );

    // `key=value` words that are not.
    let e = app.parse_pairs("learn", &["topic".into()]).await.unwrap_err();
    assert!(matches!(&e, RuntimeError::Input(m) if m.contains("is not key=value")), "{e:?}");

    // A component that cannot describe itself, asked for its schema.
    let config = "[conversation.tools.component]\nsource = \"local\"\nwasm = \"missing.wasm\"\n";
    let app = load(ws.path(), config).unwrap();
    let e = app.definition("component").await.unwrap_err();
    assert!(matches!(&e, RuntimeError::Schema(SchemaError::Unparseable { tool, .. }) if tool == "component"), "{e:?}");
    assert!(e.to_string().contains("Wasm binary not found"), "{e}");
}
