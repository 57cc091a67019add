//! The in-process validator: the `jsonschema` crate (all drafts, `$ref` inside the schema; no
//! remote references: its HTTP and file retrieval are not built, so it builds for wasm32), and
//! what its errors say, in the words of [`ArgumentProblem`].

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::paths::LocationSegment;
use serde_json::Value;

use super::{ArgumentError, ArgumentProblem, MAX_PROBLEMS, SHOWN_BYTES};

/// A schema compiled by `jsonschema`.
pub(super) struct Compiled(jsonschema::Validator);

impl Compiled {
    pub(super) fn new(schema: &Value) -> Result<Self, ArgumentError> {
        jsonschema::validator_for(schema).map(Compiled).map_err(|e| ArgumentError::Schema(e.to_string()))
    }

    /// The problems of `arguments` beyond `problems` (those found already), at most
    /// [`MAX_PROBLEMS`] in all; `skip_top_extra`: an unexpected top-level property is named
    /// already (with a suggestion).
    pub(super) fn problems(&self, arguments: &Value, problems: &mut Vec<ArgumentProblem>, skip_top_extra: bool) {
        if problems.is_empty() && self.0.is_valid(arguments) {
            return;
        }
        for error in self.0.iter_errors(arguments) {
            let path = argument_path(error.instance_path().segments());
            let top_extra = matches!(error.kind(), ValidationErrorKind::AdditionalProperties { .. }) && path.is_empty();
            if top_extra && skip_top_extra {
                continue;
            }
            problems.extend(problems_of(&path, error.kind(), error.instance(), &error.to_string()));
            if problems.len() >= MAX_PROBLEMS {
                break;
            }
        }
        if problems.is_empty() {
            problems.push(ArgumentProblem { path: String::new(), message: "do not fit".into() });
        }
    }
}

/// `a.b[2]` from the segments of an instance location.
fn argument_path<'a>(segments: impl Iterator<Item = LocationSegment<'a>>) -> String {
    let mut out = String::new();
    for s in segments {
        match s {
            LocationSegment::Property(p) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(&p);
            }
            LocationSegment::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

fn joined(path: &str, key: &str) -> String {
    if path.is_empty() { key.to_owned() } else { format!("{path}.{key}") }
}

/// A JSON value as a message quotes it: compact, cut after about [`SHOWN_BYTES`] bytes.
fn shown(value: &Value) -> String {
    let mut text = value.to_string();
    if text.len() > SHOWN_BYTES {
        let mut cut = SHOWN_BYTES - 3;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("...");
    }
    text
}

fn a_type(name: &str) -> String {
    match name {
        "null" => "null".into(),
        n if n.starts_with(['a', 'i', 'o']) => format!("an {n}"),
        n => format!("a {n}"),
    }
}

/// The problems one validation error stands for (a missing property is named as the argument
/// that is missing; each unexpected property as itself).
fn problems_of(path: &str, kind: &ValidationErrorKind, got: &Value, fallback: &str) -> Vec<ArgumentProblem> {
    let one = |message: String| vec![ArgumentProblem { path: path.to_owned(), message }];
    let got_s = shown(got);
    match kind {
        ValidationErrorKind::Required { property } => {
            let name = property.as_str().map_or_else(|| property.to_string(), str::to_owned);
            vec![ArgumentProblem { path: joined(path, &name), message: "is required but missing".into() }]
        }
        ValidationErrorKind::AdditionalProperties { unexpected }
        | ValidationErrorKind::UnevaluatedProperties { unexpected } => unexpected
            .iter()
            .map(|k| ArgumentProblem {
                path: joined(path, k),
                message: "is not one the schema allows here; remove it".into(),
            })
            .collect(),
        ValidationErrorKind::Type { kind } => {
            let wanted = match kind {
                TypeKind::Single(t) => a_type(t.as_str()),
                TypeKind::Multiple(set) => {
                    let names: Vec<String> = set.iter().map(|t| a_type(t.as_str())).collect();
                    format!("one of {}", names.join(", "))
                }
            };
            one(format!("must be {wanted}, got {got_s}"))
        }
        ValidationErrorKind::Minimum { limit } => one(format!("must be at least {limit}, got {got_s}")),
        ValidationErrorKind::Maximum { limit } => one(format!("must be at most {limit}, got {got_s}")),
        ValidationErrorKind::ExclusiveMinimum { limit } => one(format!("must be greater than {limit}, got {got_s}")),
        ValidationErrorKind::ExclusiveMaximum { limit } => one(format!("must be less than {limit}, got {got_s}")),
        ValidationErrorKind::MultipleOf { multiple_of } => {
            one(format!("must be a multiple of {multiple_of}, got {got_s}"))
        }
        ValidationErrorKind::Enum { options } => {
            let options = match options.as_ref() {
                Value::Array(o) => o.iter().map(shown).collect::<Vec<_>>().join(", "),
                other => shown(other),
            };
            one(format!("must be one of {options}, got {got_s}"))
        }
        ValidationErrorKind::Constant { expected_value } => {
            one(format!("must be {}, got {got_s}", shown(expected_value)))
        }
        ValidationErrorKind::MinLength { limit } => {
            one(format!("must be at least {limit} character(s) long, got {got_s}"))
        }
        ValidationErrorKind::MaxLength { limit } => {
            one(format!("must be at most {limit} character(s) long, got {got_s}"))
        }
        ValidationErrorKind::Pattern { pattern } => one(format!("must match the pattern {pattern:?}, got {got_s}")),
        ValidationErrorKind::Format { format } => one(format!("must be a valid {format}, got {got_s}")),
        ValidationErrorKind::MinItems { limit } => one(format!("must have at least {limit} item(s), got {got_s}")),
        ValidationErrorKind::MaxItems { limit } => one(format!("must have at most {limit} item(s), got {got_s}")),
        ValidationErrorKind::UniqueItems => one(format!("must not repeat an item, got {got_s}")),
        ValidationErrorKind::MinProperties { limit } => one(format!("must have at least {limit} field(s)")),
        ValidationErrorKind::MaxProperties { limit } => one(format!("must have at most {limit} field(s)")),
        // anyOf / oneOf / not / …: the validator's own words, which quote the value.
        _ => one(format!("is not valid: {fallback}")),
    }
}
