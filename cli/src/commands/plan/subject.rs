//! What `k3 plan` plans for: the footprint (a checkpoint folder's headers, a footprint file
//! or the released K3), whether its trunk streams, a coded trunk's layout, and the memory
//! figures of this machine or the ones given.

use std::path::Path;

use k3_engine::tools::{footprint_of, open_packed_trunk, CodedLayout};
use k3_engine::ModelConfig;
use k3_io::format::TensorIndex;
use k3_io::sysinfo::machine_memory;
use k3_plan::{parse_size, released_footprint, Footprint, MachineMemory};
use k3_plan_wasm::dto::FootprintJson;

use crate::args::PlanArgs;
use crate::commands::{input_error, read_text, require_dir, Failure};

/// The largest footprint file read (a real one is a few kilobytes).
const MAX_FOOTPRINT_FILE_BYTES: u64 = 1 << 20;

/// The footprint to plan for, whether its trunk streams, and a coded trunk's layout: a
/// checkpoint folder's (with its packed trunk when --trunk is given), a footprint file's or
/// the released model's.
pub(super) fn subject(args: &PlanArgs) -> Result<(Footprint, bool, Option<CodedLayout>), Failure> {
    let Some(dir) = &args.model else {
        if args.memory.trunk.is_some() {
            return Err(input_error("--trunk needs --model (use --streamed-trunk with a footprint)".into()));
        }
        let fp = match &args.footprint {
            Some(file) => read_footprint(file)?,
            None => released_footprint(),
        };
        return Ok((fp, args.streamed_trunk, None));
    };
    require_dir("--model", dir)?;
    let cfg = ModelConfig::load(&dir.join("config.json"))?;
    let index = TensorIndex::open(dir)?;
    // The same checks as `run`: a checkpoint run refuses has no plan.
    let fp = footprint_of(&cfg, &index)?;
    let coded = match &args.memory.trunk {
        Some(trunk) => {
            require_dir("--trunk", trunk)?;
            open_packed_trunk(trunk, &cfg, &index)?.coded_layout()
        }
        None => None,
    };
    Ok((fp, args.memory.trunk.is_some(), coded))
}

fn read_footprint(file: &Path) -> Result<Footprint, Failure> {
    let text = read_text("--footprint", file)?;
    if text.len() as u64 > MAX_FOOTPRINT_FILE_BYTES {
        return Err(input_error(format!("--footprint {}: larger than 1 MiB", file.display())));
    }
    let fp: FootprintJson = serde_json::from_str(&text)
        .map_err(|e| input_error(format!("--footprint {}: not a footprint: {e}", file.display())))?;
    Ok(fp.into())
}

/// --mem-total/--mem-available when given (no cgroup), else this machine's figures.
pub(super) fn machine(args: &PlanArgs) -> Result<MachineMemory, Failure> {
    let (Some(total), Some(available)) = (&args.mem_total, &args.mem_available) else {
        return Ok(machine_memory());
    };
    let size = |flag: &str, text: &str| parse_size(text).map_err(|e| input_error(format!("{flag}: {e}")));
    Ok(MachineMemory::new(size("--mem-total", total)?, size("--mem-available", available)?))
}
