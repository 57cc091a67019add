//! Text from a tool or a model, made safe to show — on a terminal and on the page alike. Paths,
//! URLs, command lines and arguments come from the tool or the model: written raw, an ESC could
//! move the cursor or clear the screen, a CR or newline could overwrite a question with a forged
//! one, and bidi or zero-width characters could make the text read differently from what it is.
//! [`escape`] writes every such character as an escape (`\x1b`, `\r`, `\u{202e}`, …),
//! [`neutralize`] does the same but keeps line breaks and tabs, and [`shown`] quotes a word that
//! is not plain. Pure functions: `jp` uses them for its terminal, the page through jp-web.

use std::fmt::Write as _;

/// `text` with every character a terminal would not show as itself written as an escape: `\n`,
/// `\r`, `\t`, other C0 controls and DEL as `\x1b`, C1 controls, bidi controls, zero-width and
/// other invisible or format characters as `\u{202e}`; a backslash is doubled so an escape in
/// the output always means the character. Quotes are kept (see [`shown`]).
pub fn escape(text: &str) -> String {
    disarm(text, false)
}

/// Tool output for a terminal: line breaks (`\n`, `\r\n`) and tabs stay as they are so a result
/// reads normally, but no escape sequence, lone carriage return, backspace or bidi/invisible
/// character reaches the terminal to act on it (they are written as in [`escape`];
/// backslashes are left alone). Output to a pipe or file is not passed through this: it stays
/// byte for byte what the tool returned.
pub fn neutralize(text: &str) -> String {
    disarm(text, true)
}

/// The one escaping routine; `layout` keeps line breaks, tabs and backslashes as they are.
fn disarm(text: &str, layout: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' | '\t' | '\\' if layout => out.push(c),
            '\r' if layout && chars.peek() == Some(&'\n') => out.push(c),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\\' => out.push_str("\\\\"),
            c if c < ' ' || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c if invisible(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// A tool-controlled word as it appears in a prompt or trace line: as is when it is one plain
/// word (nothing escaped, no space or quote), otherwise in double quotes with `"` escaped — so
/// where it ends can never be mistaken, and no text of the tool can pass for `jp`'s own words.
pub fn shown(text: &str) -> String {
    let escaped = escape(text);
    let plain = !text.is_empty() && escaped == text && !text.contains([' ', '"', '\'']);
    if plain { escaped } else { format!("\"{}\"", escaped.replace('"', "\\\"")) }
}

/// Characters that change how the text around them is displayed, or are not displayed at all:
/// C1 controls, bidi embeddings/overrides/isolates/marks, zero-width and joiner characters,
/// invisible fillers, variation selectors, tags; then whatever the standard library does not
/// consider printable (format characters, separators, unassigned and private-use code points).
fn invisible(c: char) -> bool {
    matches!(
        c,
        '\u{80}'..='\u{9f}'
            | '\u{ad}'
            | '\u{34f}'
            | '\u{61c}'
            | '\u{115f}'
            | '\u{1160}'
            | '\u{17b4}'
            | '\u{17b5}'
            | '\u{180b}'..='\u{180f}'
            | '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{205f}'..='\u{206f}'
            | '\u{3164}'
            | '\u{fe00}'..='\u{fe0f}'
            | '\u{feff}'
            | '\u{ffa0}'
            | '\u{fff0}'..='\u{fffb}'
            | '\u{e0000}'..='\u{e0fff}'
    ) || c != '\'' && c != '"' && {
        // `str::escape_debug` escapes what is not printable (and grapheme extenders only at the
        // start, which `x` prevents: combining accents of a real name stay readable).
        let pair: String = ['x', c].into_iter().collect();
        pair.escape_debug().nth(1) == Some('\\')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_shows_every_class_of_control_and_invisible_character() {
        let cases: &[(&str, &str)] = &[
            ("\n", "\\n"),
            ("\r", "\\r"),
            ("\t", "\\t"),
            ("\u{1b}[2J", "\\x1b[2J"),
            ("\u{8}", "\\x08"),
            ("\u{7}", "\\x07"),
            ("\u{0}", "\\x00"),
            ("\u{7f}", "\\x7f"),
            ("\u{9b}31m", "\\u{9b}31m"),
            ("\u{85}", "\\u{85}"),
            ("\\x1b", "\\\\x1b"),
            ("\u{ad}", "\\u{ad}"),
            ("\u{61c}", "\\u{61c}"),
            ("\u{200b}\u{200c}\u{200d}", "\\u{200b}\\u{200c}\\u{200d}"),
            ("\u{2060}\u{feff}", "\\u{2060}\\u{feff}"),
            ("\u{2028}\u{2029}", "\\u{2028}\\u{2029}"),
            ("\u{3164}\u{115f}", "\\u{3164}\\u{115f}"),
            ("\u{fe0f}\u{e0041}", "\\u{fe0f}\\u{e0041}"),
            ("\u{a0}", "\\u{a0}"),
            ("\u{e000}", "\\u{e000}"),
        ];
        for (raw, want) in cases {
            assert_eq!(escape(raw), *want, "{raw:?}");
        }
        // Every bidi control: embeddings, overrides, isolates, marks.
        for c in ('\u{202a}'..='\u{202e}').chain('\u{2066}'..='\u{2069}').chain(['\u{200e}', '\u{200f}']) {
            assert_eq!(escape(&c.to_string()), format!("\\u{{{:x}}}", u32::from(c)));
        }
        // Every C0 and C1 control, and nothing raw left of any of them.
        for c in ('\u{0}'..='\u{1f}').chain(['\u{7f}']).chain('\u{80}'..='\u{9f}') {
            let e = escape(&c.to_string());
            assert!(e.starts_with('\\') && !e.contains(c), "{c:?} -> {e:?}");
        }
        // Ordinary text, quotes and real names with accents (combining or not) stay as they are.
        for plain in ["src/main.rs", "it's \"quoted\"", "café", "cafe\u{301}", "日本語/ファイル", "emoji 🦀"]
        {
            assert_eq!(escape(plain), plain);
        }
    }

    #[test]
    fn neutralize_keeps_lines_and_tabs_and_disarms_the_rest() {
        assert_eq!(neutralize("a\tb\nc\r\nd\\e"), "a\tb\nc\r\nd\\e");
        assert_eq!(neutralize("x\u{1b}[2Jy\rz\u{8}\u{202e}"), "x\\x1b[2Jy\\rz\\x08\\u{202e}");
    }

    #[test]
    fn shown_quotes_anything_that_is_not_one_plain_word() {
        assert_eq!(shown("README.md"), "README.md");
        assert_eq!(shown("a b"), "\"a b\"");
        assert_eq!(shown(""), "\"\"");
        assert_eq!(shown("say \"hi\""), "\"say \\\"hi\\\"\"");
        assert_eq!(shown("x\u{1b}]0;t\u{7}"), "\"x\\x1b]0;t\\x07\"");
        assert_eq!(shown("a\u{202e}txt.exe"), "\"a\\u{202e}txt.exe\"");
    }
}
