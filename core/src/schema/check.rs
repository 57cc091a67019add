//! A call's arguments checked against the tool's whole JSON Schema, before the tool runs.
//!
//! Since MCP 2025-11-25 (SEP-1303) a bad input is a tool error that the model reads and
//! corrects, so every message names the argument (`o.x[0]`), what it must be and what it got.
//! Every front end — `jp tool call`, `jp mcp`, `jp query`, the page and the edge — checks
//! through [`ArgumentSchema`], compiled once per tool definition and kept with it.
//!
//! An argument the schema does not name is refused too — with the closest name it does, when
//! one is close (`pth` → `path`) — unless the schema says what else it takes
//! (`additionalProperties`, `patternProperties`, a composition): JSON Schema lets unnamed
//! properties through, but a tool's parameters are its named ones, and an unnamed argument is
//! almost always a typo that would otherwise pass silently.
//!
//! The validator is the `jsonschema` crate ([`validator`], feature `jsonschema`, on by default).
//! Without it (the page's jp-web, whose first download it would grow by a third) the check is
//! handed to the validator the embedder installs with [`set_validator`]: the page loads the same
//! core, built with the feature, as a module of its own when a first check needs it, so every
//! front end checks with the same code and words.

use std::fmt;

use std::sync::OnceLock;

use serde_json::{Map, Value};

mod plain;
#[cfg(feature = "jsonschema")]
mod validator;

/// At most this many problems are named in one error (the first ones found).
pub const MAX_PROBLEMS: usize = 5;

/// A value quoted in a message is cut to about this many bytes.
#[cfg_attr(not(feature = "jsonschema"), allow(dead_code))]
const SHOWN_BYTES: usize = 60;

/// A validator installed by the embedder: the schema and the arguments as JSON text, the
/// problems found (empty: they fit) or why the schema cannot be used.
pub type ExternalValidator = fn(schema: &str, arguments: &str) -> Result<Vec<ArgumentProblem>, String>;

static EXTERNAL: OnceLock<ExternalValidator> = OnceLock::new();

/// Install the validator a build without the `jsonschema` feature checks arguments with (once;
/// a later call changes nothing). With the feature it is never used.
pub fn set_validator(validator: ExternalValidator) {
    let _ = EXTERNAL.set(validator);
}

/// A tool's argument schema, compiled once.
pub struct ArgumentSchema {
    /// The schema when it is plain (see `plain`): arguments that fit it need no validator.
    plain: Option<Value>,
    /// Compiled when first needed: at once for a schema that is not plain, else by the first
    /// arguments that do not surely fit it.
    #[cfg(feature = "jsonschema")]
    validator: OnceLock<Result<validator::Compiled, ArgumentError>>,
    /// The schema as JSON, for the installed validator (which compiles and keeps it).
    #[cfg(not(feature = "jsonschema"))]
    schema: String,
    /// The top-level properties the schema names, when those are all the arguments it takes.
    #[cfg(feature = "jsonschema")]
    named: Option<Vec<String>>,
}

impl fmt::Debug for ArgumentSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArgumentSchema").finish_non_exhaustive()
    }
}

/// One way the arguments do not fit the schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgumentProblem {
    /// The argument, as a path below the arguments object: `path`, `opts.depth`, `files[2]`;
    /// empty for the arguments object itself.
    pub path: String,
    /// What it must be and what it got: `must be at least 1, got 0`.
    pub message: String,
}

impl fmt::Display for ArgumentProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "the arguments {}", self.message)
        } else {
            write!(f, "argument '{}' {}", self.path, self.message)
        }
    }
}

/// Why a call's arguments were not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgumentError {
    /// The arguments do not fit the schema: the caller's mistake, which it can fix.
    #[error("{}; see the tool's schema", list(problems))]
    Invalid {
        /// The first [`MAX_PROBLEMS`] problems found.
        problems: Vec<ArgumentProblem>,
    },
    /// The tool's schema is not a JSON Schema this host can check with: the tool's (or its
    /// configuration's) mistake.
    #[error("the tool's argument schema cannot be used ({0}); fix the tool's parameters")]
    Schema(String),
}

fn list(problems: &[ArgumentProblem]) -> String {
    problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
}

impl ArgumentSchema {
    /// Compile `schema` (a JSON Schema of the arguments object; draft 2020-12 unless its
    /// `$schema` says otherwise).
    pub fn compile(schema: &Value) -> Result<Self, ArgumentError> {
        let plain = plain::is_plain(schema).then(|| schema.clone());
        #[cfg(feature = "jsonschema")]
        {
            let validator = OnceLock::new();
            if plain.is_none() {
                let _ = validator.set(Ok(validator::Compiled::new(schema)?));
            }
            const OPEN: [&str; 6] = ["patternProperties", "unevaluatedProperties", "allOf", "anyOf", "oneOf", "$ref"];
            let closed = schema.get("additionalProperties").is_none_or(|a| *a == Value::Bool(false));
            let named = match schema.get("properties").and_then(Value::as_object) {
                Some(p) if closed && !OPEN.iter().any(|k| schema.get(*k).is_some()) => {
                    Some(p.keys().cloned().collect())
                }
                _ => None,
            };
            Ok(Self { plain, validator, named })
        }
        // Compiled, and a bad schema found, by the installed validator at the first check.
        #[cfg(not(feature = "jsonschema"))]
        Ok(Self { plain, schema: schema.to_string() })
    }

    /// [`compile`](Self::compile) with the validator compiled at once and no plain fast path
    /// (what the fast path is checked against).
    #[cfg(all(test, feature = "jsonschema"))]
    pub(super) fn compile_full(schema: &Value) -> Result<Self, ArgumentError> {
        let mut compiled = Self::compile(schema)?;
        if let Some(plain) = compiled.plain.take() {
            let _ = compiled.validator.set(Ok(validator::Compiled::new(&plain)?));
        }
        Ok(compiled)
    }

    /// The arguments the schema does not name (when it names all it takes), each with the
    /// closest name it does when one is close.
    #[cfg(feature = "jsonschema")]
    fn unnamed(&self, arguments: &Value) -> Vec<ArgumentProblem> {
        let (Some(named), Some(given)) = (&self.named, arguments.as_object()) else { return Vec::new() };
        given
            .keys()
            .filter(|k| !named.contains(k))
            .map(|k| {
                let free = named.iter().filter(|n| !given.contains_key(*n)).map(String::as_str);
                let message = match closest(k, free) {
                    Some(n) => format!("is not one of this tool's arguments; did you mean '{n}'?"),
                    None if named.is_empty() => "is not one of this tool's arguments (it takes none); remove it".into(),
                    None => format!("is not one of this tool's arguments ({}); remove it", named.join(", ")),
                };
                ArgumentProblem { path: k.clone(), message }
            })
            .collect()
    }

    /// Check `arguments`: `Ok` when they fit, else the problems, each naming its argument.
    pub fn check(&self, arguments: &Map<String, Value>) -> Result<(), ArgumentError> {
        // The validator takes a `Value`; the map is cloned only when something is wrong.
        let value = Value::Object(arguments.clone());
        self.check_value(&value)
    }

    /// [`check`](Self::check) on arguments already held as a `Value`.
    pub fn check_value(&self, arguments: &Value) -> Result<(), ArgumentError> {
        if self.plain.as_ref().is_some_and(|schema| plain::fits(schema, arguments, true)) {
            return Ok(());
        }
        #[cfg(feature = "jsonschema")]
        let mut problems = {
            let compiled = self.validator.get_or_init(|| match &self.plain {
                Some(schema) => validator::Compiled::new(schema),
                None => Err(ArgumentError::Schema("the schema was not compiled".into())),
            });
            let compiled = compiled.as_ref().map_err(Clone::clone)?;
            let mut problems = self.unnamed(arguments);
            // An unexpected top-level property is named above, with a suggestion.
            compiled.problems(arguments, &mut problems, self.named.is_some());
            if problems.is_empty() {
                return Ok(());
            }
            problems
        };
        #[cfg(not(feature = "jsonschema"))]
        let mut problems = {
            let Some(validate) = EXTERNAL.get() else {
                return Err(ArgumentError::Schema(
                    "no argument validator is installed in this build (jp_core::schema::set_validator)".into(),
                ));
            };
            let problems = validate(&self.schema, &arguments.to_string()).map_err(ArgumentError::Schema)?;
            if problems.is_empty() {
                return Ok(());
            }
            problems
        };
        problems.truncate(MAX_PROBLEMS);
        Err(ArgumentError::Invalid { problems })
    }
}

/// Check `arguments` against `schema`, compiling it for this one check (front ends that check
/// many calls keep an [`ArgumentSchema`]).
pub fn check_arguments(schema: &Value, arguments: &Map<String, Value>) -> Result<(), ArgumentError> {
    ArgumentSchema::compile(schema)?.check(arguments)
}

/// Of `names`, the one closest to `given` when it is close enough to be what was meant: a
/// typo (`pth`, `contnet`), a different case or separator (`Path`, `old-text`).
pub fn closest<'a>(given: &str, names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let folded = |s: &str| s.to_lowercase().replace(['-', '_'], "");
    let g = folded(given);
    names
        .into_iter()
        .filter_map(|n| {
            let f = folded(n);
            // Edits (a swap counts one) few for the length, or a shared start.
            let edits = strsim::osa_distance(&g, &f);
            let near = edits <= (g.len().max(f.len()) / 3).max(1) || strsim::jaro_winkler(&g, &f) >= 0.85;
            near.then_some((n, edits))
        })
        .min_by_key(|(_, edits)| *edits)
        .map(|(n, _)| n)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": { "type": "string" },
                "depth": { "type": "integer", "minimum": 1, "maximum": 10 },
                "mode": { "enum": ["fast", "slow"] },
                "opts": {
                    "type": "object",
                    "properties": { "globs": { "type": "array", "items": { "type": "string", "minLength": 1 } } },
                    "required": ["globs"]
                }
            },
            "required": ["path"]
        })
    }

    /// The problems of `args`, as `(path, message)`.
    fn problems(args: Value) -> Vec<(String, String)> {
        let Value::Object(args) = args else { panic!("arguments must be an object") };
        match check_arguments(&schema(), &args) {
            Ok(()) => Vec::new(),
            Err(ArgumentError::Invalid { problems }) => problems.into_iter().map(|p| (p.path, p.message)).collect(),
            Err(e) => panic!("unexpected: {e}"),
        }
    }

    fn p(path: &str, message: &str) -> (String, String) {
        (path.into(), message.into())
    }

    #[test]
    fn fitting_arguments_pass() {
        assert_eq!(problems(json!({"path": "a"})), []);
        assert_eq!(problems(json!({"path": "a", "depth": 1, "mode": "slow", "opts": {"globs": ["*.rs"]}})), []);
        // A property the schema does not name is refused (see the next test) unless it says
        // what else it takes.
        assert_eq!(problems(json!({"path": "a", "extra": true})).len(), 1);
    }

    #[test]
    fn types() {
        assert_eq!(problems(json!({"path": 3})), [p("path", "must be a string, got 3")]);
        assert_eq!(problems(json!({"path": "a", "depth": 1.5})), [p("depth", "must be an integer, got 1.5")]);
        assert_eq!(problems(json!({"path": "a", "opts": []})), [p("opts", "must be an object, got []")]);
        let multi = json!({"type": "object", "properties": {"v": {"type": ["string", "null"]}}});
        let e = check_arguments(&multi, json!({"v": 1}).as_object().unwrap()).unwrap_err();
        assert_eq!(e.to_string(), "argument 'v' must be one of null, a string, got 1; see the tool's schema");
    }

    #[test]
    fn required() {
        assert_eq!(problems(json!({})), [p("path", "is required but missing")]);
        let e = check_arguments(&schema(), &Map::new()).unwrap_err();
        assert_eq!(e.to_string(), "argument 'path' is required but missing; see the tool's schema");
    }

    #[test]
    fn minimum_and_maximum() {
        assert_eq!(problems(json!({"path": "a", "depth": 0})), [p("depth", "must be at least 1, got 0")]);
        assert_eq!(problems(json!({"path": "a", "depth": 11})), [p("depth", "must be at most 10, got 11")]);
    }

    #[test]
    fn enumerations() {
        assert_eq!(
            problems(json!({"path": "a", "mode": "medium"})),
            [p("mode", r#"must be one of "fast", "slow", got "medium""#)]
        );
    }

    #[test]
    fn an_argument_the_schema_does_not_name_is_refused_with_the_closest_name() {
        assert_eq!(
            problems(json!({"pth": "a"})),
            [
                p("pth", "is not one of this tool's arguments; did you mean 'path'?"),
                p("path", "is required but missing")
            ]
        );
        assert_eq!(
            problems(json!({"path": "a", "bogus": 1})),
            [p("bogus", "is not one of this tool's arguments (depth, mode, opts, path); remove it")]
        );
        // Closed by the schema: named once, with the suggestion.
        let closed = json!({"type": "object", "properties": {"old_text": {}}, "additionalProperties": false});
        let e = check_arguments(&closed, json!({"old-text": 1}).as_object().unwrap()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "argument 'old-text' is not one of this tool's arguments; did you mean 'old_text'?; see the tool's schema"
        );
        // A schema that takes more than it names lets the rest through.
        let open = json!({"type": "object", "properties": {"a": {}}, "additionalProperties": {"type": "string"}});
        assert!(check_arguments(&open, json!({"zzz": "x"}).as_object().unwrap()).is_ok());
    }

    #[test]
    fn the_closest_name_is_a_typo_away_or_none() {
        let names = ["path", "run", "fs_read_file", "content"];
        for (given, meant) in [("pth", "path"), ("rnu", "run"), ("fs_red_file", "fs_read_file"), ("Contnet", "content")]
        {
            assert_eq!(closest(given, names), Some(meant), "{given}");
        }
        assert_eq!(closest("zzz", names), None);
        assert_eq!(closest("x", names), None);
    }

    #[test]
    fn nested_arguments_are_named_by_their_path() {
        assert_eq!(problems(json!({"path": "a", "opts": {}})), [p("opts.globs", "is required but missing")]);
        assert_eq!(
            problems(json!({"path": "a", "opts": {"globs": ["ok", 7, ""]}})),
            [
                p("opts.globs[1]", "must be a string, got 7"),
                p("opts.globs[2]", "must be at least 1 character(s) long, got \"\"")
            ]
        );
    }

    #[test]
    fn several_problems_are_all_named_and_capped() {
        let e = check_arguments(&schema(), json!({"depth": 0, "mode": 1}).as_object().unwrap()).unwrap_err();
        let text = e.to_string();
        for part in [
            "argument 'path' is required",
            "argument 'depth' must be at least 1, got 0",
            "argument 'mode' must be one of",
        ] {
            assert!(text.contains(part), "{text}");
        }
        let many = json!({"type": "object", "properties": {"path": {}}, "additionalProperties": false});
        let args: Map<String, Value> = (0..20).map(|i| (format!("k{i:02}"), json!(i))).collect();
        let ArgumentError::Invalid { problems } = check_arguments(&many, &args).unwrap_err() else { panic!() };
        assert_eq!(problems.len(), MAX_PROBLEMS, "{problems:?}");
        assert_eq!(
            problems[0],
            ArgumentProblem {
                path: "k00".into(),
                message: "is not one of this tool's arguments (path); remove it".into()
            }
        );
    }

    #[test]
    fn long_values_are_cut() {
        let long = "x".repeat(500);
        let e = check_arguments(&schema(), json!({"path": "a", "depth": long}).as_object().unwrap()).unwrap_err();
        let text = e.to_string();
        assert!(text.len() < 150 && text.ends_with("...; see the tool's schema"), "{text}");
    }

    #[test]
    fn composite_keywords_use_the_validators_words() {
        let s = json!({"type": "object", "properties": {"n": {"anyOf": [{"type": "string"}, {"minimum": 5}]}}});
        let e = check_arguments(&s, json!({"n": 1}).as_object().unwrap()).unwrap_err();
        assert!(e.to_string().starts_with("argument 'n' is not valid: 1 is not valid under any of the schemas"), "{e}");
    }

    #[test]
    fn a_broken_schema_is_the_tools_mistake() {
        let e = ArgumentSchema::compile(&json!({"type": "strin"})).unwrap_err();
        assert!(matches!(e, ArgumentError::Schema(_)), "{e}");
        assert!(e.to_string().contains("fix the tool's parameters"), "{e}");
    }

    #[test]
    fn a_compiled_schema_checks_many_calls() {
        let compiled = ArgumentSchema::compile(&schema()).unwrap();
        assert!(compiled.check(json!({"path": "a"}).as_object().unwrap()).is_ok());
        assert!(compiled.check(json!({"path": 1}).as_object().unwrap()).is_err());
        assert!(compiled.check_value(&json!({"path": "b", "depth": 3})).is_ok());
    }
}
