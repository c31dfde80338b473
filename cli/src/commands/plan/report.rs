//! What `k3 plan` prints: `--json`'s object ([`PlanOutput`], k3-plan-wasm's [`PlanJson`] with
//! the cost rule's residency and time model after it, or a [`Refusal`]), typed so the JSON is
//! derived; or the plan as text, a line for each part of its bytes.

use k3_plan::{format_bytes, Footprint, LayerResidency, MemoryPlan};
use k3_plan_wasm::dto::{ErrorJson, PlanJson};
use serde::Serialize;

use super::cost::CostComparison;
use super::residency::{residency_name, residency_runs};
use crate::out::Json;

/// `k3 plan --json`: the plan; with `--residency cost`, each layer's residency and the cost
/// comparison after it.
#[derive(Serialize)]
struct PlanOutput<'a> {
    #[serde(flatten)]
    plan: &'a PlanJson,
    #[serde(skip_serializing_if = "Option::is_none")]
    residency: Option<Vec<&'static str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cost: Option<&'a CostComparison>,
}

/// `{"error": …}`: why there is no plan, as the wasm planner says it.
#[derive(Serialize)]
struct Refusal<'a> {
    error: &'a ErrorJson,
}

/// Prints a refusal's JSON.
pub(super) fn print_refusal(error: &ErrorJson) {
    outln!("{}", Json(&Refusal { error }));
}

/// Prints the plan's JSON.
pub(super) fn print_json(p: &MemoryPlan, v: &PlanJson, costs: Option<&CostComparison>) {
    let residency = costs.map(|_| p.residency.iter().map(|r| residency_name(*r)).collect());
    outln!("{}", Json(&PlanOutput { plan: v, residency, cost: costs }));
}

/// Prints the plan as text: the trunk, residency, cache, fixed and total lines, the
/// context, the batch trade-off and the cost comparison.
pub(super) fn print_text(
    p: &MemoryPlan,
    v: &PlanJson,
    fp: &Footprint,
    context_length: usize,
    costs: Option<&CostComparison>,
) {
    let pieces = if p.piece_eager_bytes > 0 {
        format!(
            ", larger layers streamed through it a matrix at a time (their small tensors {})",
            format_bytes(p.piece_eager_bytes)
        )
    } else {
        String::new()
    };
    // Every part of the trunk's bytes is on its line (probe finding: a coded trunk's
    // staging was in the total and on no line above it).
    let staging = if p.staging_bytes > 0 {
        format!(", staging for coded reads {}", format_bytes(p.staging_bytes))
    } else {
        String::new()
    };
    outln!(
        "trunk: {} — {}/{} layers pinned ({}), ring {} × {}{pieces}{staging}",
        format_bytes(p.trunk_bytes),
        p.pinned_layers,
        v.layers,
        format_bytes(p.pinned_bytes),
        p.ring_slots,
        format_bytes(p.ring_slot_bytes)
    );
    if p.residency.contains(&LayerResidency::PinnedCoded) || costs.is_some() {
        outln!(
            "residency: {} (held coded: {}; staging {})",
            residency_runs(&p.residency),
            format_bytes(p.pinned_coded_bytes),
            format_bytes(p.staging_bytes)
        );
    }
    outln!(
        "expert cache: {} slots × {} = {}",
        p.cache_slots,
        format_bytes(p.cache_slot_bytes),
        format_bytes(p.cache_bytes)
    );
    outln!(
        "fixed: {} (embeddings + head {} {}, state {}, KV {} × {} positions, scratch {} for {}-token prefill chunks), I/O buffers {}",
        format_bytes(p.fixed_bytes),
        format_bytes(k3_plan::model_level_bytes(fp, p.vocab)),
        p.vocab.name(),
        format_bytes(fp.state_bytes),
        format_bytes(fp.kv_bytes_per_position),
        context_length,
        format_bytes(p.scratch_bytes),
        p.prefill_chunk,
        format_bytes(p.io_buffer_bytes)
    );
    match v.mem_available_bytes {
        Some(a) => outln!(
            "total: {} of {} available — {}",
            format_bytes(p.total_bytes),
            format_bytes(a),
            if p.total_bytes <= a { "fits" } else { "does NOT fit" }
        ),
        None => outln!("total: {}", format_bytes(p.total_bytes)),
    }
    if let Some(d) = v.default_context {
        outln!(
            "context: {} positions reserved ({} each); the largest this choice keeps its trunk and cache at, \
             leaving auto's headroom free on this machine: {d}",
            context_length,
            format_bytes(fp.kv_bytes_per_position)
        );
    }
    print_batch(v, p.total_bytes);
    if let Some(c) = costs {
        c.print();
    }
}

/// The batch trade-off: what each conversation live at once adds, the plan's total at a few
/// batch sizes, and the largest this machine keeps (`k3_plan::batch_fit`).
fn print_batch(v: &PlanJson, total: u64) {
    let at = |n: u64| total.saturating_add(v.per_sequence_bytes.saturating_mul(n - 1));
    let sizes: Vec<String> = [1u64, 2, 4, 8, 16].iter().map(|&n| format!("{n}: {}", format_bytes(at(n)))).collect();
    let largest = match v.largest_batch {
        Some(0) => " — none fits this machine".to_string(),
        Some(n) => format!(" — this machine keeps up to {n} at once"),
        None => String::new(),
    };
    outln!(
        "conversations at once: each adds {} (state and KV cache at {} positions); plan by batch size {}{largest}",
        format_bytes(v.per_sequence_bytes),
        v.context_length,
        sizes.join(" · ")
    );
}
