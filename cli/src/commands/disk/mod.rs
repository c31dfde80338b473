//! `k3 bench disk`: the drive read as the engine reads experts ([`expert`], the default),
//! or swept over request size × requests in flight ([`sweep`], `--sweep`); the files both
//! read; and the memory flags that hand the sweep's best point to the engine
//! (`--read-pattern`, `--read-size`, `--read-depth`).

mod expert;
mod expert_report;
mod flags;
mod sweep;

use k3_io::ReadPattern;
use k3_store::SavedPattern;

use super::{input_error, Failure};
use crate::args::{BenchDiskArgs, MemoryArgs};
pub use flags::shards;
use flags::size_flag;

pub fn disk(args: BenchDiskArgs) -> Result<(), Failure> {
    if args.sweep {
        sweep::sweep(args)
    } else {
        expert::expert(args)
    }
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
