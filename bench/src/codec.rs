//! `k3 bench codec`: the trunk codec on one packed layer — its size ratio, its encode and
//! decode rates, and the layer streamed coded against a raw O_DIRECT read measured in the same
//! run ([`CodecReport`], from the engine's [`CodecRates`]).

use k3_engine::advanced::bench::codec_rates::CodecRates;
use serde::Serialize;

/// Targets of issue 18 item 1 on this machine: the coded layer's size over the raw one's, and
/// the decode rate of one core in GB/s of output.
pub const MAX_SIZE_RATIO: f64 = 0.68;
pub const MIN_DECODE_GBPS_PER_CORE: f64 = 3.0;

/// `k3 bench codec --json`: the layer's sizes, the codec's rates and the streamed layer's
/// times, raw and coded.
#[derive(Serialize)]
pub struct CodecReport {
    pub layer: usize,
    pub raw_bytes: u64,
    pub coded_bytes: u64,
    pub size_ratio: f64,
    pub blocks: usize,
    pub stored_blocks: usize,
    pub raw_read_gbps: f64,
    pub encode_gbps: f64,
    pub decode_gbps_one_core: f64,
    pub decode_gbps_all: f64,
    pub threads: usize,
    pub raw_layer_seconds: f64,
    pub coded_layer_seconds: f64,
    pub coded_over_raw_speedup: f64,
}

impl CodecReport {
    pub fn of(r: &CodecRates) -> Self {
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
            coded_over_raw_speedup: r.raw_layer_seconds / r.coded_layer_seconds.max(1e-12),
        }
    }

    /// The layer's time to be read coded: the raw read's time scaled by the size ratio.
    pub fn coded_read_seconds(&self) -> f64 {
        self.raw_layer_seconds * self.size_ratio
    }

    /// The layer's time to be decoded on all the run's threads.
    pub fn decode_seconds(&self) -> f64 {
        self.raw_bytes as f64 / (self.decode_gbps_all * 1e9)
    }

    pub fn size_target_met(&self) -> bool {
        self.size_ratio <= MAX_SIZE_RATIO
    }

    pub fn decode_target_met(&self) -> bool {
        self.decode_gbps_one_core >= MIN_DECODE_GBPS_PER_CORE
    }
}
