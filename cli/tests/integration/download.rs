//! `k3 download` against the fake hub (k3_tests::fake_hub) as a real process: every file
//! verified and the model generating its goldens; each protocol lie of RELIABILITY
//! DL-04…16 survived; fatal answers failing alone; adoption of a `--local-dir` copy and of
//! the Hugging Face cache; `k3 verify`; plain output without a terminal.

use crate::download_support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use download_support::*;
use k3_tests::fake_hub::{FakeHub, Lie};
use serde_json::Value;

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

/// Issue 44 item 1: the download computes each shard's segment CRC32Cs as the bytes stream
/// in, and `k3 pack` names every routed expert's CRC32C from them without reading an
/// expert; the table is byte for byte the one reading every expert makes. A shard changed
/// since it was verified is read again.
#[test]
fn the_pack_names_every_experts_crc_from_the_downloads_sums_and_reads_none() {
    let hub = FakeHub::start(vec![repo(COMMIT_A, 0)], COMMIT_A);
    let store = tmp("segment-sums");
    assert!(k3_download(&hub, &store, &["--no-pack"]).output().unwrap().status.success());
    assert!(assert_segment_sums_match(&store, &repo(COMMIT_A, 0)) > 0);
    let pack = |out: &Path| -> Value {
        let done = Command::new(env!("CARGO_BIN_EXE_k3"))
            .args(["pack", "--model"])
            .arg(&store)
            .arg("--out")
            .arg(out)
            .arg("--json")
            .output()
            .unwrap();
        assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
        let text = String::from_utf8_lossy(&done.stdout);
        serde_json::from_str(text.lines().last().unwrap()).unwrap()
    };
    let (named, read) = (store.join("pack-named"), store.join("pack-read"));
    let first = pack(&named);
    let experts = first["experts_from_download"].as_u64().unwrap();
    assert!(experts > 0, "{first}");
    assert_eq!(first["experts_read"], 0, "no expert read: {first}");
    let (sums, kept) = (store.join(".k3-desktop/crc32c"), store.join("crc32c-kept"));
    std::fs::rename(&sums, &kept).unwrap();
    let second = pack(&read);
    assert_eq!((second["experts_from_download"].as_u64(), second["experts_read"].as_u64()), (Some(0), Some(experts)));
    let table = |dir: &Path| std::fs::read(dir.join("experts.crc32c.json")).unwrap();
    assert!(table(&named) == table(&read), "the tables differ");
    let layers = |dir: &Path| serde_json::from_slice::<Value>(&table(dir)).unwrap()["layers"].clone();

    // Shards written since they were verified (here with the same bytes, so the table
    // stays comparable) are not named from their old sums: every expert is read again.
    // Every shard, since which one holds experts depends on the fixture.
    std::fs::rename(&kept, &sums).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    for f in repo(COMMIT_A, 0).files.iter().filter(|f| f.path.ends_with(".safetensors")) {
        let bytes = std::fs::read(store.join(&f.path)).unwrap();
        std::fs::write(store.join(&f.path), &bytes).unwrap();
    }
    let third = pack(&store.join("pack-changed"));
    let now = (third["experts_from_download"].as_u64(), third["experts_read"].as_u64());
    assert_eq!(now, (Some(0), Some(experts)), "the written shards' experts were read again: {third}");
    assert!(layers(&store.join("pack-changed")) == layers(&read), "the same bytes, the same CRCs");
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
    assert!(assert_segment_sums_match(&store, &r) > 0, "shards adopted in place keep segment sums");
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

// The test builds the Hugging Face cache with Unix symbolic links, as the hub's client does there.
#[cfg(unix)]
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
    // Shards hashed in the cache and the one downloaded alike keep their segment sums.
    assert!(assert_segment_sums_match(&store, &r) > 0);
    golden_tokens_from(&store, None);
    let _ = std::fs::remove_dir_all(&store);
    let _ = std::fs::remove_dir_all(store.with_extension("hf-home"));
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
