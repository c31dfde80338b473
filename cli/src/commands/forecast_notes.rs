//! The assumptions `k3 forecast` prints under its table and lists in its JSON: where the
//! model's sizes, the drive's rate and the kernels' rates came from, the hit-rate model,
//! and each preset's hit rates.

use super::forecast_disk::{DiskSource, DEFAULT_DISK_GBPS};
use super::forecast_report::{Planned, Report};

fn model_line(r: &Report) -> String {
    let trunk = if r.subject.trunk_streamed {
        "unpinned layers stream from a packed trunk"
    } else {
        "trunk resident (no --trunk)"
    };
    match &r.subject.model_dir {
        None => format!("released Kimi K3, sizes derived from the spec's tensor catalogue (§6.4); {trunk}"),
        Some(dir) => format!("checkpoint {}, sizes from its headers; {trunk}", dir.display()),
    }
}

fn disk_line(r: &Report) -> String {
    let (trunk, experts) = (r.disk.trunk_gbps, r.disk.expert_gbps);
    match &r.disk.source {
        DiskSource::Flag => format!("disk: {trunk:.2} GB/s for trunk and expert reads, given with --disk-gbps"),
        DiskSource::Default => format!(
            "disk: {DEFAULT_DISK_GBPS:.2} GB/s for trunk and expert reads, a conservative stated figure, not \
             measured (measure with --disk DIR or give --disk-gbps X)"
        ),
        DiskSource::Measured { best, trunk: t, experts: e, files, scratch } => format!(
            "disk: measured as the engine reads, through its reader (8 MiB pieces, 8 in flight, O_DIRECT): trunk \
             {trunk:.2} GB/s ({} MB windows one after another, {:.1} GB), experts {experts:.2} GB/s ({} B windows \
             at random offsets, {:.1} GB); the best point of a short O_DIRECT sweep was {:.2} GB/s ({:?} {} MiB × \
             {} in flight, 128 MB a point); over {}{}",
            t.window_bytes / 1_000_000,
            t.bytes_read as f64 / 1e9,
            e.window_bytes,
            e.bytes_read as f64 / 1e9,
            best.gbps,
            best.access,
            best.request_bytes >> 20,
            best.depth,
            if *scratch { "a scratch file".to_string() } else { format!("{} file(s)", files.len()) },
            if t.direct && e.direct { "" } else { "; O_DIRECT was refused, so the page cache is in the figure" }
        ),
    }
}

fn compute_line(r: &Report) -> String {
    let c = &r.compute;
    format!(
        "compute: trunk + lm_head bytes ÷ the BF16 matvec rate ({:.2} GB/s) + top-k × MoE layers routed experts ÷ the \
         MXFP4 expert rate ({:.2} GB/s), both measured on this CPU with {} thread(s) in {:.1} s; attention over the \
         context, recurrences and norms are not counted",
        c.rates.bf16_bytes_per_second / 1e9,
        c.rates.expert_bytes_per_second / 1e9,
        c.threads,
        c.seconds
    )
}

pub(super) fn model_notes(r: &Report) -> Vec<String> {
    let fp = &r.subject.footprint;
    let mut notes = vec![
        model_line(r),
        disk_line(r),
        compute_line(r),
        format!(
            "expert hit rate: expected = LRU (the engine's default) under independent uniform routing: each layer keeps \
             the experts of its last m = ⌊slots ÷ {w}⌋ tokens, a request hits with 1 − (1 − {k}/{e})^m; ceiling = \
             min(1, slots ÷ {w}): within a token each expert is asked for once, so a slot serves at most one of its \
             {w} requests; floor = 0 (LRU keeps nothing on an adversarial routing) unless every expert has a \
             slot, then 1 once warm",
            w = fp.expert_requests_per_token(),
            k = fp.top_k,
            e = fp.experts_per_layer()
        ),
        "bytes per token: unpinned trunk layers + expert misses × expert bytes; I/O seconds = trunk bytes ÷ the \
         trunk rate + expert bytes ÷ the expert rate"
            .into(),
        "s/token: low = max(I/O at the ceiling hit rate, compute) (reads overlapped with compute); high = I/O at the \
         floor hit rate + compute (serial); expected = max(I/O, compute) … I/O + compute at the expected hit rate"
            .into(),
    ];
    if let Some(c) = &r.coding {
        let (read, raw): (u64, u64) = (c.layer_read_bytes.iter().sum(), fp.trunk_total_bytes());
        notes.push(format!(
            "coded trunk: streamed layers read {:.3} × their raw bytes ({} of {}); their raw bytes ÷ the decoder's \
             measured {:.2} GB/s are part of compute",
            read as f64 / raw.max(1) as f64,
            k3_plan::format_bytes(read),
            k3_plan::format_bytes(raw),
            c.decode_bytes_per_second / 1e9
        ));
    }
    notes
}

pub(super) fn hit_note(r: &Report, p: &Planned) -> String {
    let w = r.subject.footprint.expert_requests_per_token().max(1);
    format!(
        "{} slots keep {} token(s) of {w} requests: hit rate floor {:.1} %, expected {:.1} %, ceiling {:.1} %",
        p.plan.cache_slots,
        p.plan.cache_slots / w,
        100.0 * p.forecast.hit_rate.floor,
        100.0 * p.forecast.hit_rate.uniform,
        100.0 * p.forecast.hit_rate.ceiling
    )
}
