//! The test tool of seed 002, unchanged: a local Wasm tool that reads a file from the preopened
//! workspace with plain `std::fs`. Built against the seed's exact `jp:tool` WIT (world `tool`).

wit_bindgen::generate!({
    world: "tool",
    path: "../../../wit/tool",
});

// The seed's listing leaves out its imports; `Context` and `Outcome` come with the world.
use jp::tool::types::ErrorInfo;

struct TestTool;

impl Guest for TestTool {
    fn run(_ctx: Context, _name: String, arguments: String, _answers: String) -> Outcome {
        let args: TestArgs = match serde_json::from_str(&arguments) {
            Ok(v) => v,
            Err(e) => {
                return Outcome::Error(ErrorInfo {
                    message: format!("Invalid arguments: {e}"),
                    trace: vec![],
                    transient: false,
                });
            }
        };
        // Read a file from the preopened workspace directory
        match std::fs::read_to_string(format!("/workspace/{}", args.path)) {
            Ok(content) => Outcome::Success(content),
            Err(e) => Outcome::Error(ErrorInfo {
                message: format!("Failed to read file: {e}"),
                trace: vec![],
                transient: false,
            }),
        }
    }
}

export!(TestTool);

#[derive(serde::Deserialize)]
struct TestArgs {
    path: String,
}
