//! What `k3 bench constrain` prints: the medians of the rounds as text, or `--json` derived
//! from k3-bench's typed [`ConstrainReport`] (milliseconds, and each mask's share of a step).

use k3_bench::constrain::ConstrainReport;

use crate::out::Json;

pub(super) fn print(r: &ConstrainReport, json: bool) {
    if json {
        println!("{}", Json(r));
        return;
    }
    println!(
        "constrained decoding, median of {} rounds, a {}-token reply (a required call):",
        r.rounds, r.reply_tokens
    );
    println!("  decode step on this model:          {:8.3} ms", r.decode_step_ms);
    println!(
        "  mask, model vocabulary ({:>6} ids): {:8.3} ms  ({:.1} % of a step)",
        r.vocabulary.model,
        r.mask_ms.model_vocabulary,
        100.0 * r.mask_share_of_decode_step.model_vocabulary
    );
    println!(
        "  mask, K3 vocabulary ({:>6} ids):    {:8.3} ms  ({:.1} % of this model's step)",
        r.vocabulary.k3,
        r.mask_ms.k3_vocabulary,
        100.0 * r.mask_share_of_decode_step.k3_vocabulary
    );
    println!(
        "  parser factory built once: {:.0} ms (model), {:.0} ms (K3)",
        r.factory_build_ms.model, r.factory_build_ms.k3
    );
}
