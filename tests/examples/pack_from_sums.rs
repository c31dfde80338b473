//! A measurement, not a test (issue 44 item 1): `k3 pack` of a checkpoint whose shards carry
//! the download's segment sums against the same pack without them, the page cache dropped
//! before each (when this runs as root), in alternating order; the medians of the rounds
//! are the figures.
//!
//! `cargo run --release -p k3-tests --example pack_from_sums -- --k3 target/release/k3
//!  --model DIR [--rounds 3]`
//!
//! The sums are made first as the download makes them (`k3_io::segment_sums` over each
//! shard's bytes, the sidecar under `DIR/.k3-desktop/crc32c/`), then moved aside for the
//! runs without them.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use k3_io::provenance::VerifiedRecord;
use k3_io::segment_sums::{sidecar_path, SegmentCrcs, SegmentPlan};
use k3_plan::stats::median;

fn flag(args: &[String], name: &str) -> Option<String> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned()
}

/// Writes the sidecar of every shard in `model`, as the download does.
fn write_sums(model: &Path) -> Result<usize, String> {
    let mut shards = 0;
    for entry in std::fs::read_dir(model).map_err(|e| e.to_string())? {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.extension().is_none_or(|x| x != "safetensors") {
            continue;
        }
        let plan = SegmentPlan::of_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut sums = SegmentCrcs::new(Arc::new(plan));
        let mut file = std::fs::File::open(&path).map_err(|e| e.to_string())?;
        let mut buf = vec![0u8; 8 << 20];
        loop {
            let n = std::io::Read::read(&mut file, &mut buf).map_err(|e| e.to_string())?;
            if n == 0 {
                break;
            }
            sums.update(&buf[..n]);
        }
        let record = VerifiedRecord::of(&path).map_err(|e| e.to_string())?;
        let sidecar = sums.finish(record).ok_or("a shard was not read whole")?;
        let name = path.file_name().and_then(|n| n.to_str()).ok_or("a shard name is not UTF-8")?;
        let at = sidecar_path(model, name);
        std::fs::create_dir_all(at.parent().ok_or("no folder")?).map_err(|e| e.to_string())?;
        std::fs::write(&at, sidecar.to_json().map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
        shards += 1;
    }
    Ok(shards)
}

/// Drops the page cache (root only); says whether it could.
fn drop_caches() -> bool {
    let _ = Command::new("sync").status();
    std::fs::write("/proc/sys/vm/drop_caches", "3").is_ok()
}

/// One `k3 pack` into `out`: seconds, experts named from sums, experts read.
fn pack(k3: &Path, model: &Path, out: &Path) -> Result<(f64, u64, u64), String> {
    let _ = std::fs::remove_dir_all(out);
    let start = Instant::now();
    let done = Command::new(k3)
        .args(["pack", "--json", "--model"])
        .arg(model)
        .arg("--out")
        .arg(out)
        .output()
        .map_err(|e| e.to_string())?;
    let secs = start.elapsed().as_secs_f64();
    if !done.status.success() {
        return Err(String::from_utf8_lossy(&done.stderr).into_owned());
    }
    let text = String::from_utf8_lossy(&done.stdout);
    let v: serde_json::Value = serde_json::from_str(text.lines().last().unwrap_or("{}")).map_err(|e| e.to_string())?;
    Ok((secs, v["experts_from_download"].as_u64().unwrap_or(0), v["experts_read"].as_u64().unwrap_or(0)))
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let k3 = PathBuf::from(flag(&args, "--k3").ok_or("--k3 BINARY")?);
    let model = PathBuf::from(flag(&args, "--model").ok_or("--model DIR")?);
    let rounds: usize = flag(&args, "--rounds").and_then(|r| r.parse().ok()).unwrap_or(3);
    let made = Instant::now();
    let shards = write_sums(&model)?;
    println!("segment sums of {shards} shards written in {:.1} s", made.elapsed().as_secs_f64());
    let (sums_dir, aside) = (model.join(".k3-desktop/crc32c"), model.join(".k3-desktop/crc32c-aside"));
    let (mut with, mut without) = (Vec::new(), Vec::new());
    let mut cold = true;
    for round in 0..rounds {
        for with_sums in if round % 2 == 0 { [true, false] } else { [false, true] } {
            if !with_sums {
                std::fs::rename(&sums_dir, &aside).map_err(|e| e.to_string())?;
            }
            cold &= drop_caches();
            let result = pack(&k3, &model, &model.join("pack-measured"));
            if !with_sums {
                std::fs::rename(&aside, &sums_dir).map_err(|e| e.to_string())?;
            }
            let (secs, named, read) = result?;
            println!("round {round}: with sums {with_sums}: {secs:.2} s, {named} experts named, {read} read");
            if with_sums { &mut with } else { &mut without }.push(secs);
        }
    }
    let (a, b) = (median(&with), median(&without));
    let cache = if cold { "page cache dropped before each" } else { "warm page cache (not root)" };
    println!(
        "k3 pack, median of {rounds}: with the download's sums {a:.2} s, without {b:.2} s ({:.1}× faster; {cache})",
        b / a
    );
    Ok(())
}
