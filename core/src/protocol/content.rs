//! File, body and output content on the wire: UTF-8 text as-is, anything else base64 with
//! `"encoding":"base64"` (D11 `fs.read`).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

/// How a content string is encoded. Absent means UTF-8 text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Encoding {
    /// Standard base64 with padding.
    Base64,
}

/// Encode bytes for the wire: text when they are valid UTF-8, base64 otherwise.
pub fn encode_content(bytes: Vec<u8>) -> (String, Option<Encoding>) {
    match String::from_utf8(bytes) {
        Ok(text) => (text, None),
        Err(err) => (STANDARD.encode(err.as_bytes()), Some(Encoding::Base64)),
    }
}

/// Decode wire content back to bytes; the error says what was wrong with the base64.
pub fn decode_content(content: &str, encoding: Option<Encoding>) -> Result<Vec<u8>, String> {
    match encoding {
        None => Ok(content.as_bytes().to_vec()),
        Some(Encoding::Base64) => STANDARD.decode(content).map_err(|e| {
            format!("content is not valid base64 ({e}); send text without \"encoding\" or standard padded base64")
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_stays_text_and_binary_is_base64() {
        assert_eq!(encode_content(b"fn main() {}".to_vec()), ("fn main() {}".into(), None));
        let png = vec![0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];
        let (s, enc) = encode_content(png.clone());
        assert_eq!((s.as_str(), enc), ("iVBORw0KGgo=", Some(Encoding::Base64)));
        assert_eq!(decode_content(&s, enc).unwrap(), png);
        assert!(decode_content("not base64!", Some(Encoding::Base64)).unwrap_err().contains("base64"));
    }
}
