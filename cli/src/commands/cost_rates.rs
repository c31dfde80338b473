//! `--residency cost`: the rates the cost planner (`k3_plan::plan_by_cost`) weighs, measured
//! on this machine just before planning.
//!
//! Owns: [`residency_rule`] (the flag → `ResidencyRule`) and the measurement: the drive's
//! rate for trunk-layer windows read one after another and for expert-sized windows at
//! random offsets, both through the engine's reader at its read pattern over `--trunk`'s
//! `trunk.bin` (or `--residency-disk-gbps` for both); the kernels' BF16 and expert rates
//! on every core (`bench::decode_rates`); the trunk decoder's rate on every core
//! (`bench::codec_rates`). Each figure is printed on stderr, so a plan can be reproduced.
//! Must not: guess a rate: a drive figure comes from a measurement or the flag.

use std::time::Duration;

use k3_engine::measure_decode_rate;
use k3_engine::measure_decode_rates;
use k3_io::ReadPattern;
use k3_plan::{CostRates, DiskRates, ResidencyRule};
use k3_store::{measure_windows, Order, WindowRequest};

use super::{input_error, runtime_error, Failure};
use crate::args::MemoryArgs;

/// Bytes of trunk windows read to time the drive, and the window (a K3 layer is ≥ 0.84 GB).
const TRUNK_BYTES: u64 = 1_500_000_000;
const TRUNK_WINDOW: usize = 512 << 20;
/// Bytes of expert-sized windows read at random offsets, and the window (a K3 expert).
const EXPERT_BYTES: u64 = 400_000_000;
const EXPERT_WINDOW: usize = 17_547_264;
/// Clock time of the kernel measurement.
const KERNEL_BUDGET: Duration = Duration::from_millis(1200);

/// The residency rule `--residency` names, measuring the cost rule's rates once.
pub fn residency_rule(args: &MemoryArgs, pattern: ReadPattern) -> Result<ResidencyRule, Failure> {
    match args.residency.as_str() {
        "prefix" => Ok(ResidencyRule::Prefix),
        "cost" => match args.measured_rates {
            Some(rates) => Ok(ResidencyRule::ByCost(rates)),
            None => Ok(ResidencyRule::ByCost(measure(args, pattern)?)),
        },
        other => Err(input_error(format!("--residency {other}: use prefix or cost"))),
    }
}

/// The cost rule's rates on this machine (see the module header).
pub fn measure(args: &MemoryArgs, pattern: ReadPattern) -> Result<CostRates, Failure> {
    let disk = match (args.residency_disk_gbps, &args.trunk) {
        (Some(gbps), _) if gbps.is_finite() && gbps > 0.0 => DiskRates::same(gbps * 1e9),
        (Some(gbps), _) => return Err(input_error(format!("--residency-disk-gbps {gbps}: give a positive GB/s"))),
        (None, Some(trunk)) => measure_drive(&trunk.join("trunk.bin"), pattern)?,
        (None, None) => {
            return Err(input_error(
                "--residency cost weighs the drive: give --trunk DIR (measured) or --residency-disk-gbps X".into(),
            ))
        }
    };
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let kernels = measure_decode_rates(threads, KERNEL_BUDGET)?;
    let decode_bytes_per_second = measure_decode_rate(threads)?;
    let rates = CostRates { disk, compute: kernels.rates, decode_bytes_per_second };
    eprintln!(
        "residency by cost: drive {:.2} GB/s (trunk windows), {:.2} GB/s (expert windows); BF16 kernels {:.2} GB/s, \
         expert kernels {:.2} GB/s, trunk decoder {:.2} GB/s, on {threads} threads",
        disk.trunk_bytes_per_second / 1e9,
        disk.expert_bytes_per_second / 1e9,
        rates.compute.bf16_bytes_per_second / 1e9,
        rates.compute.expert_bytes_per_second / 1e9,
        decode_bytes_per_second / 1e9
    );
    Ok(rates)
}

/// Trunk-layer windows in order and expert windows at random offsets over `bin`.
fn measure_drive(bin: &std::path::Path, pattern: ReadPattern) -> Result<DiskRates, Failure> {
    let len = std::fs::metadata(bin).map_err(|e| input_error(format!("{}: {e}", bin.display())))?.len();
    let windows = |window_bytes: usize, order, bytes| {
        let window_bytes = window_bytes.min(len as usize).max(4096);
        measure_windows(&WindowRequest { files: vec![bin.to_path_buf()], window_bytes, order, bytes, pattern })
    };
    let trunk = windows(TRUNK_WINDOW, Order::Sequential, TRUNK_BYTES)?;
    let experts = windows(EXPERT_WINDOW, Order::Random, EXPERT_BYTES)?;
    let (Some(trunk), Some(experts)) = (trunk, experts) else {
        return Err(runtime_error(format!("{}: too small to time the drive on", bin.display())));
    };
    Ok(DiskRates { trunk_bytes_per_second: trunk.gbps * 1e9, expert_bytes_per_second: experts.gbps * 1e9 })
}
