//! `k3 download`'s durability against the fake hub: kills at random points and at each
//! crash point resumed from the last durable chunk; one instance per store; the pinned
//! commit winning over a moved branch; names that would leave the store refused; a real
//! full drive and a read-only one (tmpfs, CI is root); a byte flipped in a partial's earlier
//! chunk fetched again on resume.

use crate::download_support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use download_support::*;
use k3_tests::fake_hub::FakeHub;
use serde_json::Value;

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
    assert!(assert_segment_sums_match(&store, &repo(COMMIT_A, 0)) > 0, "segment sums survive every resume");
    golden_tokens_from(&store, None);
    eprintln!("kills: {kills}; bytes the server had sent past the durable end, per file per kill: worst {worst_refetch}, total {total_refetch} (chunk {CHUNK})");
    let _ = std::fs::remove_dir_all(&store);
}

/// Probe finding (high): a byte flipped in an earlier durable chunk of a `.part` between a
/// kill and the resume was resumed past (only the last chunk was checked) and every file
/// declared verified, though `k3 verify` then said BAD. The resume reads the durable prefix
/// back, so the damaged chunk is fetched again and every file verifies.
#[test]
fn a_byte_flipped_in_an_earlier_chunk_of_a_partial_is_fetched_again_on_resume() {
    let hub = FakeHub::start(vec![repo(COMMIT_A, 0)], COMMIT_A);
    let store = tmp("flipped");
    let out =
        k3_download(&hub, &store, &["--no-pack"]).env("K3_STORE_FAILPOINT", "after-journal-sync@3").output().unwrap();
    assert!(!out.status.success(), "the failpoint stops the download");
    let partial_dir = store.join(".k3-desktop").join("partial");
    let mut flipped = 0;
    for entry in walk(&partial_dir).into_iter().filter(|p| p.extension().is_some_and(|e| e == "part")) {
        let mut bytes = std::fs::read(&entry).unwrap();
        if bytes.len() > 8 {
            bytes[5] ^= 0x40;
            std::fs::write(&entry, &bytes).unwrap();
            flipped += 1;
        }
    }
    assert!(flipped > 0, "no partial file with a durable chunk to damage in {}", partial_dir.display());
    let out = k3_download(&hub, &store, &["--no-pack"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_store_complete(&store, &repo(COMMIT_A, 0));
    let _ = std::fs::remove_dir_all(&store);
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// Probe finding (low): an `--endpoint` that is not an http(s) URL was retried forever as a
/// network failure; it is refused at once (exit 2), naming it. So is `--to` a regular file.
#[test]
fn an_endpoint_that_is_not_an_http_url_and_a_to_that_is_a_file_are_refused_at_once() {
    for endpoint in ["ftp://example.org", "not a url", "file:///tmp/x"] {
        let store = tmp("bad-endpoint");
        let start = Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_k3"))
            .args(["download", "--repo", REPO, "--to"])
            .arg(&store)
            .args(["--endpoint", endpoint])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{endpoint}: {err}");
        assert!(err.contains(endpoint) && err.contains("not a hub address"), "{err}");
        assert!(start.elapsed() < Duration::from_secs(10), "{endpoint}: not at once");
        let _ = std::fs::remove_dir_all(&store);
    }
    // And `--to` a regular file says it is not a folder (it said only "File exists").
    let file = tmp("to-a-file");
    std::fs::write(&file, b"x").unwrap();
    let out =
        Command::new(env!("CARGO_BIN_EXE_k3")).args(["download", "--repo", REPO, "--to"]).arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a folder"), "{}", String::from_utf8_lossy(&out.stderr));
    let _ = std::fs::remove_file(&file);
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
#[cfg_attr(windows, ignore = "mounts a tmpfs: Linux")]
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
#[cfg_attr(windows, ignore = "mounts a tmpfs: Linux")]
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
