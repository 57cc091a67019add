//! The JSON shapes of the typed values that carry bytes. In memory content is `Vec<u8>`; on the
//! wire it is UTF-8 text as-is, or base64 with a sibling `"encoding":"base64"` (D11), and
//! `process.run` output is text (lossily converted). Nothing else converts between the two.
//! Also the JSON of a whole [`HostResponse`] (the wire `result`).

use serde::de::Error as _;
use serde::ser::SerializeStruct;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::content::{Encoding, decode_content};
use super::methods::{
    EmptyResult, FsReadResult, FsWriteParams, Header, HostResponse, HttpPostParams, HttpResult, ProcessRunResult,
};

/// Base64 written straight into the serializer's output (`collect_str` streams a `Display`), so
/// binary content is never held twice in memory as bytes and as a base64 string.
struct Base64<'a>(&'a [u8]);

impl Serialize for Base64<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&base64::display::Base64Display::new(self.0, &base64::engine::general_purpose::STANDARD))
    }
}

/// Write `key` (text or base64) and, for base64, `encoding`.
fn content_field<S: SerializeStruct>(st: &mut S, key: &'static str, bytes: &[u8]) -> Result<(), S::Error> {
    match std::str::from_utf8(bytes) {
        Ok(text) => {
            st.serialize_field(key, text)?;
            st.skip_field("encoding")
        }
        Err(_) => {
            st.serialize_field(key, &Base64(bytes))?;
            st.serialize_field("encoding", &Encoding::Base64)
        }
    }
}

/// How many bytes the JSON of `bytes` as content takes at least (for sizing a buffer once).
pub(crate) fn content_len(bytes: &[u8]) -> usize {
    match std::str::from_utf8(bytes) {
        Ok(_) => bytes.len(),
        Err(_) => bytes.len().div_ceil(3) * 4,
    }
}

fn decoded<E: serde::de::Error>(text: &str, encoding: Option<Encoding>) -> Result<Vec<u8>, E> {
    decode_content(text, encoding).map_err(E::custom)
}

impl Serialize for FsReadResult {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("FsReadResult", 3)?;
        content_field(&mut st, "content", &self.content)?;
        st.serialize_field("size", &self.size)?;
        st.end()
    }
}

impl<'de> Deserialize<'de> for FsReadResult {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Wire {
            content: String,
            #[serde(default)]
            encoding: Option<Encoding>,
            size: u64,
        }
        let w = Wire::deserialize(d)?;
        Ok(Self { content: decoded(&w.content, w.encoding)?, size: w.size })
    }
}

impl Serialize for FsWriteParams {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("FsWriteParams", 3)?;
        st.serialize_field("path", &self.path)?;
        content_field(&mut st, "content", &self.content)?;
        st.end()
    }
}

impl<'de> Deserialize<'de> for FsWriteParams {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Wire {
            path: String,
            content: String,
            #[serde(default)]
            encoding: Option<Encoding>,
        }
        let w = Wire::deserialize(d)?;
        Ok(Self { path: w.path, content: decoded(&w.content, w.encoding)? })
    }
}

impl Serialize for HttpPostParams {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("HttpPostParams", 4)?;
        st.serialize_field("url", &self.url)?;
        st.serialize_field("headers", &self.headers)?;
        content_field(&mut st, "body", &self.body)?;
        st.end()
    }
}

impl<'de> Deserialize<'de> for HttpPostParams {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Wire {
            url: String,
            #[serde(default)]
            headers: Vec<Header>,
            #[serde(default)]
            body: String,
            #[serde(default)]
            encoding: Option<Encoding>,
        }
        let w = Wire::deserialize(d)?;
        Ok(Self { url: w.url, headers: w.headers, body: decoded(&w.body, w.encoding)? })
    }
}

impl Serialize for HttpResult {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("HttpResult", 4)?;
        st.serialize_field("status", &self.status)?;
        content_field(&mut st, "body", &self.body)?;
        if self.headers.is_empty() {
            st.skip_field("headers")?;
        } else {
            st.serialize_field("headers", &self.headers)?;
        }
        st.end()
    }
}

impl<'de> Deserialize<'de> for HttpResult {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Wire {
            status: u16,
            body: String,
            #[serde(default)]
            encoding: Option<Encoding>,
            #[serde(default)]
            headers: Vec<Header>,
        }
        let w = Wire::deserialize(d)?;
        Ok(Self { status: w.status, body: decoded(&w.body, w.encoding)?, headers: w.headers })
    }
}

impl Serialize for ProcessRunResult {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("ProcessRunResult", 3)?;
        st.serialize_field("stdout", &String::from_utf8_lossy(&self.stdout))?;
        st.serialize_field("stderr", &String::from_utf8_lossy(&self.stderr))?;
        st.serialize_field("exit_code", &self.exit_code)?;
        st.end()
    }
}

impl<'de> Deserialize<'de> for ProcessRunResult {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Wire {
            stdout: String,
            stderr: String,
            exit_code: Option<i32>,
        }
        let w = Wire::deserialize(d).map_err(D::Error::custom)?;
        Ok(Self { stdout: w.stdout.into_bytes(), stderr: w.stderr.into_bytes(), exit_code: w.exit_code })
    }
}

impl HostResponse {
    /// About how many bytes its JSON takes: enough to size the response line once for the
    /// answers that carry content (no doubling and copying of a 10 MiB line).
    pub fn json_len_hint(&self) -> usize {
        256 + match self {
            Self::FsRead(r) => content_len(&r.content),
            Self::Http(r) => {
                content_len(&r.body) + r.headers.iter().map(|h| h.name.len() + h.value.len() + 32).sum::<usize>()
            }
            Self::ProcessRun(r) => r.stdout.len() + r.stderr.len(),
            _ => 0,
        }
    }
}

impl Serialize for HostResponse {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::FsRead(r) => r.serialize(s),
            Self::FsExists(r) => r.serialize(s),
            Self::FsListDir(r) => r.serialize(s),
            Self::FsMetadata(r) => r.serialize(s),
            Self::FsGrep(r) => r.serialize(s),
            Self::Http(r) => r.serialize(s),
            Self::ProcessRun(r) => r.serialize(s),
            Self::Done => EmptyResult {}.serialize(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn content_is_text_or_base64_on_the_wire_and_bytes_in_memory() {
        let text = FsReadResult { content: b"fn main() {}".to_vec(), size: 12 };
        let v = serde_json::to_value(&text).unwrap();
        assert_eq!(v, json!({"content": "fn main() {}", "size": 12}));
        assert_eq!(serde_json::from_value::<FsReadResult>(v).unwrap(), text);
        let png = FsReadResult { content: vec![0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a], size: 8 };
        let v = serde_json::to_value(&png).unwrap();
        assert_eq!(v, json!({"content": "iVBORw0KGgo=", "encoding": "base64", "size": 8}));
        assert_eq!(serde_json::from_value::<FsReadResult>(v).unwrap(), png);
        let post: HttpPostParams =
            serde_json::from_value(json!({"url": "https://x", "body": "AAE=", "encoding": "base64"})).unwrap();
        assert_eq!(post.body, vec![0, 1]);
        let e = serde_json::from_value::<FsWriteParams>(json!({"path": "a", "content": "%", "encoding": "base64"}))
            .unwrap_err();
        assert!(e.to_string().contains("not valid base64"), "{e}");
        let out = ProcessRunResult { stdout: vec![b'a', 0xff], stderr: vec![], exit_code: None };
        assert_eq!(
            serde_json::to_value(&out).unwrap(),
            json!({"stdout": "a\u{fffd}", "stderr": "", "exit_code": null})
        );
    }
}
