//! What `k3 run` prints when the generation ends: `--json`'s object, derived from the typed
//! [`RunReport`] (ids, finish, mode, speculation, times and the streaming metrics), or a
//! summary line on stderr after the streamed tokens.

use k3_engine::speculate::SpeculationStats;
use k3_engine::{DecodeMode, FinishReason, Generation};
use k3_runtime::ReplyFigures;
use serde::Serialize;

use crate::out::Json;

/// A finished generation and what it was run with.
pub(super) struct RunOutcome<'a> {
    pub prompt: &'a [u32],
    pub out: &'a Generation,
    pub mode: DecodeMode,
    pub figures: &'a ReplyFigures,
    pub context_length: usize,
    /// The generated text, when the prompt was text and JSON is printed.
    pub text: Option<String>,
}

/// `k3 run --json`.
#[derive(Serialize)]
struct RunReport<'a> {
    prompt_ids: &'a [u32],
    generated_ids: &'a [u32],
    finish_reason: &'static str,
    mode: &'static str,
    speculation: Speculation,
    prefill_seconds: f64,
    total_seconds: f64,
    seconds_per_token: Option<f64>,
    context_length: usize,
    metrics: Metrics,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
}

/// The drafts' figures (all 0 without `--speculate`).
#[derive(Serialize)]
struct Speculation {
    verify_passes: usize,
    drafted: usize,
    accepted: usize,
}

/// The run's streaming metrics.
#[derive(Serialize)]
struct Metrics {
    expert_requests: u64,
    expert_true_resident_hits: u64,
    expert_prefetch_hits: u64,
    expert_misses: u64,
    true_resident_hit_rate: f64,
    expert_bytes_read: u64,
    trunk_bytes_read: u64,
    vocab_bytes_read: u64,
    io_wait_seconds: f64,
    compute_seconds: f64,
    peak_rss_bytes: Option<u64>,
}

impl Metrics {
    fn of(out: &Generation, figures: &ReplyFigures) -> Self {
        let m = &out.metrics;
        Metrics {
            expert_requests: m.expert_requests,
            expert_true_resident_hits: m.expert_true_hits,
            expert_prefetch_hits: m.expert_prefetch_hits,
            expert_misses: m.expert_misses,
            true_resident_hit_rate: figures.true_hit_rate.unwrap_or(0.0),
            expert_bytes_read: m.expert_bytes_read,
            trunk_bytes_read: m.trunk_bytes_read,
            vocab_bytes_read: m.vocab_bytes_read,
            io_wait_seconds: m.io_wait().as_secs_f64(),
            compute_seconds: figures.compute().as_secs_f64(),
            peak_rss_bytes: out.peak_rss_bytes,
        }
    }
}

/// Prints the outcome: the JSON object, or (after the streamed tokens) a newline and the
/// summary line on stderr.
pub(super) fn print(r: &RunOutcome, json: bool) {
    let (out, figures) = (r.out, r.figures);
    if json {
        let report = RunReport {
            prompt_ids: r.prompt,
            generated_ids: &out.generated,
            finish_reason: finish_reason(out.finish),
            mode: match r.mode {
                DecodeMode::FullRecompute => "full_recompute",
                DecodeMode::Incremental => "incremental",
                DecodeMode::Speculative { .. } => "speculative",
            },
            speculation: Speculation {
                verify_passes: out.speculation.verify_passes,
                drafted: out.speculation.drafted,
                accepted: out.speculation.accepted,
            },
            prefill_seconds: out.prefill_time.as_secs_f64(),
            total_seconds: out.total_time.as_secs_f64(),
            seconds_per_token: figures.seconds_per_token,
            context_length: r.context_length,
            metrics: Metrics::of(out, figures),
            text: r.text.as_deref(),
        };
        outln!("{}", Json(&report));
        return;
    }
    outln!();
    eprintln!(
        "{} tokens, {}, {:.3} s total, {:.3} s to the first token, {}{}",
        out.generated.len(),
        finish_reason(out.finish),
        out.total_time.as_secs_f64(),
        figures.time_to_first_token.as_secs_f64(),
        figures.seconds_per_token.map_or("– s/token".to_string(), |s| format!("{s:.3} s/token")),
        speculation_summary(&out.speculation)
    );
}

/// ", 12 of 20 draft tokens accepted in 6 verify passes" (empty when nothing was drafted).
fn speculation_summary(s: &SpeculationStats) -> String {
    if s.verify_passes == 0 {
        return String::new();
    }
    format!(", {} of {} draft tokens accepted in {} verify passes", s.accepted, s.drafted, s.verify_passes)
}

/// The JSON name of a finish reason.
fn finish_reason(finish: FinishReason) -> &'static str {
    match finish {
        FinishReason::Stop => "stop",
        FinishReason::Length => "length",
        FinishReason::Cancelled => "cancelled",
        FinishReason::ContextFull => "context_full",
    }
}
