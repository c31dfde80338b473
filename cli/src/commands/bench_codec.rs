//! `k3 bench codec`: size ratio and decode rate of the trunk codec on one packed layer, and
//! the layer streamed coded vs raw, against a raw O_DIRECT read measured in the same run; as
//! text, or `--json` derived from the typed [`CodecReport`].

use k3_engine::advanced::bench::codec_rates::measure_codec;
use k3_engine::advanced::bench::codec_rates::CodecRates;
use k3_plan::format_bytes;
use serde::Serialize;

use super::Failure;
use crate::args::BenchCodecArgs;
use crate::out::Json;

/// Targets of issue 18 item 1 on this machine.
const MAX_SIZE_RATIO: f64 = 0.68;
const MIN_DECODE_GBPS_PER_CORE: f64 = 3.0;

pub fn codec(args: BenchCodecArgs) -> Result<(), Failure> {
    let threads = args.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let r = measure_codec(&args.trunk, args.layer, threads)?;
    let speedup = r.raw_layer_seconds / r.coded_layer_seconds.max(1e-12);
    if args.json {
        outln!("{}", Json(&CodecReport::of(&r, speedup)));
        return Ok(());
    }
    let mark = |ok: bool| if ok { "met" } else { "MISSED" };
    outln!(
        "layer {}: {} raw → {} coded ({:.4} × raw; {} of {} blocks stored raw) · target ≤ {MAX_SIZE_RATIO}: {}",
        r.layer_idx,
        format_bytes(r.raw_bytes),
        format_bytes(r.coded_bytes),
        r.size_ratio(),
        r.stored_blocks,
        r.blocks,
        mark(r.size_ratio() <= MAX_SIZE_RATIO)
    );
    outln!(
        "decode {:.2} GB/s of output on one core ({:.2} on {} threads) · target ≥ {MIN_DECODE_GBPS_PER_CORE} per core: {} · encode {:.2} GB/s",
        r.decode_gbps_one_core,
        r.decode_gbps_all,
        r.threads,
        mark(r.decode_gbps_one_core >= MIN_DECODE_GBPS_PER_CORE),
        r.encode_gbps
    );
    outln!(
        "streamed layer: raw O_DIRECT read {:.3} s ({:.2} GB/s) vs coded {:.3} s (read {:.3} s, decode {:.3} s on {} threads, overlapped) → coded {speedup:.2} × faster",
        r.raw_layer_seconds,
        r.raw_read_gbps,
        r.coded_layer_seconds,
        r.raw_layer_seconds * r.size_ratio(),
        r.raw_bytes as f64 / (r.decode_gbps_all * 1e9),
        r.threads
    );
    Ok(())
}

/// `k3 bench codec --json`: the layer's sizes, the codec's rates and the streamed layer's
/// times, raw and coded.
#[derive(Serialize)]
struct CodecReport {
    layer: usize,
    raw_bytes: u64,
    coded_bytes: u64,
    size_ratio: f64,
    blocks: usize,
    stored_blocks: usize,
    raw_read_gbps: f64,
    encode_gbps: f64,
    decode_gbps_one_core: f64,
    decode_gbps_all: f64,
    threads: usize,
    raw_layer_seconds: f64,
    coded_layer_seconds: f64,
    coded_over_raw_speedup: f64,
}

impl CodecReport {
    fn of(r: &CodecRates, speedup: f64) -> Self {
        CodecReport {
            layer: r.layer_idx,
            raw_bytes: r.raw_bytes,
            coded_bytes: r.coded_bytes,
            size_ratio: r.size_ratio(),
            blocks: r.blocks,
            stored_blocks: r.stored_blocks,
            raw_read_gbps: r.raw_read_gbps,
            encode_gbps: r.encode_gbps,
            decode_gbps_one_core: r.decode_gbps_one_core,
            decode_gbps_all: r.decode_gbps_all,
            threads: r.threads,
            raw_layer_seconds: r.raw_layer_seconds,
            coded_layer_seconds: r.coded_layer_seconds,
            coded_over_raw_speedup: speedup,
        }
    }
}
