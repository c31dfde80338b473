//! The released K3 footprint, derived from the catalogue (spec §6.4), against the spec's
//! published figures (§1 byte ledger, §6.2, §6.5, §6.6, §8, §11).

use k3_plan::released::{
    entry_bytes, expert_bytes, is_mla, layer_trunk_bytes, moe_layers, packed_trunk_bytes, table_bytes, DENSE_FFN,
    EXPERT, KDA, LAYERS, LAYER_VECTORS, MLA, MODEL_LEVEL, MOE_TRUNK, RELEASED_CHECKPOINT_BYTES,
    RELEASED_PACKED_TRUNK_BYTES, RELEASED_VISION_SHARD_BYTES,
};
use k3_plan::{expert_slot_bytes, plan, released_footprint, ring_slot_bytes_for, Budget, PlanRequest, Preset, GB};

fn preset_plan(preset: Preset) -> k3_plan::MemoryPlan {
    let budget = preset.fixed_budget().expect("a fixed preset");
    let req = PlanRequest { budget, streamed_trunk: true, context_length: 4096, io_threads: 4 };
    plan(&released_footprint(), &req).expect("the preset plans")
}

#[test]
fn the_layer_map_has_69_kda_and_24_mla_layers_ending_in_two_mla() {
    let mla: Vec<usize> = (0..LAYERS).filter(|&l| is_mla(l)).collect();
    assert_eq!(mla.len(), 24);
    assert_eq!(&mla[..3], &[3, 7, 11]);
    assert_eq!(&mla[22..], &[91, 92]);
    assert_eq!(moe_layers(), 92);
}

#[test]
fn the_catalogue_has_the_spec_tensor_counts() {
    // §6.4: layer 0 = 23 tensors; KDA MoE layer = 28 trunk; MLA MoE layer = 22 trunk;
    // 5,376 expert tensors per layer (6 per expert); model level = 5.
    assert_eq!(LAYER_VECTORS.len() + KDA.len() + DENSE_FFN.len(), 23);
    assert_eq!(LAYER_VECTORS.len() + KDA.len() + MOE_TRUNK.len(), 28);
    assert_eq!(LAYER_VECTORS.len() + MLA.len() + MOE_TRUNK.len(), 22);
    assert_eq!(EXPERT.len() * 896, 5376);
    assert_eq!(MODEL_LEVEL.len(), 5);
}

#[test]
fn per_layer_trunk_runs_match_the_spec_and_sum_to_108_81_gb() {
    assert_eq!(layer_trunk_bytes(0), 2_341_213_184, "layer 0: KDA + dense FFN");
    assert_eq!(layer_trunk_bytes(1), 1_267_744_256, "KDA + MoE");
    assert_eq!(layer_trunk_bytes(3), 844_335_616, "MLA + MoE");
    let fp = released_footprint();
    assert_eq!(fp.layer_trunk_bytes.len(), 93);
    assert_eq!(fp.trunk_total_bytes(), 108_811_877_376);
    assert_eq!(packed_trunk_bytes(&fp), RELEASED_PACKED_TRUNK_BYTES);
}

#[test]
fn experts_and_model_level_tensors_match_the_byte_ledger() {
    assert_eq!(expert_bytes(), 17_547_264);
    let fp = released_footprint();
    assert_eq!(fp.n_experts_total, 82_432);
    assert_eq!(fp.n_experts_total * fp.expert_bytes, 1_446_456_066_048);
    assert_eq!(fp.resident_bytes, 4_697_663_488, "embed + lm_head + 3 vectors: 4.70 GB");
    assert_eq!(fp.head_bytes, 163_840 * 7168 * 2);
    assert_eq!(fp.expert_requests_per_token(), 92 * 16);
    assert_eq!(fp.experts_per_layer(), 896);
}

#[test]
fn always_active_parameters_match_the_published_count() {
    let numel = |t: &k3_plan::released::Entry| t.shape.iter().product::<u64>();
    let layer = |l: usize| {
        let mixer = if is_mla(l) { MLA } else { KDA };
        let ffn = if l == 0 { DENSE_FFN } else { MOE_TRUNK };
        [LAYER_VECTORS, mixer, ffn].iter().flat_map(|t| t.iter()).map(numel).sum::<u64>()
    };
    let trunk: u64 = (0..LAYERS).map(layer).sum();
    let model: u64 = MODEL_LEVEL.iter().map(numel).sum();
    assert_eq!(trunk + model, 56_743_648_000);
}

#[test]
fn the_checkpoint_total_is_the_text_payload_plus_vision_plus_headers() {
    let fp = released_footprint();
    let text = fp.n_experts_total * fp.expert_bytes + fp.trunk_total_bytes() + fp.resident_bytes;
    let headers = RELEASED_CHECKPOINT_BYTES - text - RELEASED_VISION_SHARD_BYTES;
    // The 94 text shards' JSON headers: 497,052 tensors' entries, ~76 MB.
    assert_eq!(headers, 75_746_856);
}

#[test]
fn state_and_kv_follow_the_engine_layout() {
    let fp = released_footprint();
    assert_eq!(fp.kv_bytes_per_position, 55_296, "24 × (512 + 64) × 4: the latent and k_rope (§4.4)");
    // §1 quotes 626,245,632 B for 93 layer slots (the C engine); we reserve the 69 KDA layers.
    assert_eq!(fp.state_bytes * 93, 626_245_632 * 69);
    assert_eq!(
        fp.scratch_bytes,
        64 * 4 * (12 * 33_792 + 3 * 96 * 576 + 2 * 163_840),
        "one 64-token chunk: a dozen rows of the widest activation (the dense FFN's), the MLA \
         queries in latent space (f64) with their mixes, and two rows of logits"
    );
}

#[test]
fn the_prefill_chunk_grows_with_the_budget_and_its_activations_are_counted() {
    let fp = released_footprint();
    let per_token = fp.scratch_bytes / 64;
    let at = |trunk_gb: u64, cache_gb: u64| {
        let budget = Budget { trunk_bytes: trunk_gb * GB, cache_bytes: cache_gb * GB };
        let req = PlanRequest { budget, streamed_trunk: true, context_length: 4096, io_threads: 8 };
        let p = k3_plan::plan(&fp, &req).unwrap();
        assert_eq!(p.scratch_bytes, per_token * p.prefill_chunk, "{trunk_gb} GB + {cache_gb} GB: scratch of the chunk");
        assert!(p.fixed_bytes >= p.scratch_bytes);
        p.prefill_chunk
    };
    // A sixteenth of the budgets, at most 512 MiB, in multiples of 64 tokens from 64 to 512.
    assert_eq!(at(3, 1), 64, "4 GB: 250 MB of activations hold 69 tokens");
    assert_eq!(at(8, 8), 128, "16 GB: capped at 512 MiB, 149 tokens");
    assert_eq!(k3_plan::prefill_chunk(&fp, Budget { trunk_bytes: 1, cache_bytes: 1 }), 64, "never below 64");
    let small = k3_plan::Footprint { scratch_bytes: 64 * 1000, ..fp };
    let huge = Budget { trunk_bytes: 100 * GB, cache_bytes: 100 * GB };
    assert_eq!(k3_plan::prefill_chunk(&small, huge), 512, "never above 512");
}

#[test]
fn slot_sizes_are_the_planners_own() {
    // The C engine's slot is 17,555,456 B (two extra pages); ours widens by one.
    assert_eq!(expert_slot_bytes(expert_bytes()), 17_555_456 - 4096);
    // The C engine printed 2.37 GB for layer 0's ring slot (older binder sizing, §15).
    assert_eq!(ring_slot_bytes_for(layer_trunk_bytes(0)), 2_341_220_352);
    assert_eq!(entry_bytes(&EXPERT[0]), 5_505_024);
    assert_eq!(table_bytes(EXPERT), 17_547_264);
}

#[test]
fn laptop_and_workstation_split_as_published() {
    let laptop = preset_plan(Preset::Laptop);
    assert_eq!((laptop.pinned_layers, laptop.ring_slots, laptop.cache_slots), (0, 1, 56));
    assert_eq!(laptop.ring_slot_bytes, 2_341_220_352);
    let workstation = preset_plan(Preset::Workstation);
    assert_eq!(workstation.pinned_layers, 48, "published: 48/93 at a 60 GB trunk");
}

#[test]
fn server_pins_the_whole_trunk_where_the_c_engine_pinned_90() {
    // Published (C engine): 90/93 pinned (108.19 GB), ring 1 × 1.29 GB, 740 slots. The
    // whole trunk is 108.81 GB < 110 GB, and our planner pins every layer that fits with
    // no ring left over; the spec's own note expected 92/93 from the C planner's code.
    let server = preset_plan(Preset::Server);
    assert_eq!((server.pinned_layers, server.ring_slots, server.cache_slots), (93, 0, 740));
    assert_eq!(server.trunk_bytes, 108_811_877_376);
}
