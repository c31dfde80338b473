//! The planner on any numbers (`k3_plan::plan_memory`): footprints no checkpoint on disk
//! has yet (the wasm UI plans before the download), budgets and machines of any size.
//!
//! Input: u64 LE words: trunk budget, cache budget, MemAvailable, MemTotal, cgroup limit,
//! cgroup usage, context length, I/O threads, flags (1 packed trunk, 2 `auto`, 4 refuse
//! beyond available, 8 cgroup), expert bytes, experts in all, top-k, MoE layers, resident
//! bytes, head bytes, state bytes, KV bytes per position, scratch bytes, embedding bytes,
//! vocabulary rows (below 2^20), then one word per
//! layer's trunk bytes (at most 256 layers). Flag 16 gives every layer pieces: its
//! largest matrix a third of it, its small tensors a fiftieth.
//! Invariant: a returned plan keeps `k3_plan`'s promises
//! (`k3_fuzz::assert_plan_keeps_its_promises`): never over its budget, parts that add up.
//! With at most [`COST_LAYERS`] layers and a fixed budget, the cost planner runs too, on
//! rates taken from the flags' high bits and a trunk storing the odd layers at 2/3 of their
//! bytes (`k3_fuzz::assert_cost_plan_keeps_its_promises`).
#![no_main]

use k3_fuzz::{assert_batch_keeps_its_promises, assert_cost_plan_keeps_its_promises, assert_plan_keeps_its_promises, u64_at};
use k3_plan::{
    plan_by_cost, plan_memory, Budget, BudgetChoice, CgroupMemory, CodedLayers, ComputeRates, CostRates, DiskRates,
    Footprint, LayerPieces, MachineMemory, MemoryRequest, PlanRequest,
};
use libfuzzer_sys::fuzz_target;

const FIXED_WORDS: usize = 20;

/// The most layers the cost planner is fuzzed with (its search grows with distinct sizes).
const COST_LAYERS: usize = 4;

/// A rate from 8 bits of the flags: 1 MB/s … ~256 GB/s.
fn rate(bits: u64) -> f64 {
    1e6 * 2f64.powi((bits & 0xff) as i32 % 19)
}

fuzz_target!(|data: &[u8]| {
    let word = |i: usize| u64_at(data, 8 * i);
    let n_layers = (data.len() / 8).saturating_sub(FIXED_WORDS).min(256);
    let layer = |l: usize| word(FIXED_WORDS + l);
    let pieces = |l: usize| LayerPieces { largest_piece: layer(l) / 3, eager_bytes: layer(l) / 50 };
    let fp = Footprint {
        layer_trunk_bytes: (0..n_layers).map(|l| word(FIXED_WORDS + l)).collect(),
        expert_bytes: word(9),
        n_experts_total: word(10),
        top_k: word(11),
        moe_layers: word(12),
        resident_bytes: word(13),
        head_bytes: word(14),
        embed_bytes: word(18),
        vocab_rows: word(19) % (1 << 20),
        state_bytes: word(15),
        kv_bytes_per_position: word(16),
        scratch_bytes: word(17),
        layer_pieces: if word(8) & 16 != 0 { (0..n_layers).map(pieces).collect() } else { Vec::new() },
    };
    let flags = word(8);
    let choice = if flags & 2 != 0 {
        BudgetChoice::Auto
    } else {
        BudgetChoice::Fixed(Budget { trunk_bytes: word(0), cache_bytes: word(1) })
    };
    let cgroup = (flags & 8 != 0).then(|| CgroupMemory { limit_bytes: word(4), usage_bytes: word(5) });
    let machine = MachineMemory { total_bytes: word(3), available_bytes: word(2), cgroup };
    let req = MemoryRequest { choice, streamed_trunk: flags & 1 != 0, context_length: word(6), io_threads: word(7) };
    let refuse = flags & 4 != 0;
    if let Ok(p) = plan_memory(&fp, &req, machine, refuse) {
        assert_plan_keeps_its_promises(&fp, &req, machine, refuse, &p);
    }
    assert_batch_keeps_its_promises(&fp, &req, machine);
    let BudgetChoice::Fixed(budget) = choice else { return };
    if n_layers > COST_LAYERS || flags & 1 == 0 {
        return;
    }
    let stored: Vec<u64> =
        fp.layer_trunk_bytes.iter().enumerate().map(|(l, &b)| if l % 2 == 1 { b / 3 * 2 } else { b }).collect();
    let staging_bytes = 128 << 20;
    let rates = CostRates {
        disk: DiskRates { trunk_bytes_per_second: rate(flags >> 8), expert_bytes_per_second: rate(flags >> 16) },
        compute: ComputeRates { bf16_bytes_per_second: rate(flags >> 24), expert_bytes_per_second: rate(flags >> 32) },
        decode_bytes_per_second: rate(flags >> 40),
    };
    let request =
        PlanRequest { budget, streamed_trunk: true, context_length: req.context_length, io_threads: req.io_threads };
    let coded = CodedLayers { stored_bytes: &stored, staging_bytes };
    if let Ok(c) = plan_by_cost(&fp, &request, &rates, Some(coded)) {
        assert_cost_plan_keeps_its_promises(&fp, budget, (&stored, staging_bytes), &c.plan);
    }
});
