//! The builtin file tools (`fs_read_file`, `fs_list_files`, `fs_grep_files`, …) as one WASI
//! component. The tools are the very functions the VFS binary runs (crate `jp-fs-tools`); here
//! their `Host` is [`jp_tool::component::ComponentHost`], i.e. the `jp:host` imports.

wit_bindgen::generate!({
    world: "described-tool",
    path: "../../../wit/tool",
});

use exports::jp::tool::describe;
use jp::tool::types::{ErrorInfo, Question};
use jp_tool::Reply;

/// Map the SDK's reply onto the WIT outcome (shared by every jp-host component).
fn outcome(reply: Reply) -> Outcome {
    match reply {
        Reply::Result(r) => Outcome::Success(r.to_text()),
        Reply::Error(e) => Outcome::Error(ErrorInfo { message: e.message, trace: e.trace, transient: e.transient }),
        Reply::NeedsInput(q) => Outcome::NeedsInput(Question {
            id: q.id,
            text: q.text,
            answer_type: q.answer_type.to_wit(),
            default: q.default.map(|d| d.to_string()),
        }),
    }
}

struct FsTools;

impl Guest for FsTools {
    fn run(_ctx: Context, name: String, arguments: String, answers: String) -> Outcome {
        outcome(jp_tool::component::run(jp_fs_tools::TOOLS, &name, &arguments, &answers))
    }
}

impl describe::Guest for FsTools {
    fn schema() -> String {
        jp_tool::component::schema(jp_fs_tools::TOOLS)
    }
}

export!(FsTools);
