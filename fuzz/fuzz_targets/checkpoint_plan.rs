//! `config.json` + shard headers + `model.safetensors.index.json` → memory plan, the path
//! `k3 plan` and `Engine::load` take (`ModelConfig::from_json`, `TensorIndex::from_heads`,
//! `Model::validate`, `stream::footprint`, `stream::plan::make_plan`), on bytes alone.
//!
//! Input: sections (see `k3_fuzz::sections`): request parameters, then the checkpoint
//! (`k3_fuzz::Checkpoint`). Parameters: trunk budget, cache budget, MemAvailable, MemTotal,
//! context length (u64 LE each), I/O threads (u8), flags (u8: 1 packed trunk, 2 `auto`,
//! 4 refuse beyond available, 8 cgroup), cgroup limit and usage (u64 LE).
//! Invariants: the footprint accounts for no more bytes than the headers hold and has one
//! entry per layer; a returned plan keeps `k3_plan`'s promises
//! (`k3_fuzz::assert_plan_keeps_its_promises`): never over its budget.
#![no_main]

use k3_engine::advanced::model::Model;
use k3_engine::options::MemoryOptions;
use k3_engine::advanced::stream::footprint::footprint;
use k3_engine::advanced::stream::plan::make_plan;
use k3_fuzz::{assert_plan_keeps_its_promises, sections, u64_at, Checkpoint};
use k3_plan::{Budget, BudgetChoice, CgroupMemory, MachineMemory, MemoryRequest};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let parts = sections(data);
    let Some((params, rest)) = parts.split_first() else { return };
    let Some(ckpt) = Checkpoint::from_sections(rest) else { return };
    let Ok((cfg, index)) = ckpt.open() else { return };
    if Model::validate(&cfg, &index).is_err() {
        return;
    }
    let Ok(fp) = footprint(&cfg, &index) else { return };
    assert_eq!(fp.layer_trunk_bytes.len(), cfg.n_layers);
    let held: u128 = index.tensors().map(|t| u128::from(t.nbytes)).sum();
    let counted: u128 = fp.layer_trunk_bytes.iter().map(|&b| u128::from(b)).sum::<u128>()
        + u128::from(fp.resident_bytes)
        + u128::from(fp.expert_bytes) * u128::from(fp.n_experts_total.min(1));
    assert!(counted <= held, "the footprint counts {counted} bytes, the headers hold {held}");

    let flags = params.get(41).copied().unwrap_or(0);
    let choice = if flags & 2 != 0 {
        BudgetChoice::Auto
    } else {
        BudgetChoice::Fixed(Budget { trunk_bytes: u64_at(params, 0), cache_bytes: u64_at(params, 8) })
    };
    let cgroup =
        (flags & 8 != 0).then(|| CgroupMemory { limit_bytes: u64_at(params, 42), usage_bytes: u64_at(params, 50) });
    let machine = MachineMemory { total_bytes: u64_at(params, 24), available_bytes: u64_at(params, 16), cgroup };
    let opts = MemoryOptions {
        context_length: (u64_at(params, 32) % 40_000) as usize,
        io_threads: usize::from(params.get(40).copied().unwrap_or(4)),
        check_available: flags & 4 != 0,
        ..MemoryOptions::resident()
    };
    let streamed = flags & 1 != 0;
    let Ok(p) = make_plan(&fp, choice, (streamed, None), &opts, machine) else { return };
    let req = MemoryRequest {
        choice,
        streamed_trunk: streamed,
        context_length: opts.context_length as u64,
        io_threads: opts.io_threads as u64,
    };
    assert_plan_keeps_its_promises(&fp, &req, machine, opts.check_available, &p);
});
