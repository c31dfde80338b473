//! `k3 bench codec`: size ratio and decode rate of the trunk codec on one packed layer, and
//! the layer streamed coded vs raw, against a raw O_DIRECT read measured in the same run; as
//! text, or `--json` derived from k3-bench's typed [`CodecReport`].

use k3_bench::codec::{CodecReport, MAX_SIZE_RATIO, MIN_DECODE_GBPS_PER_CORE};
use k3_engine::advanced::bench::codec_rates::measure_codec;
use k3_plan::format_bytes;

use super::Failure;
use crate::args::BenchCodecArgs;
use crate::out::Json;

pub fn codec(args: BenchCodecArgs) -> Result<(), Failure> {
    let threads = args.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let r = CodecReport::of(&measure_codec(&args.trunk, args.layer, threads)?);
    if args.json {
        outln!("{}", Json(&r));
        return Ok(());
    }
    let mark = |ok: bool| if ok { "met" } else { "MISSED" };
    outln!(
        "layer {}: {} raw → {} coded ({:.4} × raw; {} of {} blocks stored raw) · target ≤ {MAX_SIZE_RATIO}: {}",
        r.layer,
        format_bytes(r.raw_bytes),
        format_bytes(r.coded_bytes),
        r.size_ratio,
        r.stored_blocks,
        r.blocks,
        mark(r.size_target_met())
    );
    outln!(
        "decode {:.2} GB/s of output on one core ({:.2} on {} threads) · target ≥ {MIN_DECODE_GBPS_PER_CORE} per core: {} · encode {:.2} GB/s",
        r.decode_gbps_one_core,
        r.decode_gbps_all,
        r.threads,
        mark(r.decode_target_met()),
        r.encode_gbps
    );
    outln!(
        "streamed layer: raw O_DIRECT read {:.3} s ({:.2} GB/s) vs coded {:.3} s (read {:.3} s, decode {:.3} s on {} threads, overlapped) → coded {:.2} × faster",
        r.raw_layer_seconds,
        r.raw_read_gbps,
        r.coded_layer_seconds,
        r.coded_read_seconds(),
        r.decode_seconds(),
        r.threads,
        r.coded_over_raw_speedup
    );
    Ok(())
}
