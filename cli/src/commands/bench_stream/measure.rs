//! One measured run of `k3 bench stream`: the engine decoding as the flags say, its steps'
//! samples, and the drive's best read just before and just after it; k3-bench turns them into
//! the run's figures.

use k3_bench::stream::{DriveBest, RunSetting, StepSamples, StreamRun};
use k3_engine::{CancelToken, DecodeMode, GenerateParams, Sampling};
use k3_store::{best_over, floor_grid};

use crate::args::ModelArgs;
use crate::commands::{load_engine, Failure};

/// One measured run of the engine as `model` says, with the drive's best read just
/// before and just after it.
pub(super) fn measure(model: &ModelArgs, tokens: usize) -> Result<StreamRun, Failure> {
    // The floor is the drive's best, never the engine's own read pattern: the fastest
    // point measured on the same files just before and just after the engine runs (a
    // virtual disk's bandwidth moves with bursts and host caching; the best figure the
    // machine shows is the floor).
    let groups = [
        crate::commands::disk::shards(&model.model)?,
        model.memory.trunk.iter().map(|t| t.join("trunk.bin")).collect(),
    ];
    let (before, direct_before) = best_over(&groups, &floor_grid())?;
    let engine = load_engine(model)?;
    let plan = engine.plan().cloned();
    let pattern = engine.memory_options().read_pattern;
    let params = GenerateParams {
        max_new_tokens: tokens + 1,
        sampling: Sampling::Greedy,
        stop_ids: vec![],
        mode: DecodeMode::Incremental,
    };
    let mut steps = StepSamples::default();
    let prompt: Vec<u32> = (1..=4).map(|i| i % engine.config().vocab_size as u32).collect();
    engine.generate(&mut engine.new_session(), &prompt, &params, &CancelToken::new(), &mut steps)?;
    drop(engine);
    let (after, direct_after) = best_over(&groups, &floor_grid())?;
    let setting = RunSetting {
        read_request_bytes: pattern.request_bytes,
        read_depth: pattern.depth,
        pinned_layers: plan.as_ref().map(|p| p.pinned_layers),
        residency: plan.as_ref().map(|p| crate::commands::plan::residency_runs(&p.residency)),
        ring_slots: plan.as_ref().map(|p| p.ring_slots),
        cache_slots: plan.as_ref().map(|p| p.cache_slots),
    };
    Ok(StreamRun::from_samples(&steps, DriveBest { before, after, direct: direct_before && direct_after }, setting))
}
