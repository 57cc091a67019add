//! `jp trust`: show what a workspace's `.jp/config.toml` grants and what changed since the last
//! approval, then approve it (or revoke the approval).

use std::path::PathBuf;
use std::process::ExitCode;

use jp_native::terminal::{self, TerminalInquirer};
use serde_json::json;

use crate::{Cli, Failure, TrustArgs};

pub(crate) async fn trust(cli: &Cli, args: &TrustArgs) -> Result<ExitCode, Failure> {
    use jp_native::trust::{self, TrustStore, Verdict};
    let usage = |message: String| Failure { code: 2, message };
    let given = cli.workspace.clone().unwrap_or_else(|| PathBuf::from("."));
    let workspace = std::fs::canonicalize(&given).map_err(|e| {
        usage(format!("workspace {}: {e}; pass an existing directory with --workspace", given.display()))
    })?;
    let env: std::collections::BTreeMap<String, String> = std::env::vars().collect();
    let state = trust::state_dir(&env)
        .ok_or_else(|| usage("jp keeps approvals in $XDG_STATE_HOME or $HOME, and neither is set".into()))?;
    let store = TrustStore::new(&state);
    let shown_ws = terminal::escape(&workspace.display().to_string());
    if args.revoke {
        let had = store.revoke(&workspace).map_err(|e| usage(e.to_string()))?;
        if cli.json {
            println!("{}", json!({"ok": true, "workspace": workspace, "revoked": had}));
        } else if had {
            println!("revoked: jp no longer uses the configuration of {shown_ws}");
        } else {
            println!("nothing to revoke: no configuration of {shown_ws} was approved");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let config = trust::read_workspace_config(&workspace).map_err(|e| usage(e.to_string()))?;
    let verdict = store.verdict(&workspace, config.as_ref()).map_err(|e| usage(e.to_string()))?;
    // What it grants is decided on the configuration jp would enforce: over the user's own.
    let user_file = trust::user_config_file(&env).filter(|f| f.is_file());
    let user_text = user_file
        .as_ref()
        .map(|f| std::fs::read_to_string(f).map_err(|e| usage(format!("{}: {e}", f.display()))))
        .transpose()?;
    let user_name = user_file.as_ref().map(|f| f.display().to_string()).unwrap_or_default();
    let user = user_text.as_deref().map(|t| (t, user_name.as_str()));
    let config = match (config, &verdict) {
        (Some(config), _) => config,
        (None, Verdict::Removed(previous)) => {
            return approve_removal(cli, args, &store, &workspace, previous, user).await;
        }
        (None, _) => {
            return Err(usage(format!("{shown_ws} has no {}: nothing to approve", jp_native::trust::CONFIG_PATH)));
        }
    };
    let path = terminal::escape(&config.path.display().to_string());
    if matches!(verdict, Verdict::Approved) {
        if cli.json {
            println!(
                "{}",
                json!({"ok": true, "workspace": workspace, "sha256": config.sha256, "approved": true, "changed": false})
            );
        } else {
            println!("{path} is approved as it is (sha256 {})", config.sha256);
        }
        return Ok(ExitCode::SUCCESS);
    }
    let summary = trust::summary(&config.text, &config.path.display().to_string(), user)
        .map_err(|e| usage(trust::unusable_message(&workspace, &e)))?;
    if cli.json && !args.yes {
        return Err(usage(format!(
            "not approved: --json shows no summary to review; run `jp trust --workspace {shown_ws}` on a terminal, or pass --yes"
        )));
    }
    if !cli.json {
        println!("{path} (sha256 {}) grants, beyond jp's defaults:\n{summary}", config.sha256);
        match &verdict {
            Verdict::Changed(previous) => {
                println!("changes since your approval:\n{}", trust::diff(&previous.text, &config.text));
            }
            _ => println!("it was never approved for this workspace.\n"),
        }
    }
    let approve = if args.yes {
        true
    } else if TerminalInquirer::available() {
        let answer = terminal::ask_line(format!("approve this configuration for {shown_ws}? [y/N] ")).await;
        matches!(answer.as_deref(), Some("y" | "yes" | "Y"))
    } else {
        return Err(usage(format!(
            "not approved: no terminal to ask on; review {path}, then run `jp trust --yes --workspace {shown_ws}`"
        )));
    };
    if !approve {
        return Err(Failure { code: 1, message: format!("not approved: jp will not use {path}") });
    }
    store.approve(&workspace, Some(&config)).map_err(|e| Failure { code: 1, message: e.to_string() })?;
    if cli.json {
        println!(
            "{}",
            json!({"ok": true, "workspace": workspace, "sha256": config.sha256, "approved": true, "changed": true})
        );
    } else {
        println!("approved: jp uses {path} (sha256 {}) until it changes", config.sha256);
    }
    Ok(ExitCode::SUCCESS)
}

/// `jp trust` where the approved configuration is gone: show what no longer applies, and on a yes
/// record that the workspace has no configuration (jp then runs it with the user's own and jp's
/// defaults, without complaint, until a configuration appears).
async fn approve_removal(
    cli: &Cli,
    args: &TrustArgs,
    store: &jp_native::trust::TrustStore,
    workspace: &std::path::Path,
    previous: &jp_native::trust::Approval,
    user: Option<(&str, &str)>,
) -> Result<ExitCode, Failure> {
    let usage = |message: String| Failure { code: 2, message };
    let shown_ws = terminal::escape(&workspace.display().to_string());
    if cli.json && !args.yes {
        return Err(usage(format!(
            "not approved: --json shows no summary to review; run `jp trust --workspace {shown_ws}` on a terminal, or pass --yes"
        )));
    }
    if !cli.json {
        println!("{}", jp_native::trust::removal(workspace, previous, user));
    }
    let approve = if args.yes {
        true
    } else if TerminalInquirer::available() {
        let question = format!("approve running {shown_ws} without a workspace configuration from now on? [y/N] ");
        matches!(terminal::ask_line(question).await.as_deref(), Some("y" | "yes" | "Y"))
    } else {
        return Err(usage(format!(
            "not approved: no terminal to ask on; review the above, then run `jp trust --yes --workspace {shown_ws}`"
        )));
    };
    if !approve {
        return Err(Failure {
            code: 1,
            message: format!("not approved: jp still refuses to run {shown_ws} without its approved configuration"),
        });
    }
    store.approve(workspace, None).map_err(|e| Failure { code: 1, message: e.to_string() })?;
    if cli.json {
        println!(
            "{}",
            json!({"ok": true, "workspace": workspace, "sha256": null, "approved": true, "changed": true, "removed": true})
        );
    } else {
        println!(
            "approved: jp runs {shown_ws} without a workspace configuration (your own configuration and jp's defaults) until one appears"
        );
    }
    Ok(ExitCode::SUCCESS)
}
