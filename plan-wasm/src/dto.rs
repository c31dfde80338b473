//! The JSON shapes of the planner: what the page (and `k3 plan --footprint`) sends in, what
//! `k3 plan --json` and the wasm exports send back. Plain serde structs beside k3-plan's own
//! types, so k3-plan stays free of dependencies.
//!
//! Owns: the field names (they are the TypeScript types of `ui/src/plan/wasmPlanner.ts`:
//! change both together), the conversions to and from k3-plan's types, and the error
//! object: a `kind` naming the [`PlanError`] variant, its numbers and its `message`.
//! Easy to break: every byte count is a `u64`; JavaScript reads them as doubles, exact up to
//! 2^53 (9 PB), which every real footprint and budget is far below.

use k3_plan::{
    Budget, BudgetChoice, ByHitRate, CgroupMemory, ComputeRates, DiskRates, Footprint, Forecast, LayerPieces,
    MachineMemory, MemoryPlan, PlanError, Preset, SecondsPerToken,
};
use serde::{Deserialize, Serialize};

/// A model's sizes ([`Footprint`]), field for field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(rename = "Footprint"))]
#[serde(deny_unknown_fields)]
pub struct FootprintJson {
    pub layer_trunk_bytes: Vec<u64>,
    pub expert_bytes: u64,
    pub n_experts_total: u64,
    pub top_k: u64,
    pub moe_layers: u64,
    pub resident_bytes: u64,
    pub head_bytes: u64,
    /// Of `resident_bytes`, the embedding table (0 when unknown).
    #[serde(default)]
    #[cfg_attr(test, ts(as = "Option<_>", optional))]
    pub embed_bytes: u64,
    /// Rows of the embedding table and head (0 when unknown: both are then held).
    #[serde(default)]
    #[cfg_attr(test, ts(as = "Option<_>", optional))]
    pub vocab_rows: u64,
    pub state_bytes: u64,
    pub kv_bytes_per_position: u64,
    pub scratch_bytes: u64,
    /// How each layer streams through a slot smaller than itself (empty when unknown: the
    /// trunk then streams whole layers).
    #[serde(default)]
    #[cfg_attr(test, ts(as = "Option<_>", optional))]
    pub layer_pieces: Vec<LayerPiecesJson>,
}

/// [`LayerPieces`], field for field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(rename = "LayerPieces"))]
#[serde(deny_unknown_fields)]
pub struct LayerPiecesJson {
    pub largest_piece: u64,
    pub eager_bytes: u64,
}

impl From<&Footprint> for FootprintJson {
    fn from(fp: &Footprint) -> Self {
        FootprintJson {
            layer_trunk_bytes: fp.layer_trunk_bytes.clone(),
            expert_bytes: fp.expert_bytes,
            n_experts_total: fp.n_experts_total,
            top_k: fp.top_k,
            moe_layers: fp.moe_layers,
            resident_bytes: fp.resident_bytes,
            head_bytes: fp.head_bytes,
            embed_bytes: fp.embed_bytes,
            vocab_rows: fp.vocab_rows,
            state_bytes: fp.state_bytes,
            kv_bytes_per_position: fp.kv_bytes_per_position,
            scratch_bytes: fp.scratch_bytes,
            layer_pieces: fp
                .layer_pieces
                .iter()
                .map(|p| LayerPiecesJson { largest_piece: p.largest_piece, eager_bytes: p.eager_bytes })
                .collect(),
        }
    }
}

impl From<FootprintJson> for Footprint {
    fn from(f: FootprintJson) -> Self {
        Footprint {
            layer_trunk_bytes: f.layer_trunk_bytes,
            expert_bytes: f.expert_bytes,
            n_experts_total: f.n_experts_total,
            top_k: f.top_k,
            moe_layers: f.moe_layers,
            resident_bytes: f.resident_bytes,
            head_bytes: f.head_bytes,
            embed_bytes: f.embed_bytes,
            vocab_rows: f.vocab_rows,
            state_bytes: f.state_bytes,
            kv_bytes_per_position: f.kv_bytes_per_position,
            scratch_bytes: f.scratch_bytes,
            layer_pieces: f
                .layer_pieces
                .iter()
                .map(|p| LayerPieces { largest_piece: p.largest_piece, eager_bytes: p.eager_bytes })
                .collect(),
        }
    }
}

/// The machine's memory figures ([`MachineMemory`]); `cgroup` may be left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(rename = "MachineMemory"))]
#[serde(deny_unknown_fields)]
pub struct MachineJson {
    pub total_bytes: u64,
    pub available_bytes: u64,
    #[serde(default)]
    #[cfg_attr(test, ts(optional = nullable))]
    pub cgroup: Option<CgroupJson>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(rename = "CgroupMemory"))]
#[serde(deny_unknown_fields)]
pub struct CgroupJson {
    pub limit_bytes: u64,
    pub usage_bytes: u64,
}

impl From<MachineJson> for MachineMemory {
    fn from(m: MachineJson) -> Self {
        MachineMemory {
            total_bytes: m.total_bytes,
            available_bytes: m.available_bytes,
            cgroup: m.cgroup.map(|c| CgroupMemory { limit_bytes: c.limit_bytes, usage_bytes: c.usage_bytes }),
        }
    }
}

/// Trunk and cache budgets in bytes ([`Budget`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(rename = "Budget"))]
#[serde(deny_unknown_fields)]
pub struct BudgetJson {
    pub trunk_bytes: u64,
    pub cache_bytes: u64,
}

impl From<Budget> for BudgetJson {
    fn from(b: Budget) -> Self {
        BudgetJson { trunk_bytes: b.trunk_bytes, cache_bytes: b.cache_bytes }
    }
}

/// A preset's name (`"laptop"` … `"max"`, `"auto"`) or custom budgets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ChoiceJson {
    Preset(String),
    Custom(BudgetJson),
}

impl ChoiceJson {
    /// The budget choice, refusing an unknown preset name.
    pub fn choice(&self) -> Result<BudgetChoice, PlanError> {
        match self {
            ChoiceJson::Preset(name) => Preset::from_name(name).map(Preset::choice),
            ChoiceJson::Custom(b) => {
                Ok(BudgetChoice::Fixed(Budget { trunk_bytes: b.trunk_bytes, cache_bytes: b.cache_bytes }))
            }
        }
    }
}

/// What `k3 plan --json` prints and `k3_plan` returns for a plan: the [`MemoryPlan`], the
/// budgets it was made for (`auto`'s as resolved) and the footprint figures it used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(rename = "MemoryPlan"))]
pub struct PlanJson {
    pub budget: BudgetJson,
    pub layers: usize,
    pub pinned_layers: usize,
    pub pinned_bytes: u64,
    pub ring_slots: usize,
    pub ring_slot_bytes: u64,
    /// The small tensors' buffers of the layers larger than a slot (streamed in pieces).
    pub piece_eager_bytes: u64,
    /// Layers held coded in RAM (decoded every pass).
    pub pinned_coded_bytes: u64,
    /// Staging buffers of coded reads (a coded trunk's streamed layers).
    pub staging_bytes: u64,
    /// Pinned + pinned coded + ring + piece buffers + staging.
    pub trunk_bytes: u64,
    pub trunk_streamed: bool,
    pub cache_slots: u64,
    pub cache_slot_bytes: u64,
    pub cache_bytes: u64,
    pub io_buffer_bytes: u64,
    pub fixed_bytes: u64,
    /// Model-level tensors as the plan holds them (the embeddings and head per `vocab`).
    pub resident_model_bytes: u64,
    /// Where the embeddings and head live: "held" or "read" (from the checkpoint when used).
    #[cfg_attr(test, ts(type = "\"held\" | \"read\""))]
    pub vocab: String,
    pub state_bytes: u64,
    pub kv_bytes_per_position: u64,
    pub context_length: u64,
    /// Work buffers of one prefill chunk (`prefill_chunk` tokens).
    pub scratch_bytes: u64,
    /// Tokens per prefill chunk, sized by the budgets (`k3_plan::prefill_chunk`).
    pub prefill_chunk: u64,
    pub total_bytes: u64,
    /// `MemAvailable` capped by the cgroup; `null` when the machine did not say.
    pub mem_available_bytes: Option<u64>,
    /// `total_bytes ≤ mem_available_bytes`; `null` when that is unknown.
    pub fits: Option<bool>,
    /// `mem_available_bytes − total_bytes` (`k3_plan::headroom_bytes`); `null` when unknown.
    pub headroom_bytes: Option<i64>,
    /// It fits with less than `auto`'s headroom left; `null` when unknown.
    pub tight: Option<bool>,
    /// The largest context at which this choice keeps its trunk and cache and leaves
    /// `auto`'s headroom free (`k3_plan::default_context`); `null` when none does or the
    /// machine is unknown.
    pub default_context: Option<u64>,
    /// What each conversation decoding or kept at once adds: its recurrent state and KV
    /// cache at `context_length` (`k3_plan::batch_fit`).
    pub per_sequence_bytes: u64,
    /// The most conversations this choice keeps live at once within the available memory
    /// (`k3_plan::batch_fit`); `null` when the machine is unknown.
    pub largest_batch: Option<u64>,
}

/// How a plan was asked for, beside the plan itself ([`PlanJson::new`]).
#[derive(Debug, Clone, Copy)]
pub struct PlanContext<'a> {
    pub footprint: &'a Footprint,
    /// The choice as asked (a preset's, `auto`, or two sizes) and its budgets as resolved.
    pub choice: BudgetChoice,
    pub budget: Budget,
    pub trunk_streamed: bool,
    pub context_length: u64,
    pub io_threads: u64,
    pub machine: MachineMemory,
}

impl PlanJson {
    pub fn new(p: &MemoryPlan, cx: &PlanContext<'_>) -> Self {
        let fp = cx.footprint;
        let available = Some(cx.machine.usable_available_bytes()).filter(|&a| a > 0);
        let headroom = available.map(|_| k3_plan::headroom_bytes(cx.machine, p));
        let shape = k3_plan::RunShape { streamed_trunk: cx.trunk_streamed, io_threads: cx.io_threads };
        PlanJson {
            budget: cx.budget.into(),
            layers: fp.layer_trunk_bytes.len(),
            pinned_layers: p.pinned_layers,
            pinned_bytes: p.pinned_bytes,
            ring_slots: p.ring_slots,
            ring_slot_bytes: p.ring_slot_bytes,
            piece_eager_bytes: p.piece_eager_bytes,
            pinned_coded_bytes: p.pinned_coded_bytes,
            staging_bytes: p.staging_bytes,
            trunk_bytes: p.trunk_bytes,
            trunk_streamed: cx.trunk_streamed,
            cache_slots: p.cache_slots,
            cache_slot_bytes: p.cache_slot_bytes,
            cache_bytes: p.cache_bytes,
            io_buffer_bytes: p.io_buffer_bytes,
            fixed_bytes: p.fixed_bytes,
            resident_model_bytes: k3_plan::model_level_bytes(fp, p.vocab),
            vocab: match p.vocab {
                k3_plan::VocabPlacement::Held => "held".into(),
                k3_plan::VocabPlacement::Read => "read".into(),
            },
            state_bytes: fp.state_bytes,
            kv_bytes_per_position: fp.kv_bytes_per_position,
            context_length: cx.context_length,
            scratch_bytes: p.scratch_bytes,
            prefill_chunk: p.prefill_chunk,
            total_bytes: p.total_bytes,
            mem_available_bytes: available,
            fits: available.map(|a| p.total_bytes <= a),
            headroom_bytes: headroom,
            tight: headroom.map(|h| h >= 0 && (h as u64) < k3_plan::auto_headroom(cx.machine)),
            default_context: available.and_then(|_| k3_plan::default_context(fp, cx.choice, shape, cx.machine)),
            per_sequence_bytes: fp.kv_bytes(cx.context_length).saturating_add(fp.state_bytes),
            largest_batch: available.and_then(|_| {
                k3_plan::batch_fit(fp, cx.choice, shape, cx.machine, cx.context_length).ok().map(|f| f.largest)
            }),
        }
    }
}

/// A refusal: the variant's name in `kind`, its numbers beside, and the text a person reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(rename = "PlanError"))]
pub struct ErrorJson {
    #[serde(flatten)]
    pub detail: ErrorDetail,
    pub message: String,
}

/// [`PlanError`]'s variants with their fields, plus the two ways the JSON call itself fails.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(tag = "kind")]
pub enum ErrorDetail {
    TrunkBudgetTooSmall {
        budget_bytes: u64,
        minimum_bytes: u64,
    },
    TrunkNotPacked {
        budget_bytes: u64,
        trunk_bytes: u64,
    },
    CacheBudgetTooSmall {
        budget_bytes: u64,
        minimum_bytes: u64,
        slot_bytes: u64,
        minimum_slots: u64,
    },
    AutoTooSmall {
        usable_bytes: u64,
        needed_bytes: u64,
    },
    ExceedsAvailable {
        needed_bytes: u64,
        available_bytes: u64,
    },
    ContextLength {
        requested: u64,
        maximum: u64,
    },
    UnknownPreset {
        name: String,
    },
    Size {
        text: String,
        reason: String,
    },
    Overflow {
        what: String,
    },
    /// No conversation, or more than a plan may keep live at once.
    Sequences {
        requested: u64,
        maximum: u64,
    },
    /// More conversations at once than the machine holds (`k3_plan::plan_sequences`).
    BatchTooLarge {
        sequences: u64,
        largest: u64,
        per_sequence_bytes: u64,
        needed_bytes: u64,
        available_bytes: u64,
    },
    /// The I/O thread count is 0 or above [`crate::api::MAX_IO_THREADS`].
    IoThreads {
        requested: u64,
        maximum: u64,
    },
    /// A rate given to the forecast is not a positive number.
    Forecast,
    /// The input is not the JSON the call takes.
    BadRequest,
}

impl From<&PlanError> for ErrorJson {
    fn from(e: &PlanError) -> Self {
        let detail = match e.clone() {
            PlanError::TrunkBudgetTooSmall { budget_bytes, minimum_bytes } => {
                ErrorDetail::TrunkBudgetTooSmall { budget_bytes, minimum_bytes }
            }
            PlanError::TrunkNotPacked { budget_bytes, trunk_bytes } => {
                ErrorDetail::TrunkNotPacked { budget_bytes, trunk_bytes }
            }
            PlanError::CacheBudgetTooSmall { budget_bytes, minimum_bytes, slot_bytes, minimum_slots } => {
                ErrorDetail::CacheBudgetTooSmall { budget_bytes, minimum_bytes, slot_bytes, minimum_slots }
            }
            PlanError::AutoTooSmall { usable_bytes, needed_bytes } => {
                ErrorDetail::AutoTooSmall { usable_bytes, needed_bytes }
            }
            PlanError::ExceedsAvailable { needed_bytes, available_bytes } => {
                ErrorDetail::ExceedsAvailable { needed_bytes, available_bytes }
            }
            PlanError::ContextLength { requested, maximum } => ErrorDetail::ContextLength { requested, maximum },
            PlanError::UnknownPreset { name } => ErrorDetail::UnknownPreset { name },
            PlanError::Size { text, reason } => ErrorDetail::Size { text, reason: reason.to_string() },
            PlanError::Overflow { what } => ErrorDetail::Overflow { what: what.to_string() },
            PlanError::Rate { .. } => ErrorDetail::Forecast,
            PlanError::Sequences { requested, maximum } => ErrorDetail::Sequences { requested, maximum },
            PlanError::BatchTooLarge { sequences, largest, per_sequence_bytes, needed_bytes, available_bytes } => {
                ErrorDetail::BatchTooLarge { sequences, largest, per_sequence_bytes, needed_bytes, available_bytes }
            }
        };
        ErrorJson { detail, message: e.to_string() }
    }
}

impl ErrorJson {
    pub fn new(detail: ErrorDetail, message: String) -> Self {
        ErrorJson { detail, message }
    }
}

/// The drive's and the CPU's rates a forecast needs ([`DiskRates`], [`ComputeRates`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(rename = "Rates"))]
#[serde(deny_unknown_fields)]
pub struct RatesJson {
    pub disk_trunk_bytes_per_second: f64,
    pub disk_expert_bytes_per_second: f64,
    pub bf16_bytes_per_second: f64,
    pub expert_bytes_per_second: f64,
}

impl RatesJson {
    pub fn disk(&self) -> DiskRates {
        DiskRates {
            trunk_bytes_per_second: self.disk_trunk_bytes_per_second,
            expert_bytes_per_second: self.disk_expert_bytes_per_second,
        }
    }

    pub fn compute(&self) -> ComputeRates {
        ComputeRates {
            bf16_bytes_per_second: self.bf16_bytes_per_second,
            expert_bytes_per_second: self.expert_bytes_per_second,
        }
    }
}

/// A figure at the floor, uniform and ceiling hit rates ([`ByHitRate`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(rename = "ByHitRate"))]
pub struct ByHitRateJson {
    pub floor: f64,
    pub uniform: f64,
    pub ceiling: f64,
}

impl From<ByHitRate> for ByHitRateJson {
    fn from(b: ByHitRate) -> Self {
        ByHitRateJson { floor: b.floor, uniform: b.uniform, ceiling: b.ceiling }
    }
}

/// Seconds per token ([`SecondsPerToken`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(rename = "SecondsPerToken"))]
pub struct SecondsPerTokenJson {
    pub low: f64,
    pub high: f64,
    pub expected_overlapped: f64,
    pub expected_serial: f64,
}

impl From<SecondsPerToken> for SecondsPerTokenJson {
    fn from(s: SecondsPerToken) -> Self {
        SecondsPerTokenJson {
            low: s.low,
            high: s.high,
            expected_overlapped: s.expected_overlapped,
            expected_serial: s.expected_serial,
        }
    }
}

/// A plan's speed forecast ([`Forecast`]), field for field.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(rename = "Forecast"))]
pub struct ForecastJson {
    pub hit_rate: ByHitRateJson,
    pub expert_requests: u64,
    pub trunk_bytes: u64,
    pub expert_bytes: ByHitRateJson,
    pub io_seconds: ByHitRateJson,
    pub compute_bf16_bytes: u64,
    pub compute_expert_bytes: u64,
    pub compute_seconds: f64,
    pub seconds_per_token: SecondsPerTokenJson,
}

impl From<&Forecast> for ForecastJson {
    fn from(f: &Forecast) -> Self {
        ForecastJson {
            hit_rate: f.hit_rate.into(),
            expert_requests: f.expert_requests,
            trunk_bytes: f.trunk_bytes,
            expert_bytes: f.expert_bytes.into(),
            io_seconds: f.io_seconds.into(),
            compute_bf16_bytes: f.compute_bf16_bytes,
            compute_expert_bytes: f.compute_expert_bytes,
            compute_seconds: f.compute_seconds,
            seconds_per_token: f.seconds_per_token.into(),
        }
    }
}
