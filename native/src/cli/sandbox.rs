//! `jp sandbox status`: what this kernel enforces.

use std::process::ExitCode;

use jp_native::sandbox::{OPT_OUT_FLAG, probe};
use serde_json::json;

pub(crate) fn status(json: bool) -> ExitCode {
    let p = probe();
    if json {
        println!(
            "{}",
            json!({
                "landlock_abi": p.landlock_abi,
                "landlock_note": p.landlock_note,
                "filesystem": p.filesystem(),
                "network": p.network(),
                "scoping": p.scoping(),
                "seccomp": p.seccomp,
                "egress": p.egress(),
                "egress_note": p.user_namespaces_note,
                "mount_view": p.egress(),
                "can_enforce": p.can_enforce(),
                "missing": p.missing(),
            })
        );
    } else {
        let yes = |b: bool| if b { "enforced" } else { "NOT available" };
        match p.landlock_abi {
            Some(v) => println!("Landlock ABI:            {v}"),
            None => println!("Landlock:                not available ({})", p.landlock_note.as_deref().unwrap_or("?")),
        }
        println!("filesystem restriction:  {}", yes(p.filesystem()));
        println!("TCP bind/connect:        {}", yes(p.network()));
        println!("signal/socket scoping:   {}", yes(p.scoping()));
        println!("seccomp filters:         {}", yes(p.seccomp));
        match &p.user_namespaces_note {
            None => println!(
                "per-host egress:         enforced (a direct-access process whose policy allows URLs gets a network namespace of its own; its only way out is jp's proxy)"
            ),
            Some(why) => println!(
                "per-host egress:         NOT available ({why}); a stdio tool, MCP server or process.run child whose policy allows URLs will NOT run"
            ),
        }
        match &p.user_namespaces_note {
            None => println!(
                "private mount view:      enforced (a stdio tool, MCP server or process.run child sees .jp/ read-only, no sensitive file, and with an exec list runs nothing else)"
            ),
            Some(why) => println!(
                "private mount view:      NOT available ({why}); stdio tools, MCP servers and process.run children run under Landlock alone: a writable one can write .jp/ (then refused by jp trust) and reads the workspace's sensitive files"
            ),
        }
        match p.missing() {
            None => println!("tools run under the OS sandbox"),
            Some(why) => println!("tools will NOT run: {why} (pass {OPT_OUT_FLAG} to run them without the OS sandbox)"),
        }
    }
    if p.can_enforce() { ExitCode::SUCCESS } else { ExitCode::from(1) }
}
