//! A measurement, not a test: `k3 download` of one large LFS file from the fake hub on
//! loopback against a plain `curl` (and `curl` + `sync`) of the same URL from the same
//! server, written to the same folder, two rounds.
//!
//! `cargo run --release -p k3-tests --example loopback_download -- --k3 target/release/k3
//!  [--mib 1024] [--dir FOLDER]`

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use bytes::Bytes;
use k3_tests::fake_hub::{FakeHub, HubFile, HubRepo};

const REPO: &str = "moonshotai/Kimi-K3-tiny";
const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

fn flag(args: &[String], name: &str) -> Option<String> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned()
}

fn seconds(mut c: Command) -> Result<f64, String> {
    let t = Instant::now();
    let out = c.output().map_err(|e| format!("{c:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{c:?}: {}", String::from_utf8_lossy(&out.stderr)));
    }
    Ok(t.elapsed().as_secs_f64())
}

fn round(k3: &Path, hub: &FakeHub, dir: &Path, mib: usize) -> Result<String, String> {
    let store = dir.join(format!("k3-loopback-store-{}", std::process::id()));
    let target = dir.join(format!("k3-loopback-curl-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&store);
    let mut download = Command::new(k3);
    download
        .args(["download", "--repo", REPO, "--to"])
        .arg(&store)
        .args(["--endpoint", &hub.endpoint, "--json", "--no-pack"])
        .env("HF_HOME", dir.join("k3-loopback-hf"));
    let k3_secs = seconds(download)?;
    let mut curl = Command::new("curl");
    curl.args(["-sSfL", "-o"]).arg(&target).arg(format!("{}/{REPO}/resolve/{COMMIT}/big.bin", hub.endpoint));
    let t = Instant::now();
    let curl_secs = seconds(curl)?;
    let mut sync = Command::new("sync");
    sync.arg(&target);
    seconds(sync)?;
    let curl_sync_secs = t.elapsed().as_secs_f64();
    let _ = std::fs::remove_dir_all(&store);
    let _ = std::fs::remove_file(&target);
    let mb = (mib << 20) as f64 / 1e6;
    Ok(format!(
        "{mib} MiB: k3 download {:.0} MB/s ({k3_secs:.2} s: SHA-256 while writing, durable per 64 MiB) · curl {:.0} MB/s ({curl_secs:.2} s, in the page cache) · curl + sync {:.0} MB/s ({curl_sync_secs:.2} s) · k3 / (curl + sync) {:.2}",
        mb / k3_secs,
        mb / curl_secs,
        mb / curl_sync_secs,
        curl_sync_secs / k3_secs
    ))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(k3) = flag(&args, "--k3").map(PathBuf::from) else {
        eprintln!("usage: loopback_download --k3 PATH [--mib N] [--dir FOLDER]");
        std::process::exit(2);
    };
    let mib = flag(&args, "--mib").and_then(|v| v.parse().ok()).unwrap_or(1024usize);
    let dir = flag(&args, "--dir").map(PathBuf::from).unwrap_or_else(std::env::temp_dir);
    let file = HubFile {
        path: "big.bin".into(),
        bytes: Bytes::from(k3_tests::fake_hub::noise(mib << 20, 0x9e37_79b9_7f4a_7c15)),
        lfs: true,
    };
    let hub = FakeHub::start(vec![HubRepo { id: REPO.into(), commit: COMMIT.into(), files: vec![file] }], COMMIT);
    for r in 0..2 {
        match round(&k3, &hub, &dir, mib) {
            Ok(line) => println!("round {r}: {line}"),
            Err(e) => {
                eprintln!("loopback_download: {e}");
                std::process::exit(1);
            }
        }
    }
}
