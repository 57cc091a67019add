//! Test-only: a stateful component whose live sessions misbehave when told to, for the
//! per-command limits of a handle (each `fetch`/`apply` gets its own deadline; the memory limit
//! holds for the instance; a trap stops the handle). Every tool name serves all four actions.
//! `apply` with data: `"spin"` loops forever, `"bomb"` allocates until it cannot, `"trap"`
//! panics, `"flood"` answers with 64 MiB, `"sleep"` sleeps a day, `"write:PATH"` writes the
//! workspace file PATH (as far as its host lets it); anything else is echoed.
//! `fetch` counts the commands so far (so a test sees the session's state survive).

wit_bindgen::generate!({
    path: ["../../../wit/host", "../../../wit/tool"],
    inline: "
        package jp:faults-stateful;

        world faults-stateful {
            import jp:host/filesystem@0.1.0;
            include jp:tool/tool@0.1.0;
            export jp:tool/stateful@0.1.0;
        }
    ",
    world: "faults-stateful",
    generate_all,
});

use std::cell::Cell;

use exports::jp::tool::stateful::{self, Input, Session, ToolState};
use jp::tool::types::ErrorInfo;

struct Faults;

struct Live(Cell<u64>);

impl stateful::GuestSession for Live {
    fn fetch(&self) -> ToolState {
        self.0.set(self.0.get() + 1);
        ToolState::Running(Some(format!("commands: {}", self.0.get())))
    }
    fn apply(&self, input: Input) -> ToolState {
        self.0.set(self.0.get() + 1);
        let Input::Data(json) = input else { return ToolState::Running(Some("no questions here".into())) };
        match json.trim_matches('"') {
            "spin" => {
                let mut x: u64 = 0;
                loop {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
            }
            "bomb" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1u8; 16 << 20]);
                    std::hint::black_box(&hoard);
                }
            }
            "trap" => panic!("told to trap"),
            "flood" => ToolState::Running(Some("x".repeat(64 << 20))),
            "sleep" => {
                std::thread::sleep(std::time::Duration::from_secs(86_400));
                ToolState::Running(Some("slept".into()))
            }
            // A session that writes (where its host's policy lets it): `write:PATH`.
            other => match other.strip_prefix("write:") {
                Some(path) => match jp::host::filesystem::write(path, b"written by a session") {
                    Ok(()) => ToolState::Running(Some(format!("wrote {path}"))),
                    Err(e) => ToolState::Running(Some(format!("not written: {}", e.message))),
                },
                None => ToolState::Running(Some(format!("echo: {other}"))),
            },
        }
    }
    fn save(&self) -> Option<String> {
        None
    }
}

impl stateful::Guest for Faults {
    type Session = Live;
    fn actions(_name: String) -> Vec<String> {
        ["spawn", "fetch", "apply", "abort"].map(String::from).to_vec()
    }
    fn spawn(_ctx: Context, _name: String, _arguments: String) -> Result<Session, ErrorInfo> {
        Ok(Session::new(Live(Cell::new(0))))
    }
    fn restore(_ctx: Context, _name: String, _saved: String) -> Result<Session, ErrorInfo> {
        Err(ErrorInfo { message: "cannot restore".into(), trace: Vec::new(), transient: false })
    }
}

impl Guest for Faults {
    fn run(_ctx: Context, _name: String, _arguments: String, _answers: String) -> Outcome {
        Outcome::Success("one-shot".into())
    }
}

export!(Faults);
