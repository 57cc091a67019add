//! HTTP through the dispatcher with the real client against real servers on 127.0.0.1: secrets
//! and credentials never follow a redirect to another origin (issue 10, item 4).

use std::collections::BTreeMap;
use std::sync::Arc;

use jp_core::files::InMemoryProjectFiles;
use jp_core::host::{Dispatcher, NoEvents};
use jp_core::policy::{AccessConfig, AccessPolicy};
use jp_core::protocol::{HostRequest, HostResponse, Id};
use jp_native::http::ReqwestHttpClient;
use serde_json::json;

/// A server that answers `/echo` with the request head it received and `/go?to=URL` with a
/// 302 to `URL`.
async fn server() -> (String, tokio::task::JoinHandle<()>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else { return };
            tokio::spawn(async move {
                let mut buf = vec![0u8; 65536];
                let mut got = 0;
                while !buf[..got].windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut buf[got..]).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got += n,
                    }
                }
                let head = String::from_utf8_lossy(&buf[..got]).into_owned();
                let target = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let (status, extra, body) = match target.split_once("?to=") {
                    Some(("/go", to)) => ("302 Found", format!("Location: {to}\r\n"), String::new()),
                    _ => ("200 OK", String::new(), head.to_ascii_lowercase()),
                };
                let resp = format!(
                    "HTTP/1.1 {status}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(resp.as_bytes()).await;
            });
        }
    });
    (base, task)
}

async fn get_through_redirect(start: &str, allowed: &[&str]) -> String {
    let access: AccessConfig =
        toml::from_str(&format!("network = {{ allow = {allowed:?}, envs = [\"API_TOKEN\"] }}\nfilesystem = []"))
            .unwrap();
    let policy = AccessPolicy::from_config(None, Some(&access)).unwrap();
    let d = Dispatcher::builder("t", Arc::new(policy), Arc::new(InMemoryProjectFiles::new()))
        .http(Arc::new(ReqwestHttpClient::new(std::time::Duration::from_secs(10)).unwrap()))
        .env(BTreeMap::from([("API_TOKEN".to_owned(), "s3cr3t-token-value".to_owned())]))
        .build();
    let req = HostRequest::parse(
        "http.get",
        json!({ "url": start, "headers": [
            { "name": "Authorization", "value": "Bearer ${API_TOKEN}" },
            { "name": "X-Api-Key", "value": "${API_TOKEN}" },
            { "name": "Cookie", "value": "session=abc" },
            { "name": "Proxy-Authorization", "value": "Basic eDp5" },
            { "name": "X-Plain", "value": "kept" },
        ]}),
    )
    .unwrap();
    let HostResponse::Http(r) = d.handle(&req, &Id::Number(1), &NoEvents).await.unwrap() else { panic!("not HTTP") };
    assert_eq!(r.status, 200);
    String::from_utf8(r.body).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn secrets_and_credentials_do_not_follow_a_redirect_to_another_origin() {
    let (a, ta) = server().await;
    let (b, tb) = server().await;
    assert_ne!(a, b, "two servers on different ports");

    // Same origin: everything the tool asked for arrives.
    let same = get_through_redirect(&format!("{a}/go?to={a}/echo"), &[&a, &b]).await;
    for header in
        ["authorization: bearer", "x-api-key:", "cookie: session=abc", "proxy-authorization:", "x-plain: kept"]
    {
        assert!(same.contains(header), "same-origin hop lost {header:?}: {same}");
    }
    assert!(!same.contains("s3cr3t"), "the secret is scrubbed from what the tool sees");

    // Another origin (both allowed by the policy): credentials and substituted secrets stay behind.
    let cross = get_through_redirect(&format!("{a}/go?to={b}/echo"), &[&a, &b]).await;
    assert!(cross.contains("x-plain: kept"), "{cross}");
    for header in ["authorization", "x-api-key", "cookie", "s3cr3t", "[redacted]"] {
        assert!(!cross.contains(header), "cross-origin hop carried {header:?}: {cross}");
    }

    // Back to the first origin after leaving it: they stay dropped for the rest of the chain.
    let back = get_through_redirect(&format!("{a}/go?to={b}/go?to={a}/echo"), &[&a, &b]).await;
    assert!(!back.contains("authorization") && !back.contains("x-api-key"), "{back}");
    ta.abort();
    tb.abort();
}
