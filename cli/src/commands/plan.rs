//! `k3 plan`: the memory plan for a budget, computed from the checkpoint's headers alone.

use k3_engine::format::TensorIndex;
use k3_engine::io::sysinfo::machine_memory;
use k3_engine::stream::footprint::footprint;
use k3_engine::stream::plan::make_plan;
use k3_engine::ModelConfig;
use k3_plan::format_bytes;
use serde_json::json;

use super::{input_error, memory_options, require_dir, Failure};
use crate::args::PlanArgs;

pub fn plan(args: PlanArgs) -> Result<(), Failure> {
    require_dir("--model", &args.model)?;
    let cfg = ModelConfig::load(&args.model.join("config.json"))?;
    let index = TensorIndex::open(&args.model)?;
    // The same checks as `run`: a checkpoint run refuses has no plan.
    k3_engine::model::Model::validate(&cfg, &index)?;
    let mut opts = memory_options(&args.memory)?;
    opts.check_available = false;
    let Some(choice) = opts.budget else {
        return Err(input_error("give --preset P or --trunk-budget/--cache-budget".into()));
    };
    let fp = footprint(&cfg, &index)?;
    if let Some(dir) = &opts.trunk_dir {
        k3_engine::stream::trunk_manifest::open_packed_trunk(dir, &cfg, &index)?;
    }
    let streamed = opts.trunk_dir.is_some();
    let machine = machine_memory();
    let p = make_plan(&fp, choice, streamed, &opts, machine)?;
    let available = Some(machine.usable_available_bytes()).filter(|&a| a > 0);
    if args.json {
        let v = json!({
            "layers": cfg.n_layers,
            "pinned_layers": p.pinned_layers,
            "pinned_bytes": p.pinned_bytes,
            "ring_slots": p.ring_slots,
            "ring_slot_bytes": p.ring_slot_bytes,
            "trunk_bytes": p.trunk_bytes,
            "trunk_streamed": streamed,
            "cache_slots": p.cache_slots,
            "cache_slot_bytes": p.cache_slot_bytes,
            "cache_bytes": p.cache_bytes,
            "io_buffer_bytes": p.io_buffer_bytes,
            "fixed_bytes": p.fixed_bytes,
            "resident_model_bytes": fp.resident_bytes,
            "state_bytes": fp.state_bytes,
            "kv_bytes_per_position": fp.kv_bytes_per_position,
            "context_length": opts.context_length,
            "scratch_bytes": fp.scratch_bytes,
            "total_bytes": p.total_bytes,
            "mem_available_bytes": available,
            "fits": available.map(|a| p.total_bytes <= a),
        });
        outln!("{v}");
        return Ok(());
    }
    outln!(
        "trunk: {}/{} layers pinned ({}), ring {} × {}",
        p.pinned_layers,
        cfg.n_layers,
        format_bytes(p.pinned_bytes),
        p.ring_slots,
        format_bytes(p.ring_slot_bytes)
    );
    outln!(
        "expert cache: {} slots × {} = {}",
        p.cache_slots,
        format_bytes(p.cache_slot_bytes),
        format_bytes(p.cache_bytes)
    );
    outln!(
        "fixed: {} (embeddings + head {}, state {}, KV {} × {} positions, scratch {}), I/O buffers {}",
        format_bytes(p.fixed_bytes),
        format_bytes(fp.resident_bytes),
        format_bytes(fp.state_bytes),
        format_bytes(fp.kv_bytes_per_position),
        opts.context_length,
        format_bytes(fp.scratch_bytes),
        format_bytes(p.io_buffer_bytes)
    );
    match available {
        Some(a) => outln!(
            "total: {} of {} available — {}",
            format_bytes(p.total_bytes),
            format_bytes(a),
            if p.total_bytes <= a { "fits" } else { "does NOT fit" }
        ),
        None => outln!("total: {}", format_bytes(p.total_bytes)),
    }
    Ok(())
}
