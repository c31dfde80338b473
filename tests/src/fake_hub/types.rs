//! What the fake hub serves and records: repositories and their files, the lies it tells,
//! the requests it saw, and the state its routes share. A leaf the server (`mod.rs`) and
//! its routes both use.
//!
//! Owns: [`HubFile`], [`HubRepo`], [`Lie`], [`RequestRecord`], and the routes' `State`.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use sha2::{Digest, Sha256};

/// One file of a repository.
#[derive(Clone)]
pub struct HubFile {
    pub path: String,
    pub bytes: Bytes,
    /// Stored in LFS (served through the CDN, hashed by SHA-256) or in git.
    pub lfs: bool,
}

impl HubFile {
    pub fn sha256(&self) -> String {
        memo(&self.bytes, "sha256", |b| hex(&Sha256::digest(b)))
    }

    pub fn git_oid(&self) -> String {
        memo(&self.bytes, "git", |b| {
            use sha1::Digest as _;
            let mut h = sha1::Sha1::new();
            h.update(format!("blob {}\0", b.len()).as_bytes());
            h.update(b);
            hex(&h.finalize())
        })
    }
}

/// A file's bytes (where, how long, and their CRC-32, so memory freed and reused for other
/// bytes of the same length is never taken for them) and which hash.
type MemoKey = (usize, usize, u32, &'static str);

/// Each file's hashes computed once: a listing names every file's, and recomputing them
/// for a 1 GiB file took the loopback measurement's hub a second per listing (counted
/// against `k3 download`).
fn memo(bytes: &Bytes, kind: &'static str, compute: impl FnOnce(&[u8]) -> String) -> String {
    static MEMO: std::sync::OnceLock<Mutex<HashMap<MemoKey, String>>> = std::sync::OnceLock::new();
    let key = (bytes.as_ptr() as usize, bytes.len(), crc32fast::hash(bytes), kind);
    let memo = MEMO.get_or_init(Default::default);
    if let Some(hit) = memo.lock().ok().and_then(|m| m.get(&key).cloned()) {
        return hit;
    }
    let value = compute(bytes);
    if let Ok(mut m) = memo.lock() {
        m.insert(key, value.clone());
    }
    value
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// One commit of one repository.
#[derive(Clone)]
pub struct HubRepo {
    pub id: String,
    pub commit: String,
    pub files: Vec<HubFile>,
}

/// A way to misbehave on one body request.
#[derive(Clone, Debug, PartialEq)]
pub enum Lie {
    /// DL-04: 200 with the whole file, Range ignored.
    IgnoreRange,
    /// DL-05: 206 whose Content-Range names another range.
    BadContentRange,
    /// DL-06: the right length, one byte wrong.
    WrongBytes,
    /// DL-07: the connection drops after this many body bytes.
    EarlyClose { after: u64 },
    /// DL-07: the body goes on past the file's end.
    OverLong,
    /// DL-09/10: this status (with `Retry-After` seconds).
    Status { code: u16, retry_after: Option<u64> },
    /// DL-11: the CDN says the signed URL expired (403).
    Expired,
    /// DL-14: a captive portal's login page.
    CaptivePortal,
    /// DL-15: this many bytes, then nothing.
    Stall { after: u64 },
    /// DL-15: this many bytes, then 10 bytes a second.
    Trickle { after: u64 },
}

/// One request for a file's bytes.
#[derive(Clone, Debug)]
pub struct RequestRecord {
    pub cdn: bool,
    pub path: String,
    pub commit: String,
    pub start: u64,
    pub end: Option<u64>,
    pub status: u16,
    pub lie: Option<Lie>,
    /// Body bytes handed to the socket so far.
    pub sent: Arc<AtomicU64>,
}

#[derive(Default)]
pub(super) struct State {
    pub(super) repos: Mutex<Vec<HubRepo>>,
    pub(super) main: Mutex<String>,
    pub(super) script: Mutex<HashMap<String, VecDeque<Lie>>>,
    pub(super) log: Mutex<Vec<RequestRecord>>,
    pub(super) rate: Mutex<Option<u64>>,
    pub(super) extra_tree: Mutex<Vec<serde_json::Value>>,
    pub(super) cdn_base: Mutex<String>,
    pub(super) hub_base: Mutex<String>,
}
