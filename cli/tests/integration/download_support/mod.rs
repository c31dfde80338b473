//! What the `k3 download` tests share: the fake hub's repository (the tiny same-graph model
//! plus blobs off the chunk grid), running `k3 download` against it, reading its events and
//! journals, checking a finished store, and a tmpfs for the full-drive cases.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

use bytes::Bytes;
use k3_tests::fake_hub::{FakeHub, HubFile, HubRepo};
use serde_json::Value;

pub const REPO: &str = "moonshotai/Kimi-K3-tiny";
pub const COMMIT_A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
pub const COMMIT_B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
/// Extra LFS blobs besides the tiny model: sizes off the 4096 and chunk grids.
pub const EXTRAS: [(&str, usize); 3] = [
    ("extra/blob-a.bin", (9 << 20) + 123),
    ("extra/blob-b.bin", (6 << 20) + 4097),
    ("extra/blob-c.bin", (3 << 20) - 5),
];
pub const CHUNK: u64 = 1 << 20;

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures").join(name)
}

pub fn tmp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("k3-dl-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    p
}

pub use k3_tests::fake_hub::noise;

/// The tiny same-graph model (json files in git, shards and tiktoken.model in LFS) and
/// the extra blobs, at `commit`; `salt` changes the blobs' bytes.
pub fn repo(commit: &str, salt: u64) -> HubRepo {
    let mut files = k3_tests::fake_hub::checkpoint_files(&fixture("tiny-mxfp4")).unwrap();
    for (i, (name, len)) in EXTRAS.iter().enumerate() {
        files.push(HubFile { path: name.to_string(), bytes: Bytes::from(noise(*len, 7 + i as u64 + salt)), lfs: true });
    }
    HubRepo { id: REPO.into(), commit: commit.into(), files }
}

pub fn k3_download(hub: &FakeHub, store: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_k3"));
    c.args(["download", "--repo", REPO, "--to"]).arg(store).args([
        "--endpoint",
        &hub.endpoint,
        "--json",
        "--chunk-size",
        "1MiB",
        "--retry-base",
        "0.05",
        "--retry-cap",
        "0.2",
        "--stall-timeout",
        "1",
        "--space-poll",
        "0.1",
    ]);
    c.args(extra);
    c.env_remove("HF_TOKEN")
        .env("HF_HOME", store.with_extension("hf-home"))
        .env_remove("K3_REVISION")
        .env_remove("K3_STORE_FAILPOINT");
    c
}

pub fn events(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

pub fn of_kind<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["event"] == kind).collect()
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Every file of `repo` is in `store` with the right bytes, and recorded verified.
pub fn assert_store_complete(store: &Path, repo: &HubRepo) {
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(store.join(".k3-desktop/manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["commit"], repo.commit);
    for f in &repo.files {
        let on_disk = std::fs::read(store.join(&f.path)).unwrap_or_else(|e| panic!("{}: {e}", f.path));
        assert_eq!(sha256_hex(&on_disk), f.sha256(), "{} has the wrong bytes", f.path);
        let entry = manifest["files"].as_array().unwrap().iter().find(|e| e["path"] == f.path.as_str()).unwrap();
        assert!(entry["verified"].is_object(), "{} not recorded verified", f.path);
        let meta =
            std::fs::read_to_string(store.join(".cache/huggingface/download").join(format!("{}.metadata", f.path)))
                .unwrap();
        let lines: Vec<&str> = meta.lines().collect();
        assert_eq!(lines[0], repo.commit);
        assert_eq!(lines[1], if f.lfs { f.sha256() } else { f.git_oid() });
        assert!(lines[2].parse::<f64>().is_ok());
    }
    assert!(
        !store
            .join(".k3-desktop/partial")
            .read_dir()
            .map(|mut d| d.any(|e| e.unwrap().path().is_file()))
            .unwrap_or(false),
        "a partial file is left behind"
    );
}

/// Each shard of `repo` the download fetched has its segment sums beside it, equal to
/// sums computed from the bytes on disk now; returns how many shards.
pub fn assert_segment_sums_match(store: &Path, repo: &HubRepo) -> usize {
    use k3_io::provenance::VerifiedRecord;
    use k3_io::segment_sums::{SegmentCrcs, SegmentPlan, SegmentSums};
    let mut shards = 0;
    for f in repo.files.iter().filter(|f| f.path.ends_with(".safetensors")) {
        let path = store.join(&f.path);
        let mut want = SegmentCrcs::new(std::sync::Arc::new(SegmentPlan::of_file(&path).unwrap()));
        want.update(&std::fs::read(&path).unwrap());
        let want = want.finish(VerifiedRecord::of(&path).unwrap()).unwrap();
        let got = SegmentSums::load(store, &path).unwrap_or_else(|| panic!("{}: no segment sums", f.path));
        assert_eq!(got, want, "{}: the segment sums are not those of its bytes", f.path);
        shards += 1;
    }
    shards
}

pub fn golden_tokens_from(store: &Path, trunk: Option<&Path>) {
    let golden: Value =
        serde_json::from_slice(&std::fs::read(fixture("tiny-mxfp4/golden/golden.json")).unwrap()).unwrap();
    let ids: Vec<String> = golden["prompt_ids"].as_array().unwrap().iter().map(|v| v.to_string()).collect();
    let want = golden["greedy_ids"].as_array().unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_k3"));
    c.args(["run", "--model"]).arg(store).args([
        "--ids",
        &ids.join(","),
        "--gen",
        &want.len().to_string(),
        "--greedy",
        "--json",
    ]);
    if let Some(t) = trunk {
        c.args(["--trunk"]).arg(t).args(["--trunk-budget", "300KB", "--cache-budget", "40KB"]);
    }
    let out = c.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["generated_ids"].as_array().unwrap(), want, "the downloaded model does not generate its goldens");
}

/// The durable end of each file's journal (the last complete record).
pub fn journal_ends(store: &Path) -> HashMap<String, u64> {
    let mut out = HashMap::new();
    let root = store.join(".k3-desktop/journal");
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else { continue };
        for e in rd {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let Some(rel) = p.strip_prefix(&root).unwrap().to_str().and_then(|s| s.strip_suffix(".journal")) else {
                continue;
            };
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            let complete = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
            let end = complete
                .lines()
                .skip(1)
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter_map(|v| v["end"].as_u64())
                .last()
                .unwrap_or(0);
            out.insert(rel.to_string(), end);
        }
    }
    out
}

pub fn kill_after(mut child: Child, after: Duration) -> bool {
    let deadline = Instant::now() + after;
    while Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    true
}

/// Checks each killed file resumed exactly at its durable end; returns the most bytes
/// the server had sent past that end before the kill.
pub fn check_resume(hub: &FakeHub, before: &HashMap<String, u64>, sent_before: &HashMap<String, u64>) -> u64 {
    let mut worst = 0;
    let reqs = hub.requests();
    for (path, end) in before {
        if let Some(first) = reqs.iter().find(|q| &q.path == path && q.end.is_none()) {
            assert_eq!(first.start, *end, "{path}: resumed at {} but {end} bytes were durable", first.start);
        }
        worst = worst.max(sent_before.get(path).copied().unwrap_or(0).saturating_sub(*end));
    }
    worst
}

/// Furthest byte the server sent of each file in the requests logged so far.
pub fn sent_ends(hub: &FakeHub) -> HashMap<String, u64> {
    let mut out: HashMap<String, u64> = HashMap::new();
    for q in hub.requests().iter().filter(|q| q.end.is_none() && q.status == 206 || q.status == 200) {
        let end = q.start + q.sent.load(std::sync::atomic::Ordering::Relaxed);
        let e = out.entry(q.path.clone()).or_default();
        *e = (*e).max(if q.status == 200 { q.sent.load(std::sync::atomic::Ordering::Relaxed) } else { end });
    }
    out
}

/// A tmpfs of `mib` MiB mounted at a fresh folder; unmounted when dropped. `None` (test
/// skipped) when mounting is not allowed here; in CI (root) a failure to mount fails.
pub struct Tmpfs(pub PathBuf);

impl Tmpfs {
    pub fn mount(name: &str, mib: u64) -> Option<Tmpfs> {
        let dir = tmp(name);
        std::fs::create_dir_all(&dir).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mib}m"), "tmpfs"])
            .arg(&dir)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            assert!(std::env::var_os("CI").is_none(), "CI runs as root and must be able to mount a tmpfs");
            eprintln!("skipped: cannot mount a tmpfs here (not root)");
            return None;
        }
        Some(Tmpfs(dir))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
