//! The speed forecast (PRODUCT §3 item 1): seconds per token of a memory plan, from the
//! bytes a token must read, the drive's bandwidth and this CPU's kernel throughput.
//!
//! Owns: [`forecast`], a pure function of a [`Footprint`], a [`MemoryPlan`], a bandwidth
//! and measured [`ComputeRates`], and the expert hit-rate model it uses ([`hit_rates`]).
//! Must not: measure anything (the engine times the kernels, `k3-store` the drive) or
//! know K3's numbers: everything comes from the footprint and the plan.
//!
//! The model, per decoded token:
//! * Reads: the unpinned trunk layers (all of them when the trunk streams and nothing is
//!   pinned; none when the trunk is resident), the output head when the plan reads it,
//!   plus one expert per cache miss; a token asks
//!   for `W = top_k × moe_layers` experts. I/O seconds = trunk bytes ÷ the drive's rate for
//!   trunk reads + expert bytes ÷ its rate for expert reads ([`DiskRates`]): the engine reads
//!   a layer as one long window and an expert as a 17.5 MB window at a scattered offset, and
//!   a drive need not read both alike (the shared virtio drive of our benchmarks read the
//!   first at 2.2 GB/s, the second at 1.2); the two share one pool of reader threads, so
//!   their times add.
//! * Hit rate, three figures: `floor` (what LRU is sure of whatever the routing: 0, unless
//!   every expert has a slot, then 1 once the cache is warm), `uniform` (LRU, the engine's
//!   default policy, under independent uniform routing: a layer's experts survive until
//!   `W` other requests per token have passed, so each layer keeps the experts of its last
//!   `m = ⌊slots / W⌋` tokens and a request hits with probability `1 − (1 − k/E)^m`; for the
//!   released model this is 0 below 1,472 slots, as spec §10 measured) and `ceiling`
//!   (`min(1, slots / W)`: within one token every expert is asked for once, so a slot
//!   serves at most one of its `W` requests, whatever the routing or policy).
//! * Compute: every trunk byte, the output head and the `W` routed experts pass through the
//!   kernels once: BF16 bytes ÷ the BF16 matvec rate + expert bytes ÷ the MXFP4 expert
//!   rate (other work — recurrences, attention over the context, norms — is not counted).
//! * A coded trunk ([`TrunkCoding`]): a streamed layer reads its coded bytes, and its raw
//!   bytes ÷ the decode rate are added to compute (decoding shares the CPU with the
//!   kernels), as they are for a layer held coded in RAM ([`LayerResidency::PinnedCoded`],
//!   decoded every token); pinned raw layers were decoded once, when pinned.
//! * Seconds per token: `low = max(io at the ceiling hit rate, compute)` (reads fully
//!   overlapped with compute, most hits), `high = io at the floor hit rate + compute`
//!   (serial, fewest hits); `expected` gives both combinations at the `uniform` hit rate.
//!
//! Easy to break: a plan whose trunk is resident reads no trunk bytes even though nothing
//! is "pinned" in the streaming sense; pass `trunk_streamed` as the plan was made.

use crate::memory::{Footprint, LayerResidency, MemoryPlan};
use crate::vocab::VocabPlacement;

/// This CPU's measured throughput, in bytes of weights per second, at the thread count
/// the forecast is for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ComputeRates {
    /// BF16 matrix × vector (trunk layers, head).
    pub bf16_bytes_per_second: f64,
    /// One routed expert (MXFP4 gate, up and down) for one token.
    pub expert_bytes_per_second: f64,
}

/// The drive's read bandwidth for each kind of read the engine makes, bytes per second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DiskRates {
    /// Trunk layers: whole windows, one after another through `trunk.bin`.
    pub trunk_bytes_per_second: f64,
    /// Routed experts: expert-sized windows at scattered offsets.
    pub expert_bytes_per_second: f64,
}

impl DiskRates {
    /// One figure for both (a bandwidth given rather than measured).
    pub fn same(bytes_per_second: f64) -> Self {
        DiskRates { trunk_bytes_per_second: bytes_per_second, expert_bytes_per_second: bytes_per_second }
    }
}

/// A trunk packed with a codec (`k3 pack --codec huffman`): what reading each layer costs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrunkCoding<'a> {
    /// Bytes a read of each layer takes from the drive (its coded size, or its raw size
    /// where the layer is stored raw), indexed like `Footprint::layer_trunk_bytes`.
    pub layer_read_bytes: &'a [u64],
    /// Decoded bytes per second of this CPU's decoder on the threads decoding.
    pub decode_bytes_per_second: f64,
}

/// What a forecast is made from.
#[derive(Debug, Clone, Copy)]
pub struct ForecastInput<'a> {
    pub footprint: &'a Footprint,
    pub plan: &'a MemoryPlan,
    /// True when unpinned layers stream from a packed trunk (the plan's `streamed_trunk`).
    pub trunk_streamed: bool,
    pub disk: DiskRates,
    pub rates: ComputeRates,
    /// `Some` when the packed trunk is coded: streamed layers read their coded bytes and
    /// are decoded on the CPU.
    pub coding: Option<TrunkCoding<'a>>,
}

/// A figure at each of the three expert hit rates of the module docs (the hit rates
/// themselves are fractions of requests served by the cache).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ByHitRate {
    pub floor: f64,
    pub uniform: f64,
    pub ceiling: f64,
}

impl ByHitRate {
    fn from_fn(hits: ByHitRate, f: impl Fn(f64) -> f64) -> Self {
        ByHitRate { floor: f(hits.floor), uniform: f(hits.uniform), ceiling: f(hits.ceiling) }
    }
}

/// Seconds per token: the range and the expected pair at the `uniform` hit rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SecondsPerToken {
    /// Overlapped, at the ceiling hit rate: `max(io, compute)`.
    pub low: f64,
    /// Serial, at the floor hit rate: `io + compute`.
    pub high: f64,
    /// `max(io, compute)` at the uniform hit rate.
    pub expected_overlapped: f64,
    /// `io + compute` at the uniform hit rate.
    pub expected_serial: f64,
}

/// The forecast for one plan.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Forecast {
    pub hit_rate: ByHitRate,
    /// Expert requests of one token (`top_k × moe_layers`).
    pub expert_requests: u64,
    /// Trunk bytes read per token (unpinned layers).
    pub trunk_bytes: u64,
    /// Expert bytes read per token (misses × expert bytes).
    pub expert_bytes: ByHitRate,
    /// Seconds reading trunk + expert bytes at the bandwidth.
    pub io_seconds: ByHitRate,
    /// Weight bytes the kernels pass per token: BF16 (trunk + head) and routed experts.
    pub compute_bf16_bytes: u64,
    pub compute_expert_bytes: u64,
    pub compute_seconds: f64,
    /// Of `compute_seconds`, decoding the streamed layers of a coded trunk.
    pub decode_seconds: f64,
    pub seconds_per_token: SecondsPerToken,
}

/// Why a forecast cannot be made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ForecastError {
    /// A rate that must be a positive, finite number is not.
    NotPositive { what: &'static str, value: f64 },
}

impl std::fmt::Display for ForecastError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ForecastError::NotPositive { what, value } => {
                write!(f, "{what} must be a positive number (got {value})")
            }
        }
    }
}

impl std::error::Error for ForecastError {}

fn positive(what: &'static str, value: f64) -> Result<f64, ForecastError> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(ForecastError::NotPositive { what, value })
    }
}

/// LRU under independent uniform routing: each layer keeps its last `⌊slots / W⌋` tokens'
/// experts, so a request hits with probability `1 − (1 − k/E)^m`; 1 when every expert fits.
pub fn lru_uniform_hit_rate(slots: u64, fp: &Footprint) -> f64 {
    let (requests, per_layer) = (fp.expert_requests_per_token(), fp.experts_per_layer());
    if requests == 0 || per_layer == 0 {
        return 0.0;
    }
    if slots >= fp.n_experts_total {
        return 1.0;
    }
    let tokens_kept = (slots / requests).min(i32::MAX as u64) as i32;
    let miss_one = 1.0 - fp.top_k.min(per_layer) as f64 / per_layer as f64;
    1.0 - miss_one.powi(tokens_kept)
}

/// The most any policy can hit on any routing: a slot serves at most one of a token's
/// `W` requests (each expert is asked for once per token), so `min(1, slots / W)`.
pub fn hit_rate_ceiling(slots: u64, fp: &Footprint) -> f64 {
    match fp.expert_requests_per_token() {
        0 => 0.0,
        requests => (slots as f64 / requests as f64).min(1.0),
    }
}

/// The three hit rates of the module docs for a cache of `slots`.
pub fn hit_rates(slots: u64, fp: &Footprint) -> ByHitRate {
    let floor = if fp.n_experts_total > 0 && slots >= fp.n_experts_total { 1.0 } else { 0.0 };
    ByHitRate { floor, uniform: lru_uniform_hit_rate(slots, fp), ceiling: hit_rate_ceiling(slots, fp) }
}

/// Trunk bytes one token reads: the plan's streamed layers when the trunk streams, and the
/// output head when the plan reads it ([`VocabPlacement::Read`]).
pub fn trunk_bytes_per_token(fp: &Footprint, plan: &MemoryPlan, trunk_streamed: bool) -> u64 {
    if !trunk_streamed {
        return 0;
    }
    streamed_layers(fp, plan).map(|(_, raw)| raw).sum::<u64>().saturating_add(head_read_bytes(fp, plan))
}

/// The head's bytes when the plan reads them every token.
fn head_read_bytes(fp: &Footprint, plan: &MemoryPlan) -> u64 {
    match plan.vocab {
        VocabPlacement::Read => fp.head_bytes,
        VocabPlacement::Held => 0,
    }
}

/// `(layer, raw bytes)` of each layer the plan streams.
fn streamed_layers<'a>(fp: &'a Footprint, plan: &'a MemoryPlan) -> impl Iterator<Item = (usize, u64)> + 'a {
    let residency = |l: usize| plan.residency.get(l).copied().unwrap_or(LayerResidency::Streamed);
    fp.layer_trunk_bytes.iter().copied().enumerate().filter(move |&(l, _)| residency(l) == LayerResidency::Streamed)
}

/// With a coded trunk: the bytes one token reads (each streamed layer's read size) and the
/// bytes it decodes (the raw size of each streamed layer stored coded, and of each layer
/// held coded in RAM).
pub fn coded_trunk_per_token(fp: &Footprint, plan: &MemoryPlan, trunk_streamed: bool, c: TrunkCoding) -> (u64, u64) {
    if !trunk_streamed {
        return (0, 0);
    }
    let (read, streamed_decoded) = streamed_layers(fp, plan).fold((0u64, 0u64), |(read, decoded), (l, raw)| {
        let stored = c.layer_read_bytes.get(l).copied().unwrap_or(raw);
        (read.saturating_add(stored), if stored < raw { decoded.saturating_add(raw) } else { decoded })
    });
    let held_coded = fp
        .layer_trunk_bytes
        .iter()
        .zip(&plan.residency)
        .filter(|(_, r)| **r == LayerResidency::PinnedCoded)
        .fold(0u64, |a, (&raw, _)| a.saturating_add(raw));
    (read.saturating_add(head_read_bytes(fp, plan)), streamed_decoded.saturating_add(held_coded))
}

/// The forecast of the module docs.
pub fn forecast(input: &ForecastInput<'_>) -> Result<Forecast, ForecastError> {
    let fp = input.footprint;
    let trunk_read_rate = positive("the disk bandwidth for trunk reads", input.disk.trunk_bytes_per_second)?;
    let expert_read_rate = positive("the disk bandwidth for expert reads", input.disk.expert_bytes_per_second)?;
    let bf16_rate = positive("the BF16 kernel rate", input.rates.bf16_bytes_per_second)?;
    let expert_rate = positive("the expert kernel rate", input.rates.expert_bytes_per_second)?;
    let hits = hit_rates(input.plan.cache_slots, fp);
    let requests = fp.expert_requests_per_token();
    let (trunk, decoded) = match input.coding {
        None => (trunk_bytes_per_token(fp, input.plan, input.trunk_streamed), 0),
        Some(c) => coded_trunk_per_token(fp, input.plan, input.trunk_streamed, c),
    };
    let decode = match input.coding {
        Some(c) if decoded > 0 => decoded as f64 / positive("the trunk decode rate", c.decode_bytes_per_second)?,
        _ => 0.0,
    };
    let expert_bytes = ByHitRate::from_fn(hits, |h| requests as f64 * (1.0 - h) * fp.expert_bytes as f64);
    let io = ByHitRate::from_fn(hits, |h| {
        trunk as f64 / trunk_read_rate + requests as f64 * (1.0 - h) * fp.expert_bytes as f64 / expert_read_rate
    });
    let bf16 = fp.trunk_total_bytes() + fp.head_bytes;
    let experts = requests * fp.expert_bytes;
    let compute = bf16 as f64 / bf16_rate + experts as f64 / expert_rate + decode;
    Ok(Forecast {
        hit_rate: hits,
        expert_requests: requests,
        trunk_bytes: trunk,
        expert_bytes,
        io_seconds: io,
        compute_bf16_bytes: bf16,
        compute_expert_bytes: experts,
        compute_seconds: compute,
        decode_seconds: decode,
        seconds_per_token: SecondsPerToken {
            low: io.ceiling.max(compute),
            high: io.floor + compute,
            expected_overlapped: io.uniform.max(compute),
            expected_serial: io.uniform + compute,
        },
    })
}
