//! Secret scrubbing (RFD 016): every byte returned to a tool passes through a [`Scrubber`] that
//! replaces each resolved secret with `[REDACTED]` — in its raw form and in the encodings a tool
//! could receive it in: base64 (standard and URL-safe, at each of the three byte alignments),
//! JSON string escaping and URL percent-encoding.

use std::borrow::Cow;

use aho_corasick::{AhoCorasick, MatchKind};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};

/// The replacement text.
pub const REDACTED: &str = "[REDACTED]";

/// Secrets shorter than this are not scrubbed: replacing every `a` or `1` in the output would
/// destroy it without protecting anything.
pub const MIN_SECRET_LEN: usize = 4;

/// Replaces secret values in bytes returned to a tool.
#[derive(Debug, Clone, Default)]
pub struct Scrubber {
    matcher: Option<AhoCorasick>,
    needles: usize,
    longest: usize,
    forms: Vec<String>,
}

/// The fragments of `base64(prefix ++ secret ++ suffix)` that depend only on the secret, for a
/// secret starting at each byte offset modulo 3.
fn base64_forms(secret: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    for offset in 0..3usize {
        let mut data = vec![0u8; offset];
        data.extend_from_slice(secret);
        for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
            let encoded = engine.encode(&data);
            // Character i covers bits 6i..6i+6; it depends only on the secret when those bits
            // lie inside it.
            let start = (offset * 8).div_ceil(6);
            let end = (data.len() * 8) / 6;
            if end > start && end - start >= MIN_SECRET_LEN {
                out.push(encoded[start..end].to_owned());
            }
        }
    }
    out
}

fn percent_forms(secret: &str) -> Vec<String> {
    let mut upper = String::new();
    let mut lower = String::new();
    for b in secret.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            upper.push(b as char);
            lower.push(b as char);
        } else {
            upper.push_str(&format!("%{b:02X}"));
            lower.push_str(&format!("%{b:02x}"));
        }
    }
    // Form encoding (`application/x-www-form-urlencoded`) writes a space as `+`.
    let form_upper = upper.replace("%20", "+");
    let form_lower = lower.replace("%20", "+");
    vec![upper, lower, form_upper, form_lower]
}

fn json_forms(secret: &str) -> Vec<String> {
    let quoted = serde_json::to_string(secret).unwrap_or_default();
    let inner = quoted[1..quoted.len() - 1].to_owned();
    let slashed = inner.replace('/', "\\/");
    vec![inner, slashed]
}

impl Scrubber {
    /// A scrubber for these secret values.
    pub fn new<I, S>(secrets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut needles: Vec<String> = Vec::new();
        for secret in secrets {
            let secret = secret.as_ref();
            if secret.len() < MIN_SECRET_LEN {
                continue;
            }
            needles.push(secret.to_owned());
            needles.extend(base64_forms(secret.as_bytes()));
            needles.extend(json_forms(secret));
            needles.extend(percent_forms(secret));
        }
        needles.sort();
        needles.dedup();
        needles.retain(|n| !n.is_empty());
        let count = needles.len();
        let longest = needles.iter().map(String::len).max().unwrap_or(0);
        let matcher = (!needles.is_empty())
            .then(|| AhoCorasick::builder().match_kind(MatchKind::LeftmostLongest).build(&needles).ok())
            .flatten();
        Self { matcher, needles: count, longest, forms: needles }
    }

    /// The length of the longest form of a secret it replaces (0 when there is none): output
    /// scrubbed piece by piece must hold back this many bytes minus one, so that no secret is
    /// split between two pieces.
    pub fn longest(&self) -> usize {
        self.longest
    }

    /// The length of the longest end of `bytes` that is the beginning of a secret form: output
    /// scrubbed piece by piece must keep that much back until the bytes after it arrive (0 when
    /// the end cannot begin a secret).
    pub fn partial_at_end(&self, bytes: &[u8]) -> usize {
        let max = self.longest.saturating_sub(1).min(bytes.len());
        (1..=max)
            .rev()
            .find(|&k| {
                let tail = &bytes[bytes.len() - k..];
                self.forms.iter().any(|f| f.len() > k && f.as_bytes().starts_with(tail))
            })
            .unwrap_or(0)
    }

    /// Whether there is nothing to scrub.
    pub fn is_empty(&self) -> bool {
        self.matcher.is_none()
    }

    /// How many byte patterns are searched for (all forms of all secrets).
    pub fn pattern_count(&self) -> usize {
        self.needles
    }

    /// Scrub bytes.
    pub fn scrub_bytes<'a>(&self, bytes: &'a [u8]) -> Cow<'a, [u8]> {
        match &self.matcher {
            Some(m) if m.is_match(bytes) => {
                let replacements = vec![REDACTED.as_bytes(); m.patterns_len()];
                Cow::Owned(m.replace_all_bytes(bytes, &replacements))
            }
            _ => Cow::Borrowed(bytes),
        }
    }

    /// Scrub text.
    pub fn scrub_str<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match &self.matcher {
            Some(m) if m.is_match(text) => {
                let replacements = vec![REDACTED; m.patterns_len()];
                Cow::Owned(m.replace_all(text, &replacements))
            }
            _ => Cow::Borrowed(text),
        }
    }
}

/// Text shown piece by piece as it arrives (a model's streamed reply): each piece is scrubbed,
/// and an end that may be the beginning of a secret is held back until the next piece shows it
/// is not — so no secret is ever shown split over two pieces.
#[derive(Debug, Default)]
pub struct StreamScrubber {
    held: String,
}

impl StreamScrubber {
    /// The part of `piece` (with what was held) that can be shown now, scrubbed by `scrubber`.
    pub fn piece(&mut self, scrubber: &Scrubber, piece: &str) -> String {
        self.held.push_str(piece);
        let scrubbed = scrubber.scrub_str(&self.held).into_owned();
        let mut cut = scrubbed.len() - scrubber.partial_at_end(scrubbed.as_bytes());
        while !scrubbed.is_char_boundary(cut) {
            cut -= 1;
        }
        self.held = scrubbed[cut..].to_owned();
        scrubbed[..cut].to_owned()
    }

    /// The end of the stream: what was held back.
    pub fn finish(&mut self) -> String {
        std::mem::take(&mut self.held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::STANDARD;

    const SECRET: &str = "s3cr3t-t0ken/with space";

    #[test]
    fn the_start_of_a_secret_at_the_end_is_found() {
        let s = Scrubber::new(["hunter2-secret"]);
        assert_eq!(s.partial_at_end(b"output: hunt"), 4);
        assert_eq!(s.partial_at_end(b"output: hunter2-secre"), 13);
        assert_eq!(s.partial_at_end(b"output done\n"), 0);
        assert_eq!(s.partial_at_end(b"a whole hunter2-secret"), 0, "a whole secret is scrubbed, not kept back");
        assert_eq!(Scrubber::default().partial_at_end(b"anything"), 0);
    }

    #[test]
    fn raw_json_and_url_forms() {
        let s = Scrubber::new([SECRET]);
        assert_eq!(s.scrub_str(&format!("token={SECRET};")), "token=[REDACTED];");
        let json = serde_json::to_string(&format!("a\"{SECRET}")).unwrap();
        assert!(!s.scrub_str(&json).contains("t0ken"), "{}", s.scrub_str(&json));
        let url = "s3cr3t-t0ken%2Fwith%20space";
        assert_eq!(s.scrub_str(&format!("?q={url}")), "?q=[REDACTED]");
        assert_eq!(s.scrub_str("?q=s3cr3t-t0ken%2fwith+space"), "?q=[REDACTED]");
        assert_eq!(s.scrub_str("nothing here"), "nothing here");
    }

    #[test]
    fn base64_at_every_alignment() {
        let s = Scrubber::new([SECRET]);
        for prefix in ["", "a", "ab", "abc", "abcd"] {
            for suffix in ["", "x", "xy"] {
                let encoded = STANDARD.encode(format!("{prefix}{SECRET}{suffix}"));
                let scrubbed = s.scrub_str(&encoded);
                assert!(scrubbed.contains(REDACTED), "{prefix:?}/{suffix:?}: {encoded}");
                // No 8-character window of the secret's encoding survives.
                let plain = STANDARD.encode(SECRET);
                assert!(!scrubbed.contains(&plain[4..12]), "{prefix:?}: {scrubbed}");
            }
        }
    }

    #[test]
    fn short_and_empty_secrets_are_ignored() {
        let s = Scrubber::new(["", "ab"]);
        assert!(s.is_empty());
        assert_eq!(s.scrub_bytes(b"ab ab").as_ref(), b"ab ab");
    }

    #[test]
    fn a_secret_split_over_two_pieces_is_never_shown() {
        let scrubber = Scrubber::new(["sk-live-0123456789abcdef"]);
        let mut stream = StreamScrubber::default();
        let mut shown = stream.piece(&scrubber, "key: sk-live-0123");
        assert!(!shown.contains("sk-live"), "{shown}");
        shown.push_str(&stream.piece(&scrubber, "456789abcdef done, sk-"));
        shown.push_str(&stream.finish());
        assert_eq!(shown, "key: [REDACTED] done, sk-");
    }
}
