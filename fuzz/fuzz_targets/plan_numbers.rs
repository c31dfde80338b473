//! The planner on any numbers (`k3_plan::plan_memory`): footprints no checkpoint on disk
//! has yet (the wasm UI plans before the download), budgets and machines of any size.
//!
//! Input: u64 LE words: trunk budget, cache budget, MemAvailable, MemTotal, cgroup limit,
//! cgroup usage, context length, I/O threads, flags (1 packed trunk, 2 `auto`, 4 refuse
//! beyond available, 8 cgroup), expert bytes, experts in all, top-k, MoE layers, resident
//! bytes, head bytes, state bytes, KV bytes per position, scratch bytes, then one word per
//! layer's trunk bytes (at most 256 layers).
//! Invariant: a returned plan keeps `k3_plan`'s promises
//! (`k3_fuzz::assert_plan_keeps_its_promises`): never over its budget, parts that add up.
#![no_main]

use k3_fuzz::{assert_plan_keeps_its_promises, u64_at};
use k3_plan::{plan_memory, Budget, BudgetChoice, CgroupMemory, Footprint, MachineMemory, MemoryRequest};
use libfuzzer_sys::fuzz_target;

const FIXED_WORDS: usize = 18;

fuzz_target!(|data: &[u8]| {
    let word = |i: usize| u64_at(data, 8 * i);
    let n_layers = (data.len() / 8).saturating_sub(FIXED_WORDS).min(256);
    let fp = Footprint {
        layer_trunk_bytes: (0..n_layers).map(|l| word(FIXED_WORDS + l)).collect(),
        expert_bytes: word(9),
        n_experts_total: word(10),
        top_k: word(11),
        moe_layers: word(12),
        resident_bytes: word(13),
        head_bytes: word(14),
        state_bytes: word(15),
        kv_bytes_per_position: word(16),
        scratch_bytes: word(17),
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
});
