//! The guard and the limits against a real listener (RELIABILITY §2.5 AP-01…05, AP-10,
//! AP-11, AP-17): Host and Origin tables, the key, the body cap, slow and idle clients,
//! the address rule and a taken port.

use crate::common;

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use k3_server::{Server, ServerConfig, ServerError};
use k3_tests::http::{get, post_json, request, send};

/// `GET /v1/models` with exactly these header lines (no Host added).
fn raw_get(addr: SocketAddr, target: &str, lines: &[String]) -> u16 {
    let mut req = format!("GET {target} HTTP/1.1\r\nConnection: close\r\n");
    for l in lines {
        req.push_str(l);
        req.push_str("\r\n");
    }
    req.push_str("\r\n");
    send(addr, req.as_bytes()).status
}

#[test]
fn host_and_origin_table() {
    let (_rt, server) = common::start(common::config());
    let addr = server.local_addr();
    let p = addr.port();
    let host = |h: &str| vec![format!("Host: {h}")];
    let ok_host = format!("Host: 127.0.0.1:{p}");
    let with_origin = |o: &str| vec![ok_host.clone(), format!("Origin: {o}")];
    let cases: Vec<(&str, Vec<String>, u16)> = vec![
        ("127.0.0.1:PORT", host(&format!("127.0.0.1:{p}")), 200),
        ("localhost:PORT", host(&format!("localhost:{p}")), 200),
        ("[::1]:PORT", host(&format!("[::1]:{p}")), 200),
        ("LOCALHOST upper case", host(&format!("LOCALHOST:{p}")), 200),
        ("LocalHost mixed case", host(&format!("LocalHost:{p}")), 200),
        ("no Host", vec![], 403),
        ("empty Host", host(""), 403),
        ("two Hosts", vec![ok_host.clone(), format!("Host: localhost:{p}")], 403),
        ("127.0.0.1 no port", host("127.0.0.1"), 403),
        ("localhost no port", host("localhost"), 403),
        ("[::1] no port", host("[::1]"), 403),
        ("wrong port", host(&format!("127.0.0.1:{}", p.wrapping_add(1))), 403),
        ("port 80", host("localhost:80"), 403),
        ("leading zero port", host(&format!("127.0.0.1:0{p}")), 403),
        ("plus sign port", host(&format!("localhost:+{p}")), 403),
        ("empty port", host("localhost:"), 403),
        ("port twice", host(&format!("localhost:{p}:{p}")), 403),
        ("trailing dot localhost", host(&format!("localhost.:{p}")), 403),
        ("trailing dot ip", host(&format!("127.0.0.1.:{p}")), 403),
        ("rebinding nip.io", host(&format!("127.0.0.1.nip.io:{p}")), 403),
        ("localhost.evil.com", host(&format!("localhost.evil.com:{p}")), 403),
        ("evil.example", host("evil.example"), 403),
        ("evil.example:PORT", host(&format!("evil.example:{p}")), 403),
        ("sub.localhost", host(&format!("app.localhost:{p}")), 403),
        ("userinfo", host(&format!("user@localhost:{p}")), 403),
        ("IPv6 long form", host(&format!("[0:0:0:0:0:0:0:1]:{p}")), 403),
        ("IPv6 unbracketed", host(&format!("::1:{p}")), 403),
        ("IPv4-mapped IPv6", host(&format!("[::ffff:127.0.0.1]:{p}")), 403),
        ("IPv6 wrong port", host(&format!("[::1]:{}", p.wrapping_add(1))), 403),
        ("IPv6 zone id", host(&format!("[::1%25lo]:{p}")), 403),
        ("short IPv4 127.1", host(&format!("127.1:{p}")), 403),
        ("decimal IPv4", host(&format!("2130706433:{p}")), 403),
        ("hex IPv4", host(&format!("0x7f000001:{p}")), 403),
        ("other loopback 127.0.0.2", host(&format!("127.0.0.2:{p}")), 403),
        ("0.0.0.0", host(&format!("0.0.0.0:{p}")), 403),
        ("punycode", host(&format!("xn--localhost-:{p}")), 403),
        ("no Origin", vec![ok_host.clone()], 200),
        ("Origin null", with_origin("null"), 403),
        ("Origin foreign", with_origin("http://evil.example"), 403),
        ("Origin same host (UI uses IPC)", with_origin(&format!("http://127.0.0.1:{p}")), 403),
        ("Origin localhost", with_origin(&format!("http://localhost:{p}")), 403),
        ("Origin empty", with_origin(""), 403),
        ("Origin file", with_origin("file://"), 403),
        ("two Origins", vec![ok_host.clone(), "Origin: null".into(), "Origin: http://a".into()], 403),
        ("Sec-Fetch-Site cross-site", vec![ok_host.clone(), "Sec-Fetch-Site: cross-site".into()], 403),
        ("Sec-Fetch-Site same-site", vec![ok_host.clone(), "Sec-Fetch-Site: same-site".into()], 403),
        ("Sec-Fetch-Site none", vec![ok_host.clone(), "Sec-Fetch-Site: none".into()], 200),
    ];
    let mut failures = Vec::new();
    for (name, lines, want) in &cases {
        let got = raw_get(addr, "/v1/models", lines);
        if got != *want {
            failures.push(format!("{name}: got {got}, want {want}"));
        }
    }
    // A request in absolute form carries a second authority: it must pass too.
    let absolute = raw_get(addr, "http://evil.example/v1/models", std::slice::from_ref(&ok_host));
    if absolute != 403 {
        failures.push(format!("absolute-form target: got {absolute}, want 403"));
    }
    assert!(failures.is_empty(), "{} of {} cases failed:\n{}", failures.len(), cases.len() + 1, failures.join("\n"));
    assert!(cases.len() + 1 >= 30);
}

#[test]
fn a_refusal_carries_no_cors_headers_preflight_included() {
    let (_rt, server) = common::start(common::config());
    let addr = server.local_addr();
    let preflight = request(
        addr,
        "OPTIONS",
        "/v1/chat/completions",
        &["Origin: http://evil.example", "Access-Control-Request-Method: POST"],
        "",
    );
    let answer = send(addr, &preflight);
    assert_eq!(answer.status, 403);
    assert_eq!(answer.error_code(), "forbidden_origin");
    assert!(answer.headers.iter().all(|(n, _)| !n.starts_with("access-control-")), "{:?}", answer.headers);
    let post = request(addr, "POST", "/v1/chat/completions", &["Origin: null", "Content-Type: application/json"], "{}");
    assert_eq!(send(addr, &post).status, 403);
}

#[test]
fn an_allowlisted_origin_passes_exactly() {
    let config = ServerConfig { allowed_origins: vec!["http://app.local:5173".into()], ..common::config() };
    let (_rt, server) = common::start(config);
    let addr = server.local_addr();
    let ok = format!("Host: 127.0.0.1:{}", addr.port());
    let origin = |o: &str| vec![ok.clone(), format!("Origin: {o}")];
    assert_eq!(raw_get(addr, "/v1/models", &origin("http://app.local:5173")), 200);
    assert_eq!(raw_get(addr, "/v1/models", &origin("http://APP.local:5173")), 403);
    assert_eq!(raw_get(addr, "/v1/models", &origin("http://app.local:5173/")), 403);
    assert_eq!(raw_get(addr, "/v1/models", &origin("null")), 403);
    let runtime = common::runtime();
    let null = ServerConfig { allowed_origins: vec!["null".into()], ..common::config() };
    assert!(matches!(Server::start(runtime, null), Err(ServerError::BadOrigin { .. })));
}

#[test]
fn the_key_is_required_on_v1_when_set() {
    let config = ServerConfig { api_key: Some("k3-test-key".into()), ..common::config() };
    let (_rt, server) = common::start(config);
    let addr = server.local_addr();
    let with = |auth: &[&str]| send(addr, &request(addr, "GET", "/v1/models", auth, ""));
    let missing = with(&[]);
    assert_eq!(missing.status, 401);
    assert_eq!(missing.error_code(), "invalid_api_key");
    assert_eq!(missing.header("www-authenticate"), Some("Bearer"));
    assert_eq!(with(&["Authorization: Bearer wrong-key-xx"]).status, 401);
    assert_eq!(with(&["Authorization: Bearer k3-test-ke"]).status, 401);
    assert_eq!(with(&["Authorization: Basic k3-test-key"]).status, 401);
    assert_eq!(with(&["Authorization: Bearer k3-test-key"]).status, 200);
    // Health stays open (it names no model path and runs nothing).
    assert_eq!(get(addr, "/health").status, 200);
}

#[test]
fn a_body_over_the_cap_is_refused_before_it_is_read() {
    let config = ServerConfig { max_body_bytes: 64 << 10, ..common::config() };
    let (_rt, server) = common::start(config);
    let addr = server.local_addr();
    // Declared too large: the answer comes without a byte of body sent.
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\nContent-Length: 9223372036854775807\r\n\r\n",
        addr.port()
    );
    let start = Instant::now();
    stream.write_all(head.as_bytes()).expect("write");
    let mut buf = [0u8; 4096];
    let n = stream.read(&mut buf).expect("read");
    let answer = k3_tests::http::parse(&buf[..n]);
    assert_eq!(answer.status, 413);
    assert!(start.elapsed() < Duration::from_secs(2));
    // Chunked, no length: refused once past the cap.
    let mut chunked = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        addr.port()
    )
    .into_bytes();
    let chunk = vec![b' '; 16 << 10];
    for _ in 0..8 {
        chunked.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        chunked.extend_from_slice(&chunk);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let answer = send(addr, &chunked);
    assert_eq!(answer.status, 413);
    assert_eq!(answer.error_code(), "request_too_large");
}

#[test]
fn non_json_and_compressed_bodies_are_415() {
    let (_rt, server) = common::start(common::config());
    let addr = server.local_addr();
    let body = r#"{"model":"tiny-mxfp4","messages":[{"role":"user","content":"hi"}]}"#;
    for headers in [
        vec!["Content-Type: text/plain"],
        vec![],
        vec!["Content-Type: application/x-www-form-urlencoded"],
        vec!["Content-Type: application/json", "Content-Encoding: gzip"],
    ] {
        let answer = send(addr, &request(addr, "POST", "/v1/chat/completions", &headers, body));
        assert_eq!(answer.status, 415, "{headers:?}");
        assert_eq!(answer.error_code(), "unsupported_media_type");
    }
    assert_eq!(post_json(addr, "/v1/chat/completions", body).status, 200);
}

/// Seconds until the server closes a connection that sends `drip` one byte a second.
fn seconds_until_closed(addr: SocketAddr, drip: &[u8]) -> f64 {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(Duration::from_millis(200))).expect("timeout");
    let start = Instant::now();
    let mut sent = 0;
    let mut buf = [0u8; 1024];
    while start.elapsed() < Duration::from_secs(20) {
        if sent < drip.len() && start.elapsed() >= Duration::from_secs(sent as u64) {
            if stream.write_all(&drip[sent..=sent]).is_err() {
                break;
            }
            sent += 1;
        }
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => break,
        }
    }
    start.elapsed().as_secs_f64()
}

#[test]
fn slow_and_idle_clients_are_closed_by_the_header_timeout() {
    let config = ServerConfig { header_read_timeout: Duration::from_secs(2), ..common::config() };
    let (_rt, server) = common::start(config);
    let addr = server.local_addr();
    let slowloris = format!("GET /health HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nX-Padding: aaaaaaaaaaaaaaaa", addr.port());
    let slow = seconds_until_closed(addr, slowloris.as_bytes());
    assert!((1.5..5.0).contains(&slow), "a client dripping its head was closed after {slow:.1} s");
    let idle = seconds_until_closed(addr, b"");
    assert!(idle < 5.0, "an idle connection was closed after {idle:.1} s");
    // The server still answers.
    assert_eq!(get(addr, "/health").status, 200);
}

/// Probe finding: a client that sent a request head and part of its body was never timed
/// out, and 64 of them filled the accept loop's cap. A body not whole within the body
/// timeout gets 408, and the connections are freed: with the cap at 4, four stalled
/// bodies then a fifth client, which is answered once they are refused.
#[test]
fn a_body_that_stalls_gets_408_and_frees_its_connection() {
    let config = ServerConfig { body_read_timeout: Duration::from_secs(1), max_connections: 4, ..common::config() };
    let (_rt, server) = common::start(config);
    let addr = server.local_addr();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"model\":",
        addr.port()
    );
    let stalled: Vec<TcpStream> = (0..4)
        .map(|_| {
            let mut s = TcpStream::connect(addr).expect("connect");
            s.write_all(head.as_bytes()).expect("write");
            s
        })
        .collect();
    for mut s in stalled {
        s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        let mut answer = Vec::new();
        let _ = s.read_to_end(&mut answer);
        let text = String::from_utf8_lossy(&answer);
        assert!(text.starts_with("HTTP/1.1 408"), "a stalled body: {text}");
        assert!(text.contains("request_timeout") && text.contains("did not arrive within 1 s"), "{text}");
    }
    assert_eq!(get(addr, "/health").status, 200, "the connections were freed");
}

#[test]
fn only_loopback_without_a_key_and_never_every_interface() {
    let runtime = common::runtime();
    let lan = ServerConfig { host: IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)), ..common::config() };
    assert!(matches!(Server::start(runtime.clone(), lan), Err(ServerError::LanNeedsKey { .. })));
    let any = ServerConfig { host: IpAddr::V4(Ipv4Addr::UNSPECIFIED), api_key: Some("k".into()), ..common::config() };
    assert!(matches!(Server::start(runtime.clone(), any), Err(ServerError::Unspecified { .. })));
    let server = Server::start(runtime, common::config()).expect("loopback starts");
    assert!(server.local_addr().ip().is_loopback());
}

#[test]
fn a_taken_port_is_an_error_offering_the_next_free_one() {
    let taken = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("addr").port();
    let runtime = common::runtime();
    match Server::start(runtime, ServerConfig { port, ..common::config() }) {
        Err(e @ ServerError::PortTaken { next_free: Some(free), .. }) => {
            assert_ne!(free, port);
            assert!(e.to_string().contains(&format!("--port {free}")), "{e}");
        }
        Err(e) => panic!("expected PortTaken, got {e}"),
        Ok(_) => panic!("the server started on a taken port"),
    }
}
