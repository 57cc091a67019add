//! The shape of JSON text, measured without parsing it: how deep its arrays and objects nest and
//! how many values it holds.
//!
//! jp reads what tools and MCP servers send with serde_json, whose parser recurses and refuses a
//! document nested deeper than [`MAX_DEPTH`] (its recursion limit, which keeps the parser — and
//! the recursive drop of a `serde_json::Value` — within the stack). Such a refusal is only a
//! parse error, and where nobody reads it the call waits for an answer that never comes: a VFS
//! tool's `result` line is answered -32600 while the call goes on, a server's answer is dropped
//! by rmcp while the call waits for it. Measured first, the document is refused in words
//! ([`TOO_DEEP`]) and the call ends at once.

/// The most levels of arrays and objects nested in one JSON document that jp reads: serde_json
/// refuses the 128th (its recursion limit of 128 counts the level it refuses).
pub const MAX_DEPTH: usize = 127;

/// How jp says that a document nests deeper than [`MAX_DEPTH`], after "… is".
pub const TOO_DEEP: &str = "nested more than 127 levels deep, deeper than jp reads JSON";

/// What a JSON text holds more of than allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Over {
    /// Arrays and objects nested deeper than allowed.
    Depth,
    /// More values than allowed.
    Values,
}

/// The first limit `json` goes past, read left to right: arrays and objects nested more than
/// `max_depth` levels deep, or more than `max_values` values — each string (keys too) and each
/// `{`, `[` and `,` outside strings, what parsing it into a tree would allocate. Brackets inside
/// strings do not count. Linear, without recursion, and it stops where a limit is passed;
/// strings are skipped with `memchr`, so text costs little. Text that is not JSON is measured as
/// if it were.
pub fn over(json: &[u8], max_depth: usize, max_values: usize) -> Option<Over> {
    let (mut depth, mut values) = (0usize, 0usize);
    let mut i = 0;
    while i < json.len() {
        let quote = memchr::memchr(b'"', &json[i..]).map_or(json.len(), |j| i + j);
        for &b in &json[i..quote] {
            match b {
                b'{' | b'[' => {
                    depth += 1;
                    if depth > max_depth {
                        return Some(Over::Depth);
                    }
                    values += 1;
                }
                b'}' | b']' => depth = depth.saturating_sub(1),
                b',' => values += 1,
                _ => continue,
            }
            if values > max_values {
                return Some(Over::Values);
            }
        }
        if quote == json.len() {
            break;
        }
        // The string's end: the next quote that no backslash escapes.
        let mut j = quote + 1;
        loop {
            match memchr::memchr2(b'"', b'\\', json.get(j..).unwrap_or_default()) {
                Some(k) if json[j + k] == b'\\' => j += k + 2,
                Some(k) => {
                    i = j + k + 1;
                    break;
                }
                // Unterminated: nothing more to measure.
                None => return None,
            }
        }
        values += 1;
        if values > max_values {
            return Some(Over::Values);
        }
    }
    None
}

/// Whether `json` nests arrays and objects more than `max` levels deep (see [`over`]).
pub fn deeper_than(json: &[u8], max: usize) -> bool {
    over(json, max, usize::MAX) == Some(Over::Depth)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(levels: usize) -> String {
        format!("{}{}", "[".repeat(levels), "]".repeat(levels))
    }

    #[test]
    fn max_depth_is_what_serde_json_reads() {
        assert!(serde_json::from_str::<serde_json::Value>(&nested(MAX_DEPTH)).is_ok());
        let e = serde_json::from_str::<serde_json::Value>(&nested(MAX_DEPTH + 1)).unwrap_err();
        assert!(e.to_string().starts_with("recursion limit exceeded"), "{e}");
        assert!(!deeper_than(nested(MAX_DEPTH).as_bytes(), MAX_DEPTH));
        assert!(deeper_than(nested(MAX_DEPTH + 1).as_bytes(), MAX_DEPTH));
        assert!(TOO_DEEP.contains(&format!(" {MAX_DEPTH} ")));
    }

    #[test]
    fn depth_counts_arrays_and_objects_outside_strings_only() {
        let doc = br#"{"a":[{"b":"[[[{{{ \" [[["}],"c":{}}"#;
        assert!(!deeper_than(doc, 3) && deeper_than(doc, 2));
        // Closed levels do not add up: three arrays one after another are one level deep.
        assert!(!deeper_than(b"[][][]", 1));
        // 200,000 levels: measured without recursion, stopped at the first level too many.
        assert_eq!(over(nested(200_000).as_bytes(), MAX_DEPTH, usize::MAX), Some(Over::Depth));
        assert!(!deeper_than(br#""unterminated [[[["#, 1));
    }

    #[test]
    fn values_are_counted_outside_strings_only() {
        let line = br#"{"content":[{"type":"text","text":"a, [b], {c} \" ,,, \\"}],"n":[1,2]}"#;
        // Strings: content type text text <the text> n = 6; outside: { [ { , , ] , [ , = 7.
        assert_eq!(over(line, usize::MAX, 13), None);
        assert_eq!(over(line, usize::MAX, 12), Some(Over::Values));
        let tiny = br#"[[],[],[],[]]"#;
        assert_eq!(over(tiny, usize::MAX, 7), Some(Over::Values));
        assert_eq!(over(tiny, usize::MAX, 8), None);
        assert_eq!(over(br#""unterminated \" , , ,"#, usize::MAX, 1), None);
        // Whichever limit comes first.
        assert_eq!(over(b"[[[1,2,3]]]", 2, 100), Some(Over::Depth));
        assert_eq!(over(b"[1,2,3,[[[]]]]", 2, 3), Some(Over::Values));
    }
}
