//! Which model folder the app opens, and how the runtime's model summary reaches the UI.
//!
//! Owns: [`ModelTarget`] → the runtime's `ModelRequest` (the memory preset, `auto` unless
//! `K3_PRESET` says otherwise: weights stream through a plan sized by `k3_plan`, placed
//! by the prefix or by measured cost; the
//! context length the app reserves, the thread counts of Settings › Performance) and `ModelSummary` → the `ModelInfo` DTO with its one-line memory text.
//! Must not: open folders itself: opening (folder, vocabulary and template checks) is
//! the runtime's, shared with the CLI and the server.

use std::path::PathBuf;

use k3_engine::{EngineOptions, MemoryOptions, ResidencyRule, DEFAULT_CONTEXT_LENGTH};
use k3_io::ReadPattern;
use k3_plan::{format_bytes, format_count, BudgetChoice, Preset};
use k3_runtime::{ModelRequest, ModelSummary};

use crate::performance::Threads;
use crate::worker::ModelInfo;

/// Which folder to open, whether it is the bundled demo, and how long a conversation
/// may grow.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelTarget {
    pub path: PathBuf,
    pub is_demo: bool,
    /// Positions the plan reserves KV cache for (prompt + replies of one conversation);
    /// `None`: the largest the plan keeps on this machine (the preset's default context).
    pub context_length: Option<usize>,
    /// The memory budget the model opens with (a preset's or a custom one).
    pub budget: BudgetChoice,
    /// How the plan places the trunk's layers under it (Settings › Memory › Placement).
    pub residency: ResidencyRule,
    /// The packed trunk to stream unpinned layers from (the wizard packs one).
    pub trunk: Option<PathBuf>,
    /// How streamed reads are issued: the drive's best from the speed test, when measured.
    pub read_pattern: ReadPattern,
}

impl ModelTarget {
    /// `path` at the context its plan fits.
    pub fn folder(path: impl Into<PathBuf>, is_demo: bool) -> Self {
        ModelTarget {
            path: path.into(),
            is_demo,
            context_length: None,
            budget: BudgetChoice::Auto,
            residency: ResidencyRule::Prefix,
            trunk: None,
            read_pattern: ReadPattern::DEFAULT,
        }
    }

    /// The runtime request: the target's budget, `threads`' kernel threads and reads.
    pub fn request(&self, threads: Threads) -> ModelRequest {
        let memory = MemoryOptions {
            budget: Some(self.budget),
            residency: self.residency,
            io_threads: threads.io_threads(),
            context_length: self.context_length.unwrap_or(DEFAULT_CONTEXT_LENGTH),
            fit_context: self.context_length.is_none(),
            trunk_dir: self.trunk.clone(),
            read_pattern: self.read_pattern,
            ..MemoryOptions::resident()
        };
        ModelRequest {
            options: EngineOptions { model_dir: self.path.clone(), threads: threads.compute_threads(), memory },
            is_demo: self.is_demo,
        }
    }
}

/// How the layers in RAM were chosen, when not by the prefix, in words.
fn placed(rule: ResidencyRule, plan: &k3_plan::MemoryPlan) -> String {
    let held_coded = plan.residency.iter().filter(|r| **r == k3_plan::LayerResidency::PinnedCoded).count();
    match (rule, held_coded) {
        (ResidencyRule::Prefix, _) => String::new(),
        (ResidencyRule::ByCost(_), 0) => " (placed by measured cost)".into(),
        (ResidencyRule::ByCost(_), n) => format!(" and {n} held coded (placed by measured cost)"),
    }
}

/// The preset a budget came from, in words.
fn budget_name(budget: Option<BudgetChoice>) -> &'static str {
    match budget {
        None => "no",
        Some(BudgetChoice::Auto) => Preset::Auto.name(),
        Some(BudgetChoice::Fixed(b)) => {
            Preset::ALL.into_iter().find(|p| p.fixed_budget() == Some(b)).map_or("custom", Preset::name)
        }
    }
}

/// The UI's view of the model in use.
pub fn model_info(s: &ModelSummary) -> ModelInfo {
    let memory = match &s.plan {
        Some(p) => format!(
            "{} budget: {}/{} layers in RAM{}, {} expert slots, plan {}, context {} tokens",
            budget_name(s.budget),
            p.pinned_layers,
            s.layers,
            placed(s.residency, p),
            p.cache_slots,
            format_bytes(p.total_bytes),
            format_count(s.context_length as u64)
        ),
        None => format!("all weights in RAM, context {} tokens", format_count(s.context_length as u64)),
    };
    ModelInfo {
        path: s.path.display().to_string(),
        name: s.name.clone(),
        is_demo: s.is_demo,
        layers: s.layers as u32,
        hidden_size: s.hidden_size as u32,
        vocab_size: s.vocab_size as u32,
        routed_experts: s.routed_experts as u32,
        experts_per_token: s.experts_per_token as u32,
        checkpoint_bytes: s.checkpoint_bytes,
        memory,
        load_ms: s.load_time.as_millis() as u64,
    }
}
