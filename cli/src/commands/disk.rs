//! `k3 bench disk`: the drive's O_DIRECT bandwidth over request size × requests in flight,
//! and the memory flags that hand its best point to the engine (`--read-pattern`,
//! `--read-size`, `--read-depth`).

use std::path::{Path, PathBuf};

use k3_engine::io::ReadPattern;
use k3_plan::parse_size;
use k3_store::{sweep, DiskSweep, SavedPattern, ScratchFile, SweepRequest};
use serde_json::json;

use super::{input_error, runtime_error, Failure};
use crate::args::{BenchDiskArgs, MemoryArgs};

pub fn disk(args: BenchDiskArgs) -> Result<(), Failure> {
    let bytes_per_point = size_flag("--bytes-per-point", &args.bytes_per_point)?;
    let (files, _scratch) = targets(&args)?;
    let mut req = SweepRequest::full(files, bytes_per_point);
    if let Some(csv) = &args.sizes {
        req.sizes = csv_list("--sizes", csv)?.into_iter().map(|m| m * k3_store::diskbench::MIB).collect();
    }
    if let Some(csv) = &args.depths {
        req.depths = csv_list("--depths", csv)?;
    }
    let result = sweep(&req)?;
    let Some(best) = result.best() else {
        return Err(input_error(
            "bench disk: no file is at least two requests long; give larger files or a folder".into(),
        ));
    };
    if let Some(path) = &args.save {
        let saved = SavedPattern {
            request_bytes: best.request_bytes,
            depth: best.depth,
            gbps: best.gbps,
            direct: result.direct,
            measured_on: result.files.clone(),
        };
        let text = serde_json::to_string_pretty(&saved).map_err(|e| runtime_error(e.to_string()))?;
        std::fs::write(path, text).map_err(|e| runtime_error(format!("writing {}: {e}", path.display())))?;
    }
    if args.json {
        outln!("{}", json!({ "points": result.points, "best": best, "direct": result.direct, "files": result.files }));
    } else {
        print_table(&result);
    }
    Ok(())
}

fn print_table(result: &DiskSweep) {
    if !result.direct {
        outln!("note: this file system refused O_DIRECT; the figures include the page cache, not the drive's");
    }
    for p in &result.points {
        let access = match p.access {
            k3_store::Access::Random => "random",
            k3_store::Access::Sequential => "sequential",
        };
        outln!("{access:>10} {:>3} MiB × {:>2} in flight: {:>6.2} GB/s", p.request_bytes >> 20, p.depth, p.gbps);
    }
    if let Some(b) = result.best() {
        outln!("best: {:?} {} MiB × {} in flight = {:.2} GB/s", b.access, b.request_bytes >> 20, b.depth, b.gbps);
    }
}

/// The files to read, and the scratch file that backs them when a folder was given.
fn targets(args: &BenchDiskArgs) -> Result<(Vec<PathBuf>, Option<ScratchFile>), Failure> {
    let mut files = Vec::new();
    let mut scratch = None;
    if let Some(dir) = &args.model {
        files.extend(shards(dir)?);
    }
    for p in &args.paths {
        if p.is_dir() {
            let bytes = size_flag("--scratch-size", &args.scratch_size)?;
            let s = ScratchFile::create(p, bytes)
                .map_err(|e| runtime_error(format!("writing a scratch file in {}: {e}", p.display())))?;
            files.push(s.path().to_path_buf());
            scratch = Some(s);
        } else if p.is_file() {
            files.push(p.clone());
        } else {
            return Err(input_error(format!("--path {}: no such file or folder", p.display())));
        }
    }
    if files.is_empty() {
        return Err(input_error("bench disk needs --model DIR or --path FILE|FOLDER".into()));
    }
    Ok((files, scratch))
}

/// The `*.safetensors` shards of a model folder.
pub fn shards(dir: &Path) -> Result<Vec<PathBuf>, Failure> {
    let entries = std::fs::read_dir(dir).map_err(|e| input_error(format!("--model {}: {e}", dir.display())))?;
    let mut out: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "safetensors"))
        .collect();
    out.sort();
    Ok(out)
}

fn size_flag(flag: &str, text: &str) -> Result<u64, Failure> {
    parse_size(text).map_err(|e| input_error(format!("{flag}: {e}")))
}

fn csv_list(flag: &str, csv: &str) -> Result<Vec<usize>, Failure> {
    csv.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| input_error(format!("{flag}: `{s}` is not a positive number")))
        })
        .collect()
}

/// The read pattern the memory flags ask for: a saved measurement, explicit values, or
/// the engine's default.
pub fn read_pattern(args: &MemoryArgs) -> Result<ReadPattern, Failure> {
    if let Some(path) = &args.read_pattern {
        let text = std::fs::read_to_string(path)
            .map_err(|e| input_error(format!("--read-pattern {}: {e}", path.display())))?;
        let saved: SavedPattern = serde_json::from_str(&text)
            .map_err(|e| input_error(format!("--read-pattern {}: not a saved pattern ({e})", path.display())))?;
        return Ok(saved.pattern());
    }
    let mut pattern = ReadPattern::DEFAULT;
    if let Some(size) = &args.read_size {
        pattern.request_bytes = size_flag("--read-size", size)? as usize;
    }
    if let Some(depth) = args.read_depth {
        pattern.depth = depth;
    }
    pattern.validate().map_err(Failure::from)?;
    Ok(pattern)
}
