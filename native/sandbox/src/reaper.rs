//! `jp` as a child subreaper: a tool's descendants left behind when the tool exits become jp's
//! children (not init's), so they are killed with the tool's process group and reaped by jp, and
//! no zombie of a tool accumulates under a long-lived `jp mcp`.
//!
//! Which zombies are whose: every child jp starts itself leads its own process group
//! ([`ChildCommand`](super::ChildCommand)) and is reaped through its pidfd. A zombie child of jp
//! that does *not* lead its group, in a group other than jp's own, is a tool's descendant
//! reparented here (the sandbox forbids leaving the tool's group) and is reaped by
//! [`reap_orphans`].

use std::io;

use rustix::process::{Pid, WaitOptions};

/// Make this process the subreaper of its descendants (`PR_SET_CHILD_SUBREAPER`). Not a
/// restriction: it only changes who adopts orphans.
pub fn become_subreaper() -> io::Result<()> {
    rustix::process::set_child_subreaper(Some(rustix::process::getpid()))?;
    Ok(())
}

/// One `/proc/PID/stat` line, the fields after the command name: (state, ppid, pgrp).
fn stat_fields(stat: &str) -> Option<(char, i32, i32)> {
    // The command name is in parentheses and may itself hold spaces and parentheses.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, ppid, pgrp))
}

/// Reap every zombie child of this process that a tool left behind (see the module doc); the
/// number reaped. Children jp started itself are left to their own waiters.
pub fn reap_orphans() -> usize {
    let me = rustix::process::getpid().as_raw_nonzero().get();
    let my_group = rustix::process::getpgrp().as_raw_nonzero().get();
    let mut reaped = 0;
    for pid in children().unwrap_or_else(every_process) {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let Some((state, ppid, pgrp)) = stat_fields(&stat) else { continue };
        if ppid != me || state != 'Z' || pgrp == pid || pgrp == my_group {
            continue;
        }
        // A zombie's pid cannot be reused until it is reaped: this reaps exactly that process.
        if let Some(pid) = Pid::from_raw(pid)
            && let Ok(Some(_)) = rustix::process::waitpid(Some(pid), WaitOptions::NOHANG)
        {
            reaped += 1;
        }
    }
    reaped
}

/// This process's children: each of its threads lists its own in
/// `/proc/self/task/TID/children` (an orphan is adopted by one of them). `None` where the kernel
/// has no such file (built without `CONFIG_PROC_CHILDREN`): then every process is looked at.
fn children() -> Option<Vec<i32>> {
    let mut pids = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        match std::fs::read_to_string(task.path().join("children")) {
            Ok(list) => pids.extend(list.split_ascii_whitespace().filter_map(|p| p.parse::<i32>().ok())),
            // A thread that ended meanwhile has no file any more; a kernel without them has none.
            Err(e) if e.kind() == io::ErrorKind::NotFound && task.path().exists() => return None,
            Err(_) => {}
        }
    }
    Some(pids)
}

/// Every process's pid, from `/proc` (a walk that costs a few hundred microseconds).
fn every_process() -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries.flatten().filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok())).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn stat_lines_are_read_past_a_hostile_command_name() {
        let line = "4242 (a) Z 1 (b) S 17 4240 4240 0 -1 4194560 0 0";
        assert_eq!(super::stat_fields(line), Some(('S', 17, 4240)));
        assert_eq!(super::stat_fields("1 (init) S 0 1 1 0"), Some(('S', 0, 1)));
        assert_eq!(super::stat_fields("garbage"), None);
    }
}
