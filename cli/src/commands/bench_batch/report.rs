//! What `k3 bench batch` prints: a row per batch size as it finishes (against the first
//! size), or `--json` derived from the typed [`BatchReport`].

use serde::Serialize;

use super::figures::SizeFigures;
use crate::out::Json;

/// `k3 bench batch --json`.
#[derive(Serialize)]
struct BatchReport {
    /// Always true: a conversation whose tokens differ between sizes is an error.
    tokens_checked_equal: bool,
    sizes: Vec<SizeJson>,
}

/// One batch size's figures.
#[derive(Serialize)]
struct SizeJson {
    batch: usize,
    prefill_seconds: f64,
    step_seconds: f64,
    aggregate_tokens_per_second: f64,
    ratio_to_first: f64,
    bytes_read_per_token: f64,
}

/// Prints every size's figures, against the first size's, as one JSON object.
pub(super) fn print_json(runs: &[SizeFigures]) {
    let base = &runs[0];
    let sizes = runs
        .iter()
        .map(|r| SizeJson {
            batch: r.size,
            prefill_seconds: r.prefill.as_secs_f64(),
            step_seconds: r.step.as_secs_f64(),
            aggregate_tokens_per_second: r.aggregate_tokens_per_second(),
            ratio_to_first: r.aggregate_tokens_per_second() / base.aggregate_tokens_per_second(),
            bytes_read_per_token: r.bytes_per_token,
        })
        .collect();
    outln!("{}", Json(&BatchReport { tokens_checked_equal: true, sizes }));
}

/// One size's row (the heading first, for the first size).
pub(super) fn print_row(r: &SizeFigures, base: &SizeFigures) {
    if std::ptr::eq(r, base) {
        outln!("batch | prefill | s/token (each) | aggregate tok/s | × batch {} | GB read per token", base.size);
    }
    outln!(
        "{:>5} | {:>6.2} s | {:>12.3} s | {:>15.3} | {:>8.2}× | {:>6.3}",
        r.size,
        r.prefill.as_secs_f64(),
        r.step.as_secs_f64(),
        r.aggregate_tokens_per_second(),
        r.aggregate_tokens_per_second() / base.aggregate_tokens_per_second(),
        r.bytes_per_token / 1e9
    );
}
