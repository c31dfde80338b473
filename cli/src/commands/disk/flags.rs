//! The flags `k3 bench disk` shares between its expert-read and sweep modes: the files to
//! read (shards, files, or a scratch file written in a folder), sizes and number lists.
//!
//! Owns: `targets`, [`shards`], `size_flag`, `csv_list`.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use k3_plan::parse_size;
use k3_store::{DiskBenchError, ScratchFile};

use crate::args::BenchDiskArgs;
use crate::commands::{input_error, runtime_error, Failure};

/// The files to read, and the scratch file that backs them when a folder was given.
/// `scratch_default` sizes a scratch file when `--scratch-size` is not given; `cancel` stops
/// its writing.
pub(super) fn targets(
    args: &BenchDiskArgs,
    scratch_default: &str,
    cancel: &AtomicBool,
) -> Result<(Vec<PathBuf>, Vec<ScratchFile>), Failure> {
    let mut files = Vec::new();
    let mut scratch = Vec::new();
    if let Some(dir) = &args.model {
        files.extend(shards(dir)?);
    }
    for p in &args.paths {
        if p.is_dir() {
            let bytes = size_flag("--scratch-size", args.scratch_size.as_deref().unwrap_or(scratch_default))?;
            let s = ScratchFile::create(p, bytes, cancel).map_err(|e| match e {
                DiskBenchError::Cancelled => runtime_error("bench disk: cancelled".into()),
                e @ DiskBenchError::NoSpace { .. } => input_error(format!("--scratch-size: {e}")),
                e => runtime_error(format!("writing a scratch file in {}: {e}", p.display())),
            })?;
            files.push(s.path().to_path_buf());
            scratch.push(s);
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

pub(super) fn size_flag(flag: &str, text: &str) -> Result<u64, Failure> {
    parse_size(text).map_err(|e| input_error(format!("{flag}: {e}")))
}

pub(super) fn csv_list(flag: &str, csv: &str) -> Result<Vec<usize>, Failure> {
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
