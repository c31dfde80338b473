//! A raw HTTP/1.1 client over `std::net::TcpStream` for the API server's tests: exact
//! bytes out (any `Host`, `Origin`, broken JSON, a slow client), the answer parsed back
//! (status, headers, body de-chunked, SSE `data:` lines).
//!
//! Must not: add or fix anything the test did not write: the request goes as given.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use serde_json::Value;

/// An answer.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!("answer {} is not JSON ({e}): {}", self.status, String::from_utf8_lossy(&self.body))
        })
    }

    /// The `data:` payloads of an SSE body, in order.
    pub fn sse_data(&self) -> Vec<String> {
        String::from_utf8_lossy(&self.body)
            .split("\n\n")
            .filter_map(|event| event.lines().find_map(|l| l.strip_prefix("data: ")).map(str::to_string))
            .collect()
    }

    /// Asserts OpenAI's error shape and returns the error's `code`.
    pub fn error_code(&self) -> String {
        let body = self.json();
        let e = &body["error"];
        assert!(e["message"].is_string() && e["type"].is_string(), "not an OpenAI error: {body}");
        assert!(e.get("param").is_some() && e.get("code").is_some(), "not an OpenAI error: {body}");
        e["code"].as_str().unwrap_or_default().to_string()
    }
}

/// Sends `request` as is and reads the answer to the end of the connection.
pub fn send(addr: SocketAddr, request: &[u8]) -> Answer {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    stream.write_all(request).expect("write request");
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    parse(&raw)
}

/// A request with `Host: 127.0.0.1:PORT`, `Connection: close` and `extra` header lines.
pub fn request(addr: SocketAddr, method: &str, path: &str, extra: &[&str], body: &str) -> Vec<u8> {
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n", addr.port());
    for line in extra {
        head.push_str(line);
        head.push_str("\r\n");
    }
    if !body.is_empty() || method == "POST" {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body.as_bytes());
    bytes
}

/// POSTs JSON `body` to `path`.
pub fn post_json(addr: SocketAddr, path: &str, body: &str) -> Answer {
    send(addr, &request(addr, "POST", path, &["Content-Type: application/json"], body))
}

/// GETs `path`.
pub fn get(addr: SocketAddr, path: &str) -> Answer {
    send(addr, &request(addr, "GET", path, &[], ""))
}

/// Parses raw answer bytes (a chunked body is de-chunked).
pub fn parse(raw: &[u8]) -> Answer {
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or(raw.len());
    let head = String::from_utf8_lossy(&raw[..split]);
    let mut lines = head.lines();
    let status = lines.next().and_then(|l| l.split(' ').nth(1)).and_then(|s| s.parse().ok()).unwrap_or(0);
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let body = raw.get(split + 4..).unwrap_or_default();
    let chunked = headers.iter().any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked { dechunk(body) } else { body.to_vec() };
    Answer { status, headers, body }
}

fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = body.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&body[..eol]).ok().and_then(|s| usize::from_str_radix(s.trim(), 16).ok());
        let Some(size) = size.filter(|&n| n > 0) else { break };
        let start = eol + 2;
        let end = (start + size).min(body.len());
        out.extend_from_slice(&body[start..end]);
        body = body.get(end + 2..).unwrap_or_default();
    }
    out
}
