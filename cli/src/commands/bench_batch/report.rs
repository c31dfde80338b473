//! What `k3 bench batch` prints: a row per batch size as it finishes (against the first
//! size), or `--json` derived from k3-bench's typed [`BatchReport`].

use k3_bench::batch::{BatchReport, SizeFigures, SizeRow};

use crate::out::Json;

/// Prints every size's figures, against the first size's, as one JSON object.
pub(super) fn print_json(runs: &[SizeFigures]) {
    outln!("{}", Json(&BatchReport::of(runs)));
}

/// One size's row (the heading first, for the first size).
pub(super) fn print_row(r: &SizeFigures, base: &SizeFigures) {
    if std::ptr::eq(r, base) {
        outln!("batch | prefill | s/token (each) | aggregate tok/s | × batch {} | GB read per token", base.size);
    }
    let row = SizeRow::of(r, base);
    outln!(
        "{:>5} | {:>6.2} s | {:>12.3} s | {:>15.3} | {:>8.2}× | {:>6.3}",
        row.batch,
        row.prefill_seconds,
        row.step_seconds,
        row.aggregate_tokens_per_second,
        row.ratio_to_first,
        row.bytes_read_per_token / 1e9
    );
}
