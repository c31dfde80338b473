//! `k3 download` against the fake hub (k3_tests::fake_hub) as a real process: every file
//! verified and the model generating its goldens; each protocol lie of RELIABILITY
//! DL-04…16 survived; kills at random points and at each crash point resumed from the
//! last durable chunk; a real full drive (tmpfs); adoption; one instance per store; the
//! pinned commit winning over a moved branch; names that would leave the store refused.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use k3_tests::fake_hub::{FakeHub, HubFile, HubRepo, Lie};
use serde_json::Value;

const REPO: &str = "moonshotai/Kimi-K3-tiny";
const COMMIT_A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const COMMIT_B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
/// Extra LFS blobs besides the tiny model: sizes off the 4096 and chunk grids.
const EXTRAS: [(&str, usize); 3] = [
    ("extra/blob-a.bin", (9 << 20) + 123),
    ("extra/blob-b.bin", (6 << 20) + 4097),
    ("extra/blob-c.bin", (3 << 20) - 5),
];
const CHUNK: u64 = 1 << 20;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures").join(name)
}

fn tmp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("k3-dl-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    p
}

/// Deterministic bytes (xorshift) so every run serves the same blobs.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// The tiny same-graph model (json files in git, shards and tiktoken.model in LFS) and
/// the extra blobs, at `commit`; `salt` changes the blobs' bytes.
fn repo(commit: &str, salt: u64) -> HubRepo {
    let dir = fixture("tiny-mxfp4");
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if !path.is_file() {
            continue;
        }
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let lfs = name.ends_with(".safetensors") || name == "tiktoken.model";
        files.push(HubFile { path: name, bytes: Bytes::from(std::fs::read(&path).unwrap()), lfs });
    }
    for (i, (name, len)) in EXTRAS.iter().enumerate() {
        files.push(HubFile { path: name.to_string(), bytes: Bytes::from(noise(*len, 7 + i as u64 + salt)), lfs: true });
    }
    HubRepo { id: REPO.into(), commit: commit.into(), files }
}

fn k3_download(hub: &FakeHub, store: &Path, extra: &[&str]) -> Command {
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

fn events(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

fn of_kind<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["event"] == kind).collect()
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Every file of `repo` is in `store` with the right bytes, and recorded verified.
fn assert_store_complete(store: &Path, repo: &HubRepo) {
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

fn golden_tokens_from(store: &Path, trunk: Option<&Path>) {
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

#[test]
fn download_verifies_every_file_packs_the_trunk_and_the_model_generates_its_goldens() {
    let hub = FakeHub::start(vec![repo(COMMIT_A, 0)], COMMIT_A);
    let store = tmp("happy");
    let out = k3_download(&hub, &store, &[]).output().unwrap();
    assert!(out.status.success(), "{}\n{}", String::from_utf8_lossy(&out.stderr), String::from_utf8_lossy(&out.stdout));
    let ev = events(&out);
    let pinned = of_kind(&ev, "pinned");
    assert_eq!(pinned[0]["commit"], COMMIT_A);
    assert!(of_kind(&ev, "progress").iter().all(|p| p["done_bytes"].as_u64() <= p["total_bytes"].as_u64()));
    assert_eq!(of_kind(&ev, "ready").len(), 1, "no first load reported");
    let r = repo(COMMIT_A, 0);
    assert_store_complete(&store, &r);
    // Shard headers were read by bounded ranges before the bodies; each file's body once.
    let reqs = hub.requests();
    for f in r.files.iter().filter(|f| f.path.ends_with(".safetensors")) {
        let body: Vec<_> = reqs.iter().filter(|q| q.path == f.path && q.end.is_none()).collect();
        assert_eq!(body.len(), 1, "{}: {} body requests", f.path, body.len());
        assert!(
            reqs.iter().any(|q| q.path == f.path && q.start == 0 && q.end == Some(7)),
            "{}: no header read",
            f.path
        );
    }
    golden_tokens_from(&store, Some(&store.join(".k3-desktop/trunk")));
    // A second run finds everything verified and fetches nothing.
    hub.clear_requests();
    let again = k3_download(&hub, &store, &["--no-pack"]).output().unwrap();
    assert!(again.status.success());
    assert!(hub.requests().is_empty(), "a complete store fetched {} requests", hub.requests().len());
    let _ = std::fs::remove_dir_all(&store);
}

#[test]
fn every_protocol_lie_of_dl_04_to_16_is_survived() {
    let hub = FakeHub::start(vec![repo(COMMIT_A, 0)], COMMIT_A);
    let (a, b, c) = (EXTRAS[0].0, EXTRAS[1].0, EXTRAS[2].0);
    // DL-07 then DL-04: after an early close the resume's Range is ignored: restart.
    hub.script(a, vec![Lie::EarlyClose { after: 3 << 20 }, Lie::IgnoreRange]);
    // DL-07: a body longer than the file.
    let long = "model-00002-of-000014.safetensors";
    hub.script(long, vec![Lie::OverLong]);
    // DL-06, DL-09 (with Retry-After), DL-11, DL-14.
    hub.script(
        b,
        vec![
            Lie::WrongBytes,
            Lie::Status { code: 503, retry_after: Some(1) },
            Lie::Status { code: 429, retry_after: None },
            Lie::Expired,
            Lie::CaptivePortal,
        ],
    );
    // DL-15: a stall and a trickle; DL-09: 408; DL-05: a wrong Content-Range.
    hub.script(
        c,
        vec![
            Lie::Stall { after: 1 << 20 },
            Lie::Trickle { after: 256 << 10 },
            Lie::Status { code: 408, retry_after: None },
            Lie::BadContentRange,
        ],
    );
    let store = tmp("lies");
    let started = Instant::now();
    let out = k3_download(&hub, &store, &["--no-pack"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for p in [a, b, c, long] {
        assert_eq!(hub.pending_lies(p), 0, "{p}: not every lie was told");
    }
    assert_store_complete(&store, &repo(COMMIT_A, 0));
    let ev = events(&out);
    let notices: Vec<String> =
        of_kind(&ev, "notice").iter().map(|n| format!("{}: {}", n["path"], n["message"])).collect();
    assert!(notices.iter().any(|n| n.contains(a) && n.contains("ignored the Range")), "{notices:#?}");
    assert!(
        notices.iter().any(|n| n.contains(b) && n.contains("integrity check") && n.contains("this file only")),
        "{notices:#?}"
    );
    assert!(notices.iter().any(|n| n.contains(b) && n.contains("fresh URL")), "{notices:#?}");
    assert!(notices.iter().any(|n| n.contains(long) && n.contains("more than the file")), "{notices:#?}");
    let retries: Vec<&Value> = of_kind(&ev, "retrying");
    let after_503 = retries.iter().find(|r| r["path"] == b && r["reason"] == "HTTP 503").expect("no retry after 503");
    assert!(after_503["wait_seconds"].as_f64().unwrap() >= 1.0, "Retry-After ignored: {after_503}");
    assert!(
        retries.iter().any(|r| r["path"] == c && r["reason"].as_str().unwrap().contains("no data")),
        "stall not detected"
    );
    assert!(
        retries.iter().any(|r| r["path"] == c && r["reason"].as_str().unwrap().contains("bytes in")),
        "trickle not detected"
    );
    assert!(
        retries.iter().any(|r| r["path"] == b && r["reason"].as_str().unwrap().contains("web page")),
        "captive portal accepted"
    );
    assert!(
        retries.iter().any(|r| r["path"] == c && r["reason"].as_str().unwrap().contains("Content-Range")),
        "a wrong Content-Range accepted"
    );
    // The after-ignored-Range body was taken from byte 0, and the file's partial restarted.
    let reqs = hub.requests();
    let ignored = reqs.iter().find(|q| q.path == a && q.lie == Some(Lie::IgnoreRange)).unwrap();
    assert!(ignored.start > 0 && ignored.status == 200);
    assert!(started.elapsed() < Duration::from_secs(60));
    let _ = std::fs::remove_dir_all(&store);
}

#[test]
fn dl_06_a_second_mismatch_stops_that_file_and_dl_10_denials_fail_alone_without_a_retry_storm() {
    let hub = FakeHub::start(vec![repo(COMMIT_A, 0)], COMMIT_A);
    let (a, b) = (EXTRAS[0].0, EXTRAS[1].0);
    hub.script(a, vec![Lie::WrongBytes, Lie::WrongBytes]);
    hub.script(b, vec![Lie::Status { code: 401, retry_after: None }]);
    hub.script("tokenizer_config.json", vec![Lie::Status { code: 403, retry_after: None }]);
    let store = tmp("fatal");
    let out = k3_download(&hub, &store, &["--no-pack"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(a) && err.contains("failed its integrity check twice"), "{err}");
    assert!(err.contains("access denied (HTTP 401)") && err.contains("licence"), "{err}");
    assert!(err.contains("tokenizer_config.json") && err.contains("HTTP 403"), "{err}");
    let reqs = hub.requests();
    assert_eq!(reqs.iter().filter(|q| q.path == b && q.end.is_none()).count(), 1, "retried a 401");
    assert_eq!(reqs.iter().filter(|q| q.path == "tokenizer_config.json").count(), 1, "retried a 403 from the hub");
    // The other files went on and are verified; the bad ones are not in place.
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(store.join(".k3-desktop/manifest.json")).unwrap()).unwrap();
    for entry in manifest["files"].as_array().unwrap() {
        let path = entry["path"].as_str().unwrap();
        let bad = [a, b, "tokenizer_config.json"].contains(&path);
        assert_eq!(entry["verified"].is_null(), bad, "{path}");
        assert_eq!(store.join(path).exists(), !bad, "{path}");
    }
    let _ = std::fs::remove_dir_all(&store);
}

/// The durable end of each file's journal (the last complete record).
fn journal_ends(store: &Path) -> HashMap<String, u64> {
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

fn kill_after(mut child: Child, after: Duration) -> bool {
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
fn check_resume(hub: &FakeHub, before: &HashMap<String, u64>, sent_before: &HashMap<String, u64>) -> u64 {
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
fn sent_ends(hub: &FakeHub) -> HashMap<String, u64> {
    let mut out: HashMap<String, u64> = HashMap::new();
    for q in hub.requests().iter().filter(|q| q.end.is_none() && q.status == 206 || q.status == 200) {
        let end = q.start + q.sent.load(std::sync::atomic::Ordering::Relaxed);
        let e = out.entry(q.path.clone()).or_default();
        *e = (*e).max(if q.status == 200 { q.sent.load(std::sync::atomic::Ordering::Relaxed) } else { end });
    }
    out
}

#[test]
fn dl_01_and_dl_02_kills_at_random_points_and_at_each_crash_point_resume_from_the_last_durable_chunk() {
    let hub = FakeHub::start(vec![repo(COMMIT_A, 0)], COMMIT_A);
    hub.set_rate(Some(12 << 20));
    let store = tmp("kills");
    let mut rng = 0x9e3779b97f4a7c15u64;
    let (mut kills, mut worst_refetch, mut total_refetch) = (0, 0u64, 0u64);
    let mut rounds = 0;
    // Random points: at least 20 kills.
    while kills < 20 {
        rounds += 1;
        assert!(rounds < 200, "the download finished too fast to be killed 20 times");
        let before = journal_ends(&store);
        let sent = sent_ends(&hub);
        hub.clear_requests();
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let wait = Duration::from_millis(150 + rng % 400);
        let child =
            k3_download(&hub, &store, &["--no-pack"]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        let killed = kill_after(child, wait);
        let refetch = check_resume(&hub, &before, &sent);
        worst_refetch = worst_refetch.max(refetch);
        total_refetch += refetch;
        if !killed {
            // Finished before the kill: start again from an empty store to get more kills.
            assert_store_complete(&store, &repo(COMMIT_A, 0));
            std::fs::remove_dir_all(&store).unwrap();
            continue;
        }
        kills += 1;
    }
    // Each crash point of the write → sync → journal → rename → marker order.
    for point in [
        "after-write",
        "after-data-sync",
        "after-journal-write",
        "after-journal-sync",
        "after-rename",
        "after-dir-sync",
        "after-marker",
    ] {
        for nth in [1, 3] {
            let before = journal_ends(&store);
            let sent = sent_ends(&hub);
            hub.clear_requests();
            let out = k3_download(&hub, &store, &["--no-pack"])
                .env("K3_STORE_FAILPOINT", format!("{point}@{nth}"))
                .output()
                .unwrap();
            check_resume(&hub, &before, &sent);
            if out.status.success() {
                std::fs::remove_dir_all(&store).unwrap();
            } else {
                kills += 1;
            }
        }
    }
    hub.set_rate(None);
    let before = journal_ends(&store);
    let sent = sent_ends(&hub);
    hub.clear_requests();
    let out = k3_download(&hub, &store, &[]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    check_resume(&hub, &before, &sent);
    assert_store_complete(&store, &repo(COMMIT_A, 0));
    golden_tokens_from(&store, None);
    eprintln!("kills: {kills}; bytes the server had sent past the durable end, per file per kill: worst {worst_refetch}, total {total_refetch} (chunk {CHUNK})");
    let _ = std::fs::remove_dir_all(&store);
}

#[test]
fn dl_20_a_second_instance_on_the_same_store_is_refused() {
    let hub = FakeHub::start(vec![repo(COMMIT_A, 0)], COMMIT_A);
    hub.set_rate(Some(2 << 20));
    let store = tmp("lock");
    let first = k3_download(&hub, &store, &["--no-pack"]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(400));
    let second = k3_download(&hub, &store, &["--no-pack"]).output().unwrap();
    kill_after(first, Duration::ZERO);
    assert_eq!(second.status.code(), Some(2));
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(err.contains("in use by another k3 download"), "{err}");
    let _ = std::fs::remove_dir_all(&store);
}

#[test]
fn dl_13_the_pinned_commit_wins_when_main_moves_between_resumes() {
    let hub = FakeHub::start(vec![repo(COMMIT_A, 0), repo(COMMIT_B, 99)], COMMIT_A);
    hub.set_rate(Some(8 << 20));
    let store = tmp("pinned");
    let child = k3_download(&hub, &store, &["--no-pack"]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    assert!(kill_after(child, Duration::from_millis(600)), "finished before the kill");
    hub.set_main(COMMIT_B);
    hub.set_rate(None);
    hub.clear_requests();
    let out = k3_download(&hub, &store, &["--no-pack"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(hub.requests().iter().all(|q| q.commit == COMMIT_A), "fetched from another commit");
    assert_store_complete(&store, &repo(COMMIT_A, 0));
    // Asking for the other commit explicitly is refused: versions are never mixed.
    let mixed = k3_download(&hub, &store, &["--no-pack", "--revision", COMMIT_B]).output().unwrap();
    assert_eq!(mixed.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&mixed.stderr).contains("never mixed"));
    let _ = std::fs::remove_dir_all(&store);
}

#[test]
fn dl_22_a_tree_entry_that_would_leave_the_store_is_refused_before_any_byte() {
    let hub = FakeHub::start(vec![repo(COMMIT_A, 0)], COMMIT_A);
    hub.add_tree_entry(serde_json::json!({"type": "file", "path": "../../evil.sh", "size": 5, "oid": "0123456789abcdef0123456789abcdef01234567"}));
    let store = tmp("traversal");
    let out = k3_download(&hub, &store, &["--no-pack"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("../../evil.sh") && err.contains("refused"), "{err}");
    assert!(hub.requests().is_empty(), "fetched bytes after a bad tree");
    let _ = std::fs::remove_dir_all(&store);
}

#[test]
fn an_existing_local_dir_copy_is_adopted_in_place_and_a_corrupt_byte_in_it_is_caught() {
    let hub = FakeHub::start(vec![repo(COMMIT_A, 0)], COMMIT_A);
    let r = repo(COMMIT_A, 0);
    let store = tmp("adopt");
    for f in &r.files {
        let p = store.join(&f.path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, &f.bytes).unwrap();
    }
    let bad = "model-00003-of-000014.safetensors";
    let mut bytes = std::fs::read(store.join(bad)).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(store.join(bad), &bytes).unwrap();
    let out = k3_download(&hub, &store, &["--no-pack"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let fetched: std::collections::BTreeSet<String> =
        hub.requests().iter().filter(|q| q.end.is_none()).map(|q| q.path.clone()).collect();
    assert_eq!(
        fetched.into_iter().collect::<Vec<_>>(),
        vec![bad.to_string()],
        "only the corrupt file is fetched again"
    );
    assert_store_complete(&store, &r);
    let _ = std::fs::remove_dir_all(&store);
}

#[test]
fn k3_verify_names_a_file_that_went_bad_after_download() {
    let hub = FakeHub::start(vec![repo(COMMIT_A, 0)], COMMIT_A);
    let store = tmp("verify");
    assert!(k3_download(&hub, &store, &["--no-pack"]).output().unwrap().status.success());
    let verify = |store: &Path| {
        Command::new(env!("CARGO_BIN_EXE_k3")).args(["verify", "--json", "--model"]).arg(store).output().unwrap()
    };
    let ok = verify(&store);
    assert!(ok.status.success());
    let v: Value = serde_json::from_slice(&ok.stdout).unwrap();
    assert_eq!(v["ok"], true);
    let victim = store.join(EXTRAS[1].0);
    let mut bytes = std::fs::read(&victim).unwrap();
    bytes[12345] ^= 0x80;
    std::fs::write(&victim, &bytes).unwrap();
    let bad = verify(&store);
    assert_eq!(bad.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&bad.stdout).unwrap();
    assert_eq!(v["bad"].as_array().unwrap().len(), 1);
    assert_eq!(v["bad"][0]["path"], EXTRAS[1].0);
    // The next download fetches exactly that file again.
    hub.clear_requests();
    assert!(k3_download(&hub, &store, &["--no-pack"]).output().unwrap().status.success());
    assert!(hub.requests().iter().filter(|q| q.end.is_none()).all(|q| q.path == EXTRAS[1].0));
    let _ = std::fs::remove_dir_all(&store);
}

/// A tmpfs of `mib` MiB mounted at a fresh folder; unmounted when dropped. `None` (test
/// skipped) when mounting is not allowed here; in CI (root) a failure to mount fails.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(name: &str, mib: u64) -> Option<Tmpfs> {
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

#[test]
fn dl_17_a_full_drive_is_refused_with_numbers_at_start_and_pauses_then_resumes_mid_write() {
    let hub = FakeHub::start(vec![repo(COMMIT_A, 0)], COMMIT_A);
    let total: u64 = repo(COMMIT_A, 0).files.iter().map(|f| f.bytes.len() as u64).sum();
    // Too small from the start: refused before the first byte, with the numbers.
    let Some(small) = Tmpfs::mount("tmpfs-small", 16) else { return };
    let out = k3_download(&hub, &small.0.join("store"), &["--no-pack"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("needs") && err.contains("checkpoint") && err.contains("free") && err.contains("short"),
        "{err}"
    );
    assert!(hub.requests().is_empty(), "fetched bytes although the drive was too small");
    drop(small);

    // Room at the start, filled up mid-download: pause, keep durable bytes, resume.
    let Some(fs) = Tmpfs::mount("tmpfs-fill", (total >> 20) + 12) else { return };
    let store = fs.0.join("store");
    hub.set_rate(Some(4 << 20));
    let mut child =
        k3_download(&hub, &store, &["--no-pack"]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str(&line) {
                let _ = tx.send(v);
            }
        }
    });
    // Wait until bytes are flowing, then fill the drive.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !rx
        .recv_timeout(Duration::from_secs(30))
        .is_ok_and(|e| e["event"] == "progress" && e["done_bytes"].as_u64() > Some(4 << 20))
    {
        assert!(Instant::now() < deadline, "no progress");
    }
    let ballast = fs.0.join("ballast");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&ballast).unwrap();
        let block = vec![0u8; 1 << 20];
        while f.write_all(&block).is_ok() {}
        let _ = f.sync_all();
    }
    let paused = loop {
        let e = rx.recv_timeout(Duration::from_secs(30)).expect("no pause on a full drive");
        if e["event"] == "paused" {
            break e;
        }
    };
    assert!(paused["needed"].as_u64().unwrap() > paused["free"].as_u64().unwrap(), "{paused}");
    let kept_before = journal_ends(&store).values().sum::<u64>();
    assert!(kept_before > 0, "durable bytes were not kept");
    hub.clear_requests();
    std::fs::remove_file(&ballast).unwrap();
    hub.set_rate(None);
    let status = child.wait().unwrap();
    assert!(status.success(), "{}", {
        let mut s = String::new();
        use std::io::Read;
        child.stderr.take().unwrap().read_to_string(&mut s).unwrap();
        s
    });
    assert_store_complete(&store, &repo(COMMIT_A, 0));
    let restarted_from_zero = hub.requests().iter().filter(|q| q.end.is_none() && q.start == 0).count();
    let resumed = hub.requests().iter().filter(|q| q.end.is_none() && q.start > 0).count();
    assert!(resumed >= 1, "nothing resumed mid-file after the pause ({restarted_from_zero} from 0)");
}

#[test]
fn a_hugging_face_cache_copy_is_adopted_by_link_and_a_corrupt_blob_in_it_is_caught() {
    let hub = FakeHub::start(vec![repo(COMMIT_A, 0)], COMMIT_A);
    let r = repo(COMMIT_A, 0);
    let store = tmp("hfcache");
    let cache = store.with_extension("hf-home").join("hub").join(format!("models--{}", REPO.replace('/', "--")));
    let _ = std::fs::remove_dir_all(store.with_extension("hf-home"));
    let snapshot = cache.join("snapshots").join(COMMIT_A);
    std::fs::create_dir_all(cache.join("blobs")).unwrap();
    std::fs::create_dir_all(cache.join("refs")).unwrap();
    std::fs::write(cache.join("refs/main"), COMMIT_A).unwrap();
    let corrupt = "model-00005-of-000014.safetensors";
    for f in &r.files {
        let blob_name = if f.lfs { f.sha256() } else { f.git_oid() };
        let mut bytes = f.bytes.to_vec();
        if f.path == corrupt {
            bytes[100] ^= 4;
        }
        std::fs::write(cache.join("blobs").join(&blob_name), &bytes).unwrap();
        let link = snapshot.join(&f.path);
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        let depth = f.path.matches('/').count() + 2;
        let target = format!("{}blobs/{blob_name}", "../".repeat(depth));
        std::os::unix::fs::symlink(target, &link).unwrap();
    }
    let out = k3_download(&hub, &store, &["--no-pack"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let fetched: Vec<String> = hub
        .requests()
        .iter()
        .filter(|q| q.end.is_none() || q.path.ends_with(".json"))
        .map(|q| q.path.clone())
        .collect();
    assert_eq!(fetched, vec![corrupt.to_string()], "only the corrupt blob is downloaded");
    assert_store_complete(&store, &r);
    let linked = store.join(EXTRAS[0].0);
    assert!(std::fs::symlink_metadata(&linked).unwrap().file_type().is_symlink(), "adopted by copying");
    assert!(std::fs::read_link(&linked).unwrap().starts_with(std::fs::canonicalize(&cache).unwrap()));
    golden_tokens_from(&store, None);
    let _ = std::fs::remove_dir_all(&store);
    let _ = std::fs::remove_dir_all(store.with_extension("hf-home"));
}

/// A measurement, not a check (run it by name with `--ignored --nocapture`): `k3 download`
/// of one large LFS file from the loopback fake hub against a plain `curl` of the same URL
/// from the same server, both written to the same drive.
#[test]
#[ignore]
fn loopback_download_speed_against_curl() {
    let mib: usize = std::env::var("K3_LOOPBACK_MIB").ok().and_then(|v| v.parse().ok()).unwrap_or(1024);
    let file = HubFile { path: "big.bin".into(), bytes: Bytes::from(noise(mib << 20, 3)), lfs: true };
    let hub = FakeHub::start(vec![HubRepo { id: REPO.into(), commit: COMMIT_A.into(), files: vec![file] }], COMMIT_A);
    let dir = std::env::var_os("K3_LOOPBACK_DIR").map(PathBuf::from).unwrap_or_else(std::env::temp_dir);
    for round in 0..2 {
        let store = dir.join(format!("k3-loopback-store-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&store);
        let t = Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_k3"))
            .args(["download", "--repo", REPO, "--to"])
            .arg(&store)
            .args(["--endpoint", &hub.endpoint, "--json", "--no-pack"])
            .env("HF_HOME", dir.join("k3-loopback-hf"))
            .output()
            .unwrap();
        let k3_secs = t.elapsed().as_secs_f64();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let target = dir.join(format!("k3-loopback-curl-{}", std::process::id()));
        let t = Instant::now();
        let url = format!("{}/{REPO}/resolve/{COMMIT_A}/big.bin", hub.endpoint);
        let status = Command::new("curl").args(["-sSfL", "-o"]).arg(&target).arg(&url).status().unwrap();
        let curl_secs = t.elapsed().as_secs_f64();
        assert!(status.success());
        assert!(Command::new("sync").arg(&target).status().unwrap().success());
        let curl_sync_secs = t.elapsed().as_secs_f64();
        let mb = (mib << 20) as f64 / 1e6;
        eprintln!(
            "round {round}: {mib} MiB: k3 download {:.0} MB/s ({k3_secs:.2} s: SHA-256 while writing, durable per 64 MiB) · curl {:.0} MB/s ({curl_secs:.2} s, in the page cache) · curl + sync {:.0} MB/s ({curl_sync_secs:.2} s) · k3 / (curl + sync) {:.2}",
            mb / k3_secs,
            mb / curl_secs,
            mb / curl_sync_secs,
            curl_sync_secs / k3_secs
        );
        let _ = std::fs::remove_dir_all(&store);
        let _ = std::fs::remove_file(&target);
    }
}

#[test]
fn without_a_terminal_or_json_the_download_prints_plain_lines() {
    let hub = FakeHub::start(vec![repo(COMMIT_A, 0)], COMMIT_A);
    let store = tmp("plain");
    let c = k3_download(&hub, &store, &["--no-pack"]);
    let args: Vec<String> = c.get_args().map(|a| a.to_string_lossy().into_owned()).filter(|a| a != "--json").collect();
    let mut plain = Command::new(env!("CARGO_BIN_EXE_k3"));
    plain.args(&args).envs(c.get_envs().filter_map(|(k, v)| v.map(|v| (k.to_owned(), v.to_owned()))));
    let out = plain.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("at commit {COMMIT_A}")), "{text}");
    assert!(text.contains("config.json: verified"), "{text}");
    assert!(text.contains("files verified"), "{text}");
    assert!(!text.contains("{\""), "JSON without --json: {text}");
    let _ = std::fs::remove_dir_all(&store);
}

#[test]
fn dl_18_a_read_only_drive_is_refused_before_any_byte() {
    let hub = FakeHub::start(vec![repo(COMMIT_A, 0)], COMMIT_A);
    let Some(fs) = Tmpfs::mount("tmpfs-ro", 8) else { return };
    let store = fs.0.join("store");
    std::fs::create_dir_all(&store).unwrap();
    assert!(Command::new("mount").args(["-o", "remount,ro"]).arg(&fs.0).status().unwrap().success());
    let out = k3_download(&hub, &store, &["--no-pack"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("read-only") || err.contains("Read-only"), "{err}");
    assert!(hub.requests().is_empty());
}
