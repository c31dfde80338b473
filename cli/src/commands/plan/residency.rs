//! The names `k3 plan` and `k3 bench stream` give a plan's layer residencies: one word per
//! layer, and runs of layers with one residency.

use k3_plan::LayerResidency;

/// One layer's residency in a word (as `k3 plan --json` lists them).
pub(super) fn residency_name(r: LayerResidency) -> &'static str {
    match r {
        LayerResidency::Pinned => "pinned",
        LayerResidency::PinnedCoded => "held coded",
        LayerResidency::Streamed => "streamed",
    }
}

/// `0–3 pinned · 4 held coded · 5–8 streamed`: runs of layers with one residency.
pub(in crate::commands) fn residency_runs(residency: &[LayerResidency]) -> String {
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
