//! `k3 pack`: writes trunk.bin + trunk.json + experts.crc32c.json, showing progress on stderr.

use std::time::Instant;

use k3_engine::tools::{pack_trunk_coded, PackProgress, PackStage, TrunkCodec};
use k3_plan::format_bytes;
use serde_json::json;

use super::{require_dir, Failure};
use crate::args::PackArgs;

/// The codec `--codec` names; `auto` measures this CPU's decoder and the drive first.
fn choose_codec(args: &PackArgs) -> Result<TrunkCodec, Failure> {
    if args.codec != "auto" {
        return TrunkCodec::parse(&args.codec)
            .ok_or_else(|| Failure { exit_code: 2, message: format!("--codec {}: raw, huffman or auto", args.codec) });
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let decode = k3_engine::measure_decode_rate(threads)?;
    let (best, _) = k3_store::best_over(&[super::disk::shards(&args.model)?], &k3_store::floor_grid())?;
    let drive = best.map_or(0.0, |b| b.gbps * 1e9);
    let (codec, why) = TrunkCodec::for_rates(decode, drive);
    eprintln!("--codec auto: {why} → {}", codec.name());
    Ok(codec)
}

pub fn pack(args: PackArgs) -> Result<(), Failure> {
    require_dir("--model", &args.model)?;
    let start = Instant::now();
    let mut last_percent = u64::MAX;
    let mut line = crate::progress::StepLine::new();
    let mut report = |p: PackProgress| {
        let percent = (p.bytes_done * 100).checked_div(p.bytes_total).unwrap_or(100);
        if percent != last_percent {
            last_percent = percent;
            let rate = p.bytes_done as f64 / start.elapsed().as_secs_f64().max(1e-9) / 1e6;
            let what = match p.stage {
                PackStage::Trunk => "packing layer",
                PackStage::ExpertSums => "checksumming the experts of layer",
            };
            let step = format!("{what} {}/{}", p.layer_idx + 1, p.n_layers);
            line.show(&step, &format!("{step} · {percent}% · {rate:.0} MB/s"));
        }
    };
    let codec = choose_codec(&args)?;
    let summary = pack_trunk_coded(&args.model, &args.out, codec, &mut report)?;
    line.finish();
    let secs = start.elapsed().as_secs_f64();
    if args.json {
        let v = json!({
            "trunk_bin": summary.trunk_bin, "trunk_json": summary.trunk_json,
            "payload_bytes": summary.payload_bytes, "file_bytes": summary.file_bytes, "seconds": secs,
            "expert_table": summary.expert_table, "expert_bytes": summary.expert_bytes,
            "experts_from_download": summary.experts_from_download, "experts_read": summary.experts_read,
            "codec": codec.name(),
        });
        outln!("{v}");
    } else {
        outln!(
            "packed {} of trunk into {} ({} {}) and a CRC32C of each routed expert ({} of experts: {} named from the download's checksums, {} read) into {} in {secs:.1} s",
            format_bytes(summary.payload_bytes),
            summary.trunk_bin.display(),
            format_bytes(summary.file_bytes),
            match codec {
                TrunkCodec::Raw => "with alignment".to_string(),
                TrunkCodec::Huffman =>
                    format!("coded, {:.3} × the run", summary.file_bytes as f64 / summary.payload_bytes.max(1) as f64),
            },
            format_bytes(summary.expert_bytes),
            summary.experts_from_download,
            summary.experts_read,
            summary.expert_table.display()
        );
    }
    Ok(())
}
