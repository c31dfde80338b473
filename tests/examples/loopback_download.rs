//! A measurement, not a test (issue 44 item 1): `k3 download` of one large LFS file from the
//! fake hub on loopback against `curl` + `sync` of the same URL from the same server, written
//! to the same folder — quiet, then under load (`--load N` threads spinning on the CPU for
//! the whole of both transfers), in one run. Each round alternates which goes first; the
//! medians of the rounds are the figures.
//!
//! `cargo run --release -p k3-tests --example loopback_download -- --k3 target/release/k3
//!  [--mib 1024] [--rounds 5] [--load 2] [--rate MBPS] [--dir FOLDER] [--k3-args "--sync-size 512MiB"]`
//!
//! `--rate` caps each of the hub's transfers at that many MB/s, as a line would; without it
//! loopback is as fast as the two processes' CPU, and on a small machine `k3 download`
//! then spends its SHA-256 (which `curl` does not compute) out of the same cores.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use k3_plan::stats::median;
use k3_tests::fake_hub::{FakeHub, HubFile, HubRepo};

const REPO: &str = "moonshotai/Kimi-K3-tiny";
const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

fn flag(args: &[String], name: &str) -> Option<String> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned()
}

fn run(mut c: Command) -> Result<(), String> {
    let out = c.output().map_err(|e| format!("{c:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{c:?}: {}", String::from_utf8_lossy(&out.stderr)));
    }
    Ok(())
}

/// What one round compares.
struct Setup<'a> {
    k3: &'a Path,
    hub: &'a FakeHub,
    dir: &'a Path,
    extra: &'a [String],
}

/// Seconds for `k3 download` of the file into a fresh store (durable and verified when it
/// exits).
fn k3_seconds(s: &Setup) -> Result<f64, String> {
    let store = s.dir.join(format!("k3-loopback-store-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&store);
    let mut download = Command::new(s.k3);
    download
        .args(["download", "--repo", REPO, "--to"])
        .arg(&store)
        .args(["--endpoint", &s.hub.endpoint, "--json", "--no-pack"])
        .args(s.extra)
        .env("HF_HOME", s.dir.join("k3-loopback-hf"));
    let t = Instant::now();
    run(download)?;
    let secs = t.elapsed().as_secs_f64();
    let _ = std::fs::remove_dir_all(&store);
    Ok(secs)
}

/// Seconds for `curl` of the file and `sync` of it (durable, not verified).
fn curl_sync_seconds(s: &Setup) -> Result<f64, String> {
    let target = s.dir.join(format!("k3-loopback-curl-{}", std::process::id()));
    let mut curl = Command::new("curl");
    curl.args(["-sSfL", "-o"]).arg(&target).arg(format!("{}/{REPO}/resolve/{COMMIT}/big.bin", s.hub.endpoint));
    let mut sync = Command::new("sync");
    sync.arg(&target);
    let t = Instant::now();
    run(curl)?;
    run(sync)?;
    let secs = t.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(&target);
    Ok(secs)
}

/// `threads` threads spinning until the guard is dropped.
struct Load(Arc<AtomicBool>, Vec<std::thread::JoinHandle<()>>);

impl Load {
    fn start(threads: usize) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let handles = (0..threads)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut x = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                    }
                })
            })
            .collect();
        Load(stop, handles)
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
        for h in self.1.drain(..) {
            let _ = h.join();
        }
    }
}

/// `rounds` rounds (k3 first in even rounds, curl first in odd ones) under `load` spinning
/// threads; the median MB/s of each and the median of the per-round ratios.
fn phase(s: &Setup, mib: usize, rounds: usize, load: usize) -> Result<String, String> {
    let _load = Load::start(load);
    let mb = (mib << 20) as f64 / 1e6;
    let (mut k3, mut curl, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..rounds {
        let (k, c) = if r % 2 == 0 {
            let k = k3_seconds(s)?;
            (k, curl_sync_seconds(s)?)
        } else {
            let c = curl_sync_seconds(s)?;
            (k3_seconds(s)?, c)
        };
        println!(
            "  round {r} ({} first): k3 download {:.0} MB/s ({k:.2} s) · curl + sync {:.0} MB/s ({c:.2} s) · ratio {:.2}",
            if r % 2 == 0 { "k3" } else { "curl" },
            mb / k,
            mb / c,
            c / k
        );
        k3.push(mb / k);
        curl.push(mb / c);
        ratio.push(c / k);
    }
    Ok(format!(
        "{mib} MiB, {load} spinning threads, median of {rounds}: k3 download {:.0} MB/s · curl + sync {:.0} MB/s · k3 / (curl + sync) {:.2}",
        median(&k3),
        median(&curl),
        median(&ratio)
    ))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(k3) = flag(&args, "--k3").map(PathBuf::from) else {
        eprintln!(
            "usage: loopback_download --k3 PATH [--mib N] [--rounds N] [--load THREADS] [--rate MBPS] [--dir FOLDER] [--k3-args ARGS]"
        );
        std::process::exit(2);
    };
    let number = |name: &str, default: usize| flag(&args, name).and_then(|v| v.parse().ok()).unwrap_or(default);
    let (mib, rounds, load) = (number("--mib", 1024), number("--rounds", 5).max(1), number("--load", 2));
    let dir = flag(&args, "--dir").map(PathBuf::from).unwrap_or_else(std::env::temp_dir);
    let extra: Vec<String> =
        flag(&args, "--k3-args").map(|a| a.split_whitespace().map(String::from).collect()).unwrap_or_default();
    let file = HubFile {
        path: "big.bin".into(),
        bytes: Bytes::from(k3_tests::fake_hub::noise(mib << 20, 0x9e37_79b9_7f4a_7c15)),
        lfs: true,
    };
    let hub = FakeHub::start(vec![HubRepo { id: REPO.into(), commit: COMMIT.into(), files: vec![file] }], COMMIT);
    let rate: Option<f64> = flag(&args, "--rate").and_then(|v| v.parse().ok());
    hub.set_rate(rate.map(|mb| (mb * 1e6) as u64));
    // The hub hashes each file once, on the first listing: counted against neither.
    let mut warm = Command::new("curl");
    warm.args(["-sSf", "-o", "/dev/null"]).arg(format!("{}/api/models/{REPO}/tree/{COMMIT}", hub.endpoint));
    let setup = Setup { k3: &k3, hub: &hub, dir: &dir, extra: &extra };
    let result = run(warm).and_then(|()| {
        println!("quiet:");
        let quiet = phase(&setup, mib, rounds, 0)?;
        println!("under load:");
        let loaded = phase(&setup, mib, rounds, load)?;
        Ok((quiet, loaded))
    });
    match result {
        Ok((quiet, loaded)) => println!("quiet: {quiet}\nunder load: {loaded}"),
        Err(e) => {
            eprintln!("loopback_download: {e}");
            std::process::exit(1);
        }
    }
}
