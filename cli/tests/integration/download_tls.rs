//! `k3 download` against a TLS server on 127.0.0.1 that shows a bad certificate (RELIABILITY
//! DL-16): one nobody vouches for, an expired one, and one for another host. Each must end
//! the download at once with a TLS error naming the endpoint, never a retry loop and never a
//! way around the check. The test CA is made trusted for the child process alone through
//! `SSL_CERT_FILE` (the platform verifier reads it on Linux), so the expired and wrong-host
//! cases fail for their own reason, not for an unknown issuer.

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};

/// A CA and one leaf it signed, as PEM and DER.
struct Certs {
    ca_pem: String,
    leaf_der: Vec<u8>,
    leaf_key_der: Vec<u8>,
}

fn certs(leaf_host: &str, expired: bool) -> Certs {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.distinguished_name.push(DnType::CommonName, "k3 test CA");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let leaf_key = KeyPair::generate().unwrap();
    let mut leaf = CertificateParams::new(vec![leaf_host.to_string()]).unwrap();
    if expired {
        leaf.not_before = rcgen::date_time_ymd(2020, 1, 1);
        leaf.not_after = rcgen::date_time_ymd(2021, 1, 1);
    }
    let leaf_cert = leaf.signed_by(&leaf_key, &issuer).unwrap();
    Certs { ca_pem: ca_cert.pem(), leaf_der: leaf_cert.der().to_vec(), leaf_key_der: leaf_key.serialize_der() }
}

/// Serves TLS with `certs`' leaf on 127.0.0.1 until the test process ends; each connection
/// gets a handshake and nothing else. Returns the port.
fn serve(certs: &Certs) -> u16 {
    let chain = vec![rustls::pki_types::CertificateDer::from(certs.leaf_der.clone())];
    let key = rustls::pki_types::PrivatePkcs8KeyDer::from(certs.leaf_key_der.clone()).into();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let config = config.clone();
            std::thread::spawn(move || {
                let Ok(conn) = rustls::ServerConnection::new(config) else { return };
                let mut tls = rustls::StreamOwned::new(conn, stream);
                let _ = tls.sock.set_read_timeout(Some(Duration::from_secs(5)));
                let mut buf = [0u8; 1024];
                let _ = tls.read(&mut buf);
            });
        }
    });
    port
}

/// Runs `k3 download` against `https://<host>:<port>` with `ca` trusted (when given); its
/// exit status, its output and how long it took.
fn download(host: &str, port: u16, ca: Option<&Path>) -> (Option<i32>, String, Duration) {
    let store = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_k3"));
    cmd.args(["download", "--repo", "moonshotai/Kimi-K3", "--json", "--no-pack", "--to"])
        .arg(store.path())
        .args(["--endpoint", &format!("https://{host}:{port}")])
        .env("HF_HUB_DOWNLOAD_TIMEOUT", "10")
        .env_remove("HF_TOKEN");
    match ca {
        Some(file) => cmd.env("SSL_CERT_FILE", file),
        None => cmd.env("SSL_CERT_FILE", "/nonexistent/k3-test-ca.pem"),
    };
    let start = Instant::now();
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    // A download that retries a refused certificate would run for ever: it is stopped at
    // 30 s and reported with what it printed.
    while child.try_wait().unwrap().is_none() && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let took = start.elapsed();
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code(), text, took)
}

fn ca_file(certs: &Certs) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ca.pem");
    std::fs::write(&path, &certs.ca_pem).unwrap();
    (dir, path)
}

/// Each bad certificate ends the download at once, with the endpoint and the reason named.
fn assert_refused(case: &str, (status, text, took): (Option<i32>, String, Duration), reason: &[&str]) {
    assert!(status.is_some_and(|s| s != 0), "{case}: the download did not fail ({status:?}): {text}");
    assert!(text.contains("TLS failed"), "{case}: not told it is TLS: {text}");
    assert!(text.contains("127.0.0.1") || text.contains("localhost"), "{case}: the endpoint is not named: {text}");
    let lower = text.to_lowercase();
    assert!(reason.iter().any(|r| lower.contains(r)), "{case}: the reason ({reason:?}) is not said: {text}");
    // The hub client's retries would take well over this (backoff from 1 s, 10 s timeouts).
    assert!(took < Duration::from_secs(8), "{case}: took {took:?}: retried instead of failing");
}

#[test]
fn a_certificate_nobody_vouches_for_ends_the_download_at_once() {
    let certs = certs("localhost", false);
    let port = serve(&certs);
    assert_refused("untrusted", download("localhost", port, None), &["unknownissuer", "unknown issuer"]);
}

#[test]
fn an_expired_certificate_ends_the_download_at_once() {
    let certs = certs("localhost", true);
    let (_dir, ca) = ca_file(&certs);
    let port = serve(&certs);
    assert_refused("expired", download("localhost", port, Some(&ca)), &["expired"]);
}

#[test]
fn a_certificate_for_another_host_ends_the_download_at_once() {
    let certs = certs("hub.example.invalid", false);
    let (_dir, ca) = ca_file(&certs);
    let port = serve(&certs);
    assert_refused("wrong host", download("localhost", port, Some(&ca)), &["notvalidforname", "not valid for"]);
}
