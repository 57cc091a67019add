//! The builtin `learn` tool of seed 002. The host preopens the topic's subjects directory at
//! `/subjects` (read-only) and injects the topic's metadata as `_topic`. Without `subjects` the
//! tool lists what there is to learn; with `subjects` (a glob or a list of globs over subject
//! names) it returns their content. Dot-prefixed files and directories and disabled subjects are
//! hidden. Markdown and plain text pass through; other formats are fenced with their language.

wit_bindgen::generate!({
    world: "described-tool",
    path: "../../../wit/tool",
});

use exports::jp::tool::describe;
use jp::tool::types::{Action, ErrorInfo};

const SUBJECTS: &str = "/subjects";

#[derive(serde::Deserialize)]
struct LearnArgs {
    subjects: Option<SubjectsArg>,
    #[serde(default, rename = "_topic")]
    topic: Option<TopicMeta>,
}

#[derive(serde::Deserialize)]
#[serde(untagged)]
enum SubjectsArg {
    Single(String),
    Multiple(Vec<String>),
}

#[derive(serde::Deserialize, Default)]
struct TopicMeta {
    title: Option<String>,
    description: Option<String>,
    #[serde(default)]
    disabled: Vec<String>,
    #[serde(default)]
    learned: Vec<String>,
}

/// A subject: its name (path below /subjects without the extension) and file.
struct Subject {
    name: String,
    path: String,
    extension: String,
}

fn error(message: String) -> Outcome {
    Outcome::Error(ErrorInfo { message, trace: vec![], transient: false })
}

fn collect(dir: &str, prefix: &str, out: &mut Vec<Subject>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let file_name = entry.file_name().to_string_lossy().into_owned();
        if file_name.starts_with('.') {
            continue;
        }
        let path = format!("{dir}/{file_name}");
        if entry.file_type()?.is_dir() {
            collect(&path, &format!("{prefix}{file_name}/"), out)?;
        } else {
            let (stem, extension) = match file_name.rsplit_once('.') {
                Some((s, e)) if !s.is_empty() => (s.to_owned(), e.to_ascii_lowercase()),
                _ => (file_name.clone(), String::new()),
            };
            out.push(Subject { name: format!("{prefix}{stem}"), path, extension });
        }
    }
    Ok(())
}

fn language(extension: &str) -> Option<&str> {
    match extension {
        "md" | "markdown" | "txt" | "text" | "" => None,
        "rs" => Some("rust"),
        "py" => Some("python"),
        "js" | "mjs" => Some("javascript"),
        "ts" => Some("typescript"),
        "sh" => Some("sh"),
        "yml" => Some("yaml"),
        other => Some(other),
    }
}

fn render(subject: &Subject) -> Result<String, String> {
    let text =
        std::fs::read_to_string(&subject.path).map_err(|e| format!("cannot read subject '{}': {e}", subject.name))?;
    Ok(match language(&subject.extension) {
        None => text,
        Some(lang) => {
            // A fence longer than any backtick run inside, so the content cannot close it.
            let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
            let fence = "`".repeat(longest.max(2) + 1);
            format!("{fence}{lang}\n{}\n{fence}", text.trim_end_matches('\n'))
        }
    })
}

fn learn(args: LearnArgs) -> Outcome {
    let topic = args.topic.unwrap_or_default();
    let mut subjects = Vec::new();
    if let Err(e) = collect(SUBJECTS, "", &mut subjects) {
        return error(format!("cannot list the subjects: {e}"));
    }
    subjects.retain(|s| !topic.disabled.contains(&s.name));
    subjects.sort_by(|a, b| a.name.cmp(&b.name));
    let patterns = match args.subjects {
        None => {
            let mut out = String::new();
            if let Some(title) = &topic.title {
                out.push_str(&format!("# {title}\n\n"));
            }
            if let Some(description) = &topic.description {
                out.push_str(&format!("{description}\n\n"));
            }
            if subjects.is_empty() {
                out.push_str("There are no subjects to learn.");
                return Outcome::Success(out);
            }
            out.push_str("Subjects (load them with `subjects`):\n");
            for s in &subjects {
                let learned = if topic.learned.contains(&s.name) { " (already learned)" } else { "" };
                out.push_str(&format!("- {}{learned}\n", s.name));
            }
            return Outcome::Success(out);
        }
        Some(SubjectsArg::Single(p)) => vec![p],
        Some(SubjectsArg::Multiple(p)) => p,
    };
    let mut chosen: Vec<&Subject> = Vec::new();
    for pattern in &patterns {
        let matcher = match globset::GlobBuilder::new(pattern).literal_separator(true).build() {
            Ok(g) => g.compile_matcher(),
            Err(e) => return error(format!("subject pattern {pattern:?} is not a valid glob: {e}")),
        };
        let before = chosen.len();
        for s in &subjects {
            if matcher.is_match(&s.name) && !chosen.iter().any(|c| c.name == s.name) {
                chosen.push(s);
            }
        }
        if chosen.len() == before && !subjects.iter().any(|s| matcher.is_match(&s.name)) {
            let names: Vec<&str> = subjects.iter().map(|s| s.name.as_str()).collect();
            return error(format!("no subject matches {pattern:?}; subjects: {}", names.join(", ")));
        }
    }
    let mut parts = Vec::new();
    for s in chosen {
        match render(s) {
            Ok(text) => parts.push(format!("## Subject: {}\n\n{text}", s.name)),
            Err(e) => return error(e),
        }
    }
    Outcome::Success(parts.join("\n\n"))
}

struct Learn;

impl Guest for Learn {
    fn run(ctx: Context, _name: String, arguments: String, _answers: String) -> Outcome {
        let args: LearnArgs = match serde_json::from_str(&arguments) {
            Ok(v) => v,
            Err(e) => return error(format!("Invalid arguments: {e}")),
        };
        match ctx.action {
            Action::Run => learn(args),
            Action::FormatArguments => Outcome::Success(match args.subjects {
                None => "list subjects".to_owned(),
                Some(SubjectsArg::Single(p)) => format!("learn {p}"),
                Some(SubjectsArg::Multiple(p)) => format!("learn {}", p.join(", ")),
            }),
        }
    }
}

impl describe::Guest for Learn {
    /// The D06 answer, from the file `jp` itself reads (`jp_native::runtime::wasm::LEARN_SCHEMA`) to list
    /// `learn` without compiling this component; a test holds the two to the same text.
    fn schema() -> String {
        SCHEMA.to_owned()
    }
}

/// `learn`'s D06 schema response.
const SCHEMA: &str = include_str!("../schema.json");

export!(Learn);
