//! The builtin file tools of jp-host, written once against the [`jp_tool::Host`] trait: the
//! same source runs as a sandboxed VFS subprocess (the `jp-fs-tools` binary, or `jp` itself in
//! tool mode) and as a WASI component.
//!
//! | tool | default policy |
//! |---|---|
//! | `fs_read_file`, `fs_list_files`, `fs_grep_files` | workspace read-only |
//! | `fs_create_file`, `fs_modify_file`, `fs_delete_file`, `fs_move_file` | workspace writable |

use jp_core::protocol::{EntryKind, FsGrepParams};
use jp_tool::{Call, Host, Reply, ToolSpec};
use serde_json::Value;

/// Most entries `fs_list_files` returns.
pub const MAX_LISTED: usize = 5_000;

/// Every tool of this crate.
pub const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "fs_read_file",
        summary: "Read a file of the project, optionally a range of lines.",
        description: "Returns the text of the file. start_line and end_line are 1-based and inclusive.",
        parameters: r#"{
            "path": {"type": "string", "summary": "File path relative to the project root.", "required": true},
            "start_line": {"type": "integer", "summary": "First line to return (1-based).", "required": false},
            "end_line": {"type": "integer", "summary": "Last line to return (inclusive).", "required": false}
        }"#,
        run: read_file,
    },
    ToolSpec {
        name: "fs_list_files",
        summary: "List the files of the project or of a directory.",
        description: "Lists file paths relative to the project root, recursively by default, skipping hidden entries.",
        parameters: r#"{
            "path": {"type": "string", "summary": "Directory to list (default: the project root).", "default": "."},
            "extensions": {"type": "array", "items": {"type": "string"}, "summary": "Only files with these extensions.", "required": false},
            "recursive": {"type": "boolean", "summary": "Descend into subdirectories.", "default": true}
        }"#,
        run: list_files,
    },
    ToolSpec {
        name: "fs_grep_files",
        summary: "Search the project's files for a regular expression.",
        description: "Prints path:line:text for matches and path-line-text for context lines. Respects .gitignore, skips hidden and binary files.",
        parameters: r#"{
            "pattern": {"type": "string", "summary": "Regular expression (Rust regex syntax).", "required": true},
            "paths": {"type": "array", "items": {"type": "string"}, "summary": "Files or directories to search.", "required": false},
            "extensions": {"type": "array", "items": {"type": "string"}, "summary": "Only files with these extensions.", "required": false},
            "context": {"type": "integer", "summary": "Lines of context around each match.", "default": 0}
        }"#,
        run: grep_files,
    },
    ToolSpec {
        name: "fs_create_file",
        summary: "Create a file with the given content.",
        description: "Fails if the file exists, unless overwrite is true. Parent directories are created.",
        parameters: r#"{
            "path": {"type": "string", "summary": "File path relative to the project root.", "required": true},
            "content": {"type": "string", "summary": "The file's content.", "default": ""},
            "overwrite": {"type": "boolean", "summary": "Replace an existing file.", "default": false}
        }"#,
        run: create_file,
    },
    ToolSpec {
        name: "fs_modify_file",
        summary: "Replace text in a file.",
        description: "Each pattern's old text must occur exactly once, unless replace_all is set. All replacements are written at once or not at all.",
        parameters: r#"{
            "path": {"type": "string", "summary": "File path relative to the project root.", "required": true},
            "patterns": {"type": "array", "summary": "Replacements, applied in order.", "required": true,
                "items": {"type": "object", "properties": {
                    "old": {"type": "string", "summary": "Text to replace.", "required": true},
                    "new": {"type": "string", "summary": "Replacement.", "required": true}}}},
            "replace_all": {"type": "boolean", "summary": "Replace every occurrence.", "default": false}
        }"#,
        run: modify_file,
    },
    ToolSpec {
        name: "fs_delete_file",
        summary: "Delete a file.",
        description: "",
        parameters: r#"{"path": {"type": "string", "summary": "File path relative to the project root.", "required": true}}"#,
        run: delete_file,
    },
    ToolSpec {
        name: "fs_move_file",
        summary: "Move or rename a file or directory.",
        description: "The destination must not exist; its parents are created.",
        parameters: r#"{
            "source": {"type": "string", "summary": "Existing path.", "required": true},
            "destination": {"type": "string", "summary": "New path.", "required": true}
        }"#,
        run: move_file,
    },
];

/// Tools that only read.
pub const READ_ONLY_TOOLS: [&str; 3] = ["fs_read_file", "fs_list_files", "fs_grep_files"];

macro_rules! tri {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(e) => return Reply::from(e),
        }
    };
}

macro_rules! arg {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(reply) => return reply,
        }
    };
}

fn read_file(host: &dyn Host, call: &Call) -> Reply {
    let path = arg!(call.required_str("path"));
    let text = tri!(host.read_to_string(path));
    let start = call.u64_arg("start_line");
    let end = call.u64_arg("end_line");
    if start.is_none() && end.is_none() {
        return Reply::text(text);
    }
    let start = start.unwrap_or(1).max(1) as usize;
    let lines: Vec<&str> = text.lines().collect();
    let end = end.map_or(lines.len(), |e| (e as usize).min(lines.len()));
    if start > end {
        return Reply::error(format!(
            "start_line {start} is after end_line {end} ('{path}' has {} lines)",
            lines.len()
        ));
    }
    Reply::text(lines[start - 1..end].join("\n"))
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() || dir == "." { name.to_owned() } else { format!("{}/{name}", dir.trim_end_matches('/')) }
}

fn list_files(host: &dyn Host, call: &Call) -> Reply {
    let root = call.str_arg("path").unwrap_or(".");
    let recursive = call.bool_arg("recursive", true);
    let extensions = call.str_list("extensions").unwrap_or_default();
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    let mut queue = vec![root.to_owned()];
    while let Some(dir) = queue.pop() {
        let entries = match host.list_dir(&dir) {
            Ok(e) => e,
            Err(e) if dir == root => return Reply::from(e),
            Err(e) => {
                skipped.push(format!("{dir} ({e})"));
                continue;
            }
        };
        for entry in entries {
            if entry.path.starts_with('.') {
                continue;
            }
            let path = join(&dir, &entry.path);
            match entry.kind {
                EntryKind::Dir if recursive => queue.push(path),
                EntryKind::Dir => files.push(format!("{path}/")),
                EntryKind::File => {
                    let ext_ok = extensions.is_empty()
                        || entry
                            .path
                            .rsplit_once('.')
                            .is_some_and(|(_, e)| extensions.iter().any(|x| x.trim_start_matches('.') == e));
                    if ext_ok {
                        files.push(path);
                    }
                }
            }
        }
    }
    files.sort();
    let total = files.len();
    files.truncate(MAX_LISTED);
    let mut out = files.join("\n");
    if total > MAX_LISTED {
        out.push_str(&format!("\n… {} more files not shown", total - MAX_LISTED));
    }
    skipped.sort();
    for s in skipped {
        out.push_str(&format!("\n(not listed: {s})"));
    }
    if total == 0 && out.is_empty() {
        out = format!("No files in '{root}'.");
    }
    Reply::text(out)
}

fn grep_files(host: &dyn Host, call: &Call) -> Reply {
    let pattern = arg!(call.required_str("pattern"));
    let params = FsGrepParams {
        pattern: pattern.to_owned(),
        paths: call.str_list("paths"),
        extensions: call.str_list("extensions"),
        context: call.u64_arg("context").map(|c| c.min(100) as u32),
    };
    let matches = tri!(host.grep(&params));
    if matches.is_empty() {
        return Reply::text(format!("No matches for pattern '{pattern}'."));
    }
    let mut out = Vec::new();
    for file in matches {
        for line in file.lines {
            let sep = if line.is_match { ':' } else { '-' };
            out.push(format!("{}{sep}{}{sep}{}", file.path, line.line_number, line.content));
        }
    }
    Reply::text(out.join("\n"))
}

fn create_file(host: &dyn Host, call: &Call) -> Reply {
    let path = arg!(call.required_str("path"));
    let content = call.str_arg("content").unwrap_or("");
    let overwrite = call.bool_arg("overwrite", false);
    let existed = tri!(host.exists(path));
    if existed && !overwrite {
        return Reply::error(format!("'{path}' already exists; set overwrite to true to replace it"));
    }
    tri!(host.write(path, content.as_bytes()));
    Reply::text(format!("{} '{path}' ({} bytes).", if existed { "Overwrote" } else { "Created" }, content.len()))
}

fn modify_file(host: &dyn Host, call: &Call) -> Reply {
    let path = arg!(call.required_str("path"));
    let Some(Value::Array(patterns)) = call.arguments.get("patterns") else {
        return Reply::error("missing required argument 'patterns': a list of {\"old\": …, \"new\": …}");
    };
    let replace_all = call.bool_arg("replace_all", false);
    let mut text = tri!(host.read_to_string(path));
    let mut replacements = 0usize;
    for (i, p) in patterns.iter().enumerate() {
        let (Some(old), Some(new)) = (p.get("old").and_then(Value::as_str), p.get("new").and_then(Value::as_str))
        else {
            return Reply::error(format!("patterns[{i}] needs string fields 'old' and 'new'"));
        };
        if old.is_empty() {
            return Reply::error(format!("patterns[{i}].old is empty; give the text to replace"));
        }
        let count = text.matches(old).count();
        match (count, replace_all) {
            (0, _) => return Reply::error(format!("patterns[{i}].old was not found in '{path}'; nothing was changed")),
            (1, _) | (_, true) => {
                text = text.replace(old, new);
                replacements += count;
            }
            (n, false) => {
                return Reply::error(format!(
                    "patterns[{i}].old occurs {n} times in '{path}'; add surrounding text to make it unique or set replace_all; nothing was changed"
                ));
            }
        }
    }
    tri!(host.write(path, text.as_bytes()));
    Reply::text(format!("Modified '{path}': {replacements} replacement{}.", if replacements == 1 { "" } else { "s" }))
}

fn delete_file(host: &dyn Host, call: &Call) -> Reply {
    let path = arg!(call.required_str("path"));
    tri!(host.delete(path));
    Reply::text(format!("Deleted '{path}'."))
}

fn move_file(host: &dyn Host, call: &Call) -> Reply {
    let from = arg!(call.required_str("source"));
    let to = arg!(call.required_str("destination"));
    tri!(host.rename(from, to));
    Reply::text(format!("Moved '{from}' to '{to}'."))
}
