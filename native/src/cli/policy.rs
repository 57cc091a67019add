//! `jp policy suggest [--write] -- ARGS…`: runs `jp ARGS…` (`tool call …`, `query …`, or `mcp`
//! until its client leaves) in learning mode (`jp_native::learning`), then prints, for each tool
//! or MCP server that was refused something, its `access` table widened by just what the run
//! needed (`jp_core::policy::widen`); `--write` puts those tables into the workspace's
//! configuration, which `jp trust` then shows and approves like any change.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use jp_core::host::TraceEvent;
use jp_core::policy::{AccessConfig, AccessPolicy, Need, WorkspacePath, widen};
use jp_core::runtime::ToolSource;
use jp_native::app::App;

use crate::{Cli, Command, Failure, SuggestArgs, ToolSubcommand, options};

/// A table's refusals so far: its path, whether it is a builtin's, its `access` table as written,
/// its policy now, and what it was refused.
type Pending = (Vec<String>, bool, Option<AccessConfig>, AccessPolicy, Vec<Need>);

/// One configuration table the proposal changes.
struct Change {
    /// Its path in the file (`["conversation", "tools", "x"]`).
    table: Vec<String>,
    /// `source = "builtin"` when the table is new and names a builtin tool.
    builtin: bool,
    /// The widened `access` table.
    access: AccessConfig,
    added: Vec<String>,
    impossible: Vec<String>,
}

pub(crate) async fn suggest(outer: &Cli, args: &SuggestArgs) -> Result<ExitCode, Failure> {
    // The command, parsed as `jp` would; the flags given to `jp policy suggest` itself hold
    // for it unless it gives its own.
    let parse = || -> Result<Cli, Failure> {
        let argv = std::iter::once("jp".to_owned()).chain(args.args.iter().cloned());
        let mut inner = <Cli as clap::Parser>::try_parse_from(argv).map_err(|e| Failure {
            code: 2,
            message: format!("jp policy suggest -- ARGS: {}", e.to_string().trim()),
        })?;
        inner.workspace = inner.workspace.or_else(|| outer.workspace.clone());
        inner.config = inner.config.or_else(|| outer.config.clone());
        inner.no_os_sandbox |= outer.no_os_sandbox;
        Ok(inner)
    };
    let run = parse()?;
    if !matches!(run.command, Command::Tool(ToolSubcommand::Call(_)) | Command::Query(_) | Command::Mcp(_)) {
        return Err(Failure {
            code: 2,
            message:
                "learning mode runs `tool call …`, `query …` or `mcp`: e.g. jp policy suggest -- tool call NAME ARGS"
                    .into(),
        });
    }
    let inner = parse()?;
    let recorder = jp_native::learning::start();
    let code = Box::pin(crate::run(run)).await;
    let refusals = recorder.refusals();

    let app = App::load(options(&inner))?;
    app.discover().await;
    let changes = changes(&app, &refusals);
    // The workspace's own file unless `--config` named one (the user's choice).
    let in_workspace = inner.config.is_none();
    let config = inner.config.clone().unwrap_or_else(|| app.workspace().join(".jp/config.toml"));
    eprintln!();
    if changes.is_empty() {
        eprintln!(
            "jp policy suggest: nothing was refused that a rule could allow ({} refusal{}); the configuration needs no change",
            refusals.len(),
            if refusals.len() == 1 { "" } else { "s" }
        );
        return Ok(code);
    }
    let text = render(&changes);
    eprintln!("jp policy suggest: the run was refused what these tables allow (only what it needed was added):\n");
    eprintln!("{text}");
    for c in &changes {
        for line in &c.impossible {
            eprintln!("# not allowed by any rule: {line}");
        }
    }
    if args.write {
        if in_workspace {
            workspace_file(app.workspace(), &config).map_err(|message| Failure { code: 2, message })?;
        }
        write(&config, &changes).map_err(|message| Failure { code: 2, message })?;
        eprintln!("wrote {}; review and approve it with: jp trust", config.display());
    } else {
        eprintln!("add it to {} (or run again with --write), then approve it with: jp trust", config.display());
    }
    Ok(code)
}

/// The tables the refusals call for, one per tool or MCP server.
fn changes(app: &App, refusals: &[TraceEvent]) -> Vec<Change> {
    let workspace = app.workspace().to_path_buf();
    let exists = |p: &WorkspacePath| workspace.join(p.as_str()).exists();
    let mut by_table: Vec<Pending> = Vec::new();
    for event in refusals {
        let Some(need) = Need::from_trace(&event.method, &event.target, &exists) else { continue };
        let Some((table, builtin, access, policy)) = table_of(app, &event.tool) else { continue };
        match by_table.iter_mut().find(|(t, ..)| *t == table) {
            Some(entry) => entry.4.push(need),
            None => by_table.push((table, builtin, access, policy, vec![need])),
        }
    }
    by_table
        .into_iter()
        .filter_map(|(table, builtin, access, policy, needs)| {
            let w = widen(access.as_ref(), &policy, &needs)?;
            (!w.added.is_empty() || !w.impossible.is_empty()).then_some(Change {
                table,
                builtin,
                access: w.access,
                added: w.added,
                impossible: w.impossible,
            })
        })
        .collect()
}

/// The table that decides for `tool` (a tool's, or `mcp.<server>`'s), whether it is a builtin's,
/// its `access` table as written and its policy now. `None` for a tool with a `sandbox` table
/// (learning mode proposes `access` tables only) or none at all.
fn table_of(app: &App, tool: &str) -> Option<(Vec<String>, bool, Option<AccessConfig>, AccessPolicy)> {
    let server = |name: &str| {
        let sc = app.mcp().server_config(name)?;
        if sc.sandbox.is_some() {
            return None;
        }
        let policy = sc.policy().ok()?;
        Some((vec!["mcp".into(), "servers".into(), name.to_owned()], false, sc.access.clone(), policy))
    };
    if let Some(name) = tool.strip_prefix("mcp.")
        && let Some(found) = server(name)
    {
        return Some(found);
    }
    let entry = app.tool(tool).ok()?;
    if let ToolSource::Mcp { server: name, .. } = &entry.config.source {
        return server(name);
    }
    if entry.config.sandbox.is_some() {
        return None;
    }
    let policy = (*entry.policy()).clone();
    Some((
        vec!["conversation".into(), "tools".into(), tool.to_owned()],
        entry.builtin,
        entry.config.access.clone(),
        policy,
    ))
}

/// The changed tables as TOML, each with what was added as comments.
fn render(changes: &[Change]) -> String {
    let mut doc = toml_edit::DocumentMut::new();
    for c in changes {
        let table = access_table(&c.access);
        let mut at = doc.as_table_mut();
        for key in &c.table {
            let next = at.entry(key).or_insert_with(|| {
                let mut t = toml_edit::Table::new();
                t.set_implicit(true);
                toml_edit::Item::Table(t)
            });
            at = next.as_table_mut().expect("a table");
        }
        if c.builtin {
            at.insert("source", toml_edit::value("builtin"));
        }
        let mut table = table;
        let notes: String = c.added.iter().map(|a| format!("# adds {a}\n")).collect();
        table.decor_mut().set_prefix(notes);
        at.insert("access", toml_edit::Item::Table(table));
    }
    doc.to_string()
}

/// `access` as a TOML table whose values are written inline (`filesystem = [{ path = … }]`).
fn access_table(access: &AccessConfig) -> toml_edit::Table {
    let text = toml::to_string(access).unwrap_or_default();
    let parsed: toml_edit::DocumentMut = text.parse().unwrap_or_default();
    let mut out = toml_edit::Table::new();
    for (key, item) in parsed.as_table().iter() {
        let value = match item.clone() {
            toml_edit::Item::Value(v) => v,
            toml_edit::Item::Table(t) => toml_edit::Value::InlineTable(t.into_inline_table()),
            toml_edit::Item::ArrayOfTables(a) => toml_edit::Value::Array(a.into_array()),
            toml_edit::Item::None => continue,
        };
        out.insert(key, toml_edit::Item::Value(value));
    }
    out
}

/// Whether `path` (`<workspace>/.jp/config.toml`) is the workspace's own file to write. `.jp/`
/// can be changed by anyone who could write the workspace (a tool, a cloned repository): a `.jp`
/// or `config.toml` made a symbolic link would send the write elsewhere — into your own
/// configuration directory, say, which jp uses without asking. So neither may be a link, and
/// the directory must lie in the workspace. (What is written there is then refused until
/// `jp trust` approves it, like any change.)
fn workspace_file(workspace: &Path, path: &Path) -> Result<(), String> {
    let dir = path.parent().unwrap_or(workspace);
    for p in [dir, path] {
        if std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(format!(
                "{} is a symbolic link; jp policy suggest --write writes only the workspace's own .jp/config.toml (a link there may have been put by a tool); remove the link, or print the proposal without --write",
                p.display()
            ));
        }
    }
    let inside = std::fs::canonicalize(dir).ok().zip(std::fs::canonicalize(workspace).ok());
    if inside.is_some_and(|(d, w)| !d.starts_with(&w)) {
        return Err(format!("{} is not inside the workspace; nothing was written", dir.display()));
    }
    Ok(())
}

/// Put the changed `access` tables into the configuration file `path` (the rest of the file as
/// it was). A tool or server whose table is not in that file (your own configuration, where a
/// workspace table of the same name would replace it whole) is not written: added by hand.
fn write(path: &Path, changes: &[Change]) -> Result<(), String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let mut doc: toml_edit::DocumentMut =
        text.parse().map_err(|e| format!("{} is not valid TOML ({e}); fix it, then run again", path.display()))?;
    for c in changes {
        let mut at = doc.as_table_mut();
        for (i, key) in c.table.iter().enumerate() {
            let last = i + 1 == c.table.len();
            if !at.contains_key(key) {
                if last && !c.builtin {
                    return Err(format!(
                        "[{}] is not in {}: it comes from your own configuration, where a workspace table of the same name would replace it whole; add the access table printed above there yourself",
                        c.table.join("."),
                        path.display()
                    ));
                }
                let mut t = toml_edit::Table::new();
                t.set_implicit(!last);
                if last {
                    t.insert("source", toml_edit::value("builtin"));
                }
                at.insert(key, toml_edit::Item::Table(t));
            }
            at = match at.get_mut(key) {
                Some(toml_edit::Item::Table(t)) => t,
                _ => return Err(format!("{}: [{}] is not a table", path.display(), c.table[..=i].join("."))),
            };
        }
        at.insert("access", toml_edit::Item::Table(access_table(&c.access)));
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    // Written whole or not at all.
    let tmp = PathBuf::from(format!("{}.jp-suggest.tmp", path.display()));
    std::fs::write(&tmp, doc.to_string()).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("cannot replace {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_linked_jp_directory_or_file_is_never_written_through() {
        let ws = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::write(elsewhere.path().join("config.toml"), "# your own\n").unwrap();
        let file = ws.path().join(".jp/config.toml");
        // `.jp` a link to another directory (your own configuration's, say).
        std::os::unix::fs::symlink(elsewhere.path(), ws.path().join(".jp")).unwrap();
        let e = workspace_file(ws.path(), &file).unwrap_err();
        assert!(e.contains("symbolic link") && e.contains("without --write"), "{e}");
        // `.jp/config.toml` a link out of the workspace.
        std::fs::remove_file(ws.path().join(".jp")).unwrap();
        std::fs::create_dir(ws.path().join(".jp")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path().join("config.toml"), &file).unwrap();
        assert!(workspace_file(ws.path(), &file).unwrap_err().contains("symbolic link"));
        // The workspace's own file: written.
        std::fs::remove_file(&file).unwrap();
        std::fs::write(&file, "").unwrap();
        workspace_file(ws.path(), &file).unwrap();
        assert_eq!(std::fs::read_to_string(elsewhere.path().join("config.toml")).unwrap(), "# your own\n");
    }
}
