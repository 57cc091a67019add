//! Benchmark tools (used by `npm run bench`): `io_loop` writes and reads back `n` files of
//! `size` bytes through the `jp:host` imports; `noop` returns at once (the per-call cost).

wit_bindgen::generate!({
    world: "described-tool",
    path: "../../../wit/tool",
});

use exports::jp::tool::describe;
use jp::tool::types::ErrorInfo;
use jp_tool::{Call, Host, Reply, ToolSpec};

fn io_loop(host: &dyn Host, call: &Call) -> Reply {
    let n = call.arguments.get("n").and_then(|v| v.as_u64()).unwrap_or(1000);
    let size = call.arguments.get("size").and_then(|v| v.as_u64()).unwrap_or(4096) as usize;
    let content: Vec<u8> = (0..size).map(|i| b'a' + (i % 26) as u8).collect();
    for i in 0..n {
        let path = format!("bench/{i}.txt");
        if let Err(e) = host.write(&path, &content) {
            return Reply::error(format!("write {path}: {}", e));
        }
        match host.read(&path) {
            Ok(back) if back == content => {}
            Ok(_) => return Reply::error(format!("read {path}: different content")),
            Err(e) => return Reply::error(format!("read {path}: {}", e)),
        }
    }
    Reply::text(format!("{n} files of {size} bytes written and read"))
}

fn noop(_: &dyn Host, _: &Call) -> Reply {
    Reply::text("ok")
}

const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "io_loop",
        summary: "Write and read back n files of size bytes under bench/.",
        description: "",
        parameters: r#"{"n": {"type": "integer", "default": 1000}, "size": {"type": "integer", "default": 4096}}"#,
        run: io_loop,
    },
    ToolSpec { name: "noop", summary: "Return at once.", description: "", parameters: "{}", run: noop },
];

struct Bench;

impl Guest for Bench {
    fn run(_ctx: Context, name: String, arguments: String, answers: String) -> Outcome {
        match jp_tool::component::run(TOOLS, &name, &arguments, &answers) {
            Reply::Result(r) => Outcome::Success(r.to_text()),
            Reply::Error(e) => Outcome::Error(ErrorInfo { message: e.message, trace: e.trace, transient: e.transient }),
            Reply::NeedsInput(q) => Outcome::Error(ErrorInfo { message: q.text, trace: Vec::new(), transient: false }),
        }
    }
}

impl describe::Guest for Bench {
    fn schema() -> String {
        jp_tool::component::schema(TOOLS)
    }
}

export!(Bench);
