//! `k3 plan`: the memory plan for a budget, computed from a checkpoint's headers alone, from
//! a footprint file, or for the released K3; on this machine's memory figures or on given
//! ones. `--json` prints k3-plan-wasm's schema, which the wasm planner answers in too, so
//! `cli/tests/plan_wasm.rs` can require both to agree field for field.

use std::path::Path;

use k3_engine::format::TensorIndex;
use k3_engine::io::sysinfo::machine_memory;
use k3_engine::stream::footprint::footprint;
use k3_engine::stream::plan::make_plan;
use k3_engine::stream::trunk_manifest::CodedLayout;
use k3_engine::ModelConfig;
use k3_plan::{
    auto_budget_for, cost_of, format_bytes, parse_size, plan_memory_by, released_footprint, BudgetChoice, CostFigures,
    Footprint, LayerResidency, MachineMemory, ResidencyRule,
};
use k3_plan_wasm::api::check_ranges;
use k3_plan_wasm::dto::{ErrorJson, FootprintJson, PlanContext, PlanJson};
use serde_json::json;

use super::{input_error, memory_options, require_dir, Failure};
use crate::args::PlanArgs;

/// The largest footprint file read (a real one is a few kilobytes).
const MAX_FOOTPRINT_FILE_BYTES: u64 = 1 << 20;

pub fn plan(args: PlanArgs) -> Result<(), Failure> {
    let (fp, streamed, coded) = subject(&args)?;
    if args.print_footprint {
        let text =
            serde_json::to_string(&FootprintJson::from(&fp)).map_err(|e| input_error(format!("footprint: {e}")))?;
        outln!("{text}");
        return Ok(());
    }
    let mut opts = memory_options(&args.memory)?;
    opts.check_available = false;
    let Some(choice) = opts.budget else {
        return Err(input_error("give --preset P or --trunk-budget/--cache-budget".into()));
    };
    let machine = machine(&args)?;
    // The engine refuses these with its own message below; the JSON names them as the
    // wasm planner does.
    if let (true, Err(e)) = (args.json, check_ranges(opts.context_length as u64, opts.io_threads as u64)) {
        outln!("{}", json!({ "error": e }));
    }
    let coded_layers = coded.as_ref().map(CodedLayout::layers);
    let p = match make_plan(&fp, choice, (streamed, coded_layers), &opts, machine) {
        Ok(p) => p,
        Err(k3_engine::Error::Budget(e)) => {
            if args.json {
                outln!("{}", json!({ "error": ErrorJson::from(&e) }));
            }
            return Err(k3_engine::Error::Budget(e).into());
        }
        Err(e) => return Err(e.into()),
    };
    let budget = match choice {
        BudgetChoice::Fixed(b) => b,
        BudgetChoice::Auto => auto_budget_for(&fp, machine, opts.context_length as u64)
            .map_err(|e| Failure::from(k3_engine::Error::Budget(e)))?,
    };
    let cx = PlanContext {
        footprint: &fp,
        choice,
        budget,
        trunk_streamed: streamed,
        context_length: opts.context_length as u64,
        io_threads: opts.io_threads as u64,
        machine,
    };
    let v = PlanJson::new(&p, &cx);
    let costs = match opts.residency {
        ResidencyRule::ByCost(rates) => Some(cost_comparison(&fp, (&p, &cx), &opts, (rates, coded_layers))?),
        ResidencyRule::Prefix => None,
    };
    if args.json {
        let mut out = json!(v);
        if let Some(c) = &costs {
            out["residency"] = json!(p.residency.iter().map(|r| residency_name(*r)).collect::<Vec<_>>());
            out["cost"] = c.json();
        }
        outln!("{out}");
        return Ok(());
    }
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
        format_bytes(k3_plan::model_level_bytes(&fp, p.vocab)),
        p.vocab.name(),
        format_bytes(fp.state_bytes),
        format_bytes(fp.kv_bytes_per_position),
        opts.context_length,
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
            opts.context_length,
            format_bytes(fp.kv_bytes_per_position)
        );
    }
    print_batch(&v, p.total_bytes);
    if let Some(c) = costs {
        c.print();
    }
    Ok(())
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

/// The cost plan's time model next to the prefix plan's for the same budgets.
struct CostComparison {
    chosen: CostFigures,
    prefix: Option<CostFigures>,
}

impl CostComparison {
    fn json(&self) -> serde_json::Value {
        let figures = |f: &CostFigures| {
            json!({ "seconds_per_token": f.seconds_per_token, "io_seconds": f.io_seconds,
                    "compute_seconds": f.compute_seconds, "decode_seconds": f.decode_seconds,
                    "overlapped": f.overlapped })
        };
        json!({ "chosen": figures(&self.chosen), "prefix": self.prefix.as_ref().map(figures) })
    }

    fn print(&self) {
        let line = |f: &CostFigures| {
            format!(
                "{:.3} s/token (drive {:.3} s {} compute {:.3} s, of which decoding {:.3} s)",
                f.seconds_per_token,
                f.io_seconds,
                if f.overlapped { "overlapped with" } else { "then" },
                f.compute_seconds,
                f.decode_seconds
            )
        };
        outln!("forecast by cost: {}", line(&self.chosen));
        match &self.prefix {
            Some(p) => outln!(
                "the prefix plan of the same budgets: {} → by cost is {:.2} × as fast",
                line(p),
                p.seconds_per_token / self.chosen.seconds_per_token.max(1e-12)
            ),
            None => outln!("the prefix plan of the same budgets: does not fit"),
        }
    }
}

fn cost_comparison(
    fp: &Footprint,
    (p, cx): (&k3_plan::MemoryPlan, &PlanContext),
    opts: &k3_engine::MemoryOptions,
    (rates, coded): (k3_plan::CostRates, Option<k3_plan::CodedLayers>),
) -> Result<CostComparison, Failure> {
    let chosen =
        cost_of(fp, p, &rates, coded, cx.trunk_streamed).map_err(|e| Failure::from(k3_engine::Error::Budget(e)))?;
    let request = k3_plan::MemoryRequest {
        choice: BudgetChoice::Fixed(cx.budget),
        streamed_trunk: cx.trunk_streamed,
        context_length: opts.context_length as u64,
        io_threads: opts.io_threads as u64,
    };
    let prefix = plan_memory_by(fp, &request, cx.machine, false, (ResidencyRule::Prefix, coded))
        .ok()
        .map(|q| cost_of(fp, &q, &rates, coded, cx.trunk_streamed))
        .transpose()
        .map_err(|e| Failure::from(k3_engine::Error::Budget(e)))?;
    Ok(CostComparison { chosen, prefix })
}

fn residency_name(r: LayerResidency) -> &'static str {
    match r {
        LayerResidency::Pinned => "pinned",
        LayerResidency::PinnedCoded => "held coded",
        LayerResidency::Streamed => "streamed",
    }
}

/// `0–3 pinned · 4 held coded · 5–8 streamed`: runs of layers with one residency.
pub(super) fn residency_runs(residency: &[LayerResidency]) -> String {
    let mut runs: Vec<(usize, usize, LayerResidency)> = Vec::new();
    for (l, &r) in residency.iter().enumerate() {
        match runs.last_mut() {
            Some((_, end, last)) if *last == r => *end = l,
            _ => runs.push((l, l, r)),
        }
    }
    let run = |&(a, b, r): &(usize, usize, LayerResidency)| {
        if a == b {
            format!("{a} {}", residency_name(r))
        } else {
            format!("{a}–{b} {}", residency_name(r))
        }
    };
    runs.iter().map(run).collect::<Vec<_>>().join(" · ")
}

/// The footprint to plan for, whether its trunk streams, and a coded trunk's layout: a
/// checkpoint folder's (with its packed trunk when --trunk is given), a footprint file's or
/// the released model's.
fn subject(args: &PlanArgs) -> Result<(Footprint, bool, Option<CodedLayout>), Failure> {
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
    k3_engine::model::Model::validate(&cfg, &index)?;
    let fp = footprint(&cfg, &index)?;
    let coded = match &args.memory.trunk {
        Some(trunk) => {
            require_dir("--trunk", trunk)?;
            k3_engine::stream::trunk_manifest::open_packed_trunk(trunk, &cfg, &index)?.coded_layout()
        }
        None => None,
    };
    Ok((fp, args.memory.trunk.is_some(), coded))
}

fn read_footprint(file: &Path) -> Result<Footprint, Failure> {
    let text = super::read_text("--footprint", file)?;
    if text.len() as u64 > MAX_FOOTPRINT_FILE_BYTES {
        return Err(input_error(format!("--footprint {}: larger than 1 MiB", file.display())));
    }
    let fp: FootprintJson = serde_json::from_str(&text)
        .map_err(|e| input_error(format!("--footprint {}: not a footprint: {e}", file.display())))?;
    Ok(fp.into())
}

/// --mem-total/--mem-available when given (no cgroup), else this machine's figures.
fn machine(args: &PlanArgs) -> Result<MachineMemory, Failure> {
    let (Some(total), Some(available)) = (&args.mem_total, &args.mem_available) else {
        return Ok(machine_memory());
    };
    let size = |flag: &str, text: &str| parse_size(text).map_err(|e| input_error(format!("{flag}: {e}")));
    Ok(MachineMemory::new(size("--mem-total", total)?, size("--mem-available", available)?))
}
