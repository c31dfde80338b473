//! Honest streaming counters, owned by each engine (never global).
//!
//! Owns: atomic counters the expert cache and the trunk streamer update, and the
//! [`StreamMetrics`] snapshot (and difference) that generation returns per token and per
//! run.
//! Must not: count an expert the batch prefetch just read as a resident hit: "true
//! resident" hits are experts that were in RAM before their layer's routing ran.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::io::BusyClock;

/// Counters shared by the streaming parts of one engine.
#[derive(Debug, Default)]
pub struct Counters {
    pub expert_requests: AtomicU64,
    pub expert_true_hits: AtomicU64,
    pub expert_prefetch_hits: AtomicU64,
    pub expert_misses: AtomicU64,
    pub expert_bytes_read: AtomicU64,
    pub trunk_bytes_read: AtomicU64,
    pub trunk_layers_read: AtomicU64,
    /// Bytes of embedding rows and head chunks read from the shards (a plan that reads
    /// them when used); shared with the model's readers.
    pub vocab_bytes_read: Arc<AtomicU64>,
    /// Time the compute thread was blocked on trunk layers.
    pub trunk_wait_ns: AtomicU64,
    /// Time the compute thread was blocked on routed experts.
    pub expert_wait_ns: AtomicU64,
    /// Time spent decoding coded trunk layers (on whichever thread read them).
    pub trunk_decode_ns: AtomicU64,
    /// Pieces being read right now by the reader pool (a gauge, not a count).
    pub reads_in_flight: Arc<AtomicU64>,
    /// Expert slots holding an expert or a read in flight (a gauge).
    pub expert_slots_used: AtomicU64,
    /// Time the reader pool had any piece in flight.
    pub drive_busy: Arc<BusyClock>,
}

impl Counters {
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// The compute thread waited `waited` for a trunk layer.
    pub fn add_trunk_wait(&self, waited: Duration) {
        Self::add(&self.trunk_wait_ns, duration_ns(waited));
    }

    /// A coded trunk layer took `took` to decode.
    pub fn add_trunk_decode(&self, took: Duration) {
        Self::add(&self.trunk_decode_ns, duration_ns(took));
    }

    /// The compute thread waited `waited` for routed experts.
    pub fn add_expert_wait(&self, waited: Duration) {
        Self::add(&self.expert_wait_ns, duration_ns(waited));
    }

    /// Expert slots in use now.
    pub fn expert_slots_used(&self) -> u64 {
        self.expert_slots_used.load(Ordering::Relaxed)
    }

    /// Pieces the reader pool is reading now.
    pub fn reads_in_flight(&self) -> u64 {
        self.reads_in_flight.load(Ordering::Relaxed)
    }

    pub fn snapshot(&self) -> StreamMetrics {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        StreamMetrics {
            expert_requests: get(&self.expert_requests),
            expert_true_hits: get(&self.expert_true_hits),
            expert_prefetch_hits: get(&self.expert_prefetch_hits),
            expert_misses: get(&self.expert_misses),
            expert_bytes_read: get(&self.expert_bytes_read),
            trunk_bytes_read: get(&self.trunk_bytes_read),
            trunk_layers_read: get(&self.trunk_layers_read),
            vocab_bytes_read: get(&self.vocab_bytes_read),
            trunk_wait: Duration::from_nanos(get(&self.trunk_wait_ns)),
            expert_wait: Duration::from_nanos(get(&self.expert_wait_ns)),
            trunk_decode: Duration::from_nanos(get(&self.trunk_decode_ns)),
            drive_busy: self.drive_busy.busy(),
            read_piece_time: self.drive_busy.piece_time(),
        }
    }
}

fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// What streaming did over some span (a token, a run).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamMetrics {
    /// Routed-expert requests (one per token, layer and selected expert).
    pub expert_requests: u64,
    /// Requests served by an expert that was in RAM before its layer's routing ran.
    pub expert_true_hits: u64,
    /// Requests served by an expert the batch prefetch read for this layer.
    pub expert_prefetch_hits: u64,
    /// Requests that had to read the expert on demand.
    pub expert_misses: u64,
    pub expert_bytes_read: u64,
    pub trunk_bytes_read: u64,
    pub trunk_layers_read: u64,
    /// Embedding rows and output head chunks read from the shards.
    pub vocab_bytes_read: u64,
    /// Time computation was blocked on trunk layers (measured at the wait points).
    pub trunk_wait: Duration,
    /// Time computation was blocked on routed experts (measured at the wait points).
    pub expert_wait: Duration,
    /// Time spent decoding coded trunk layers (mostly on the read-ahead thread).
    pub trunk_decode: Duration,
    /// Time the reader pool had any read piece in flight.
    pub drive_busy: Duration,
    /// The read pieces' own times, summed (÷ `drive_busy`: the mean depth while busy).
    pub read_piece_time: Duration,
}

impl StreamMetrics {
    /// `self − earlier`, counter by counter.
    pub fn since(&self, earlier: &StreamMetrics) -> StreamMetrics {
        StreamMetrics {
            expert_requests: self.expert_requests - earlier.expert_requests,
            expert_true_hits: self.expert_true_hits - earlier.expert_true_hits,
            expert_prefetch_hits: self.expert_prefetch_hits - earlier.expert_prefetch_hits,
            expert_misses: self.expert_misses - earlier.expert_misses,
            expert_bytes_read: self.expert_bytes_read - earlier.expert_bytes_read,
            trunk_bytes_read: self.trunk_bytes_read - earlier.trunk_bytes_read,
            trunk_layers_read: self.trunk_layers_read - earlier.trunk_layers_read,
            vocab_bytes_read: self.vocab_bytes_read - earlier.vocab_bytes_read,
            trunk_wait: self.trunk_wait.saturating_sub(earlier.trunk_wait),
            expert_wait: self.expert_wait.saturating_sub(earlier.expert_wait),
            trunk_decode: self.trunk_decode.saturating_sub(earlier.trunk_decode),
            drive_busy: self.drive_busy.saturating_sub(earlier.drive_busy),
            read_piece_time: self.read_piece_time.saturating_sub(earlier.read_piece_time),
        }
    }

    /// Adds `other`'s counters to these (per-token spans summed into a run).
    pub fn accumulate(&mut self, other: &StreamMetrics) {
        self.expert_requests += other.expert_requests;
        self.expert_true_hits += other.expert_true_hits;
        self.expert_prefetch_hits += other.expert_prefetch_hits;
        self.expert_misses += other.expert_misses;
        self.expert_bytes_read += other.expert_bytes_read;
        self.trunk_bytes_read += other.trunk_bytes_read;
        self.trunk_layers_read += other.trunk_layers_read;
        self.vocab_bytes_read += other.vocab_bytes_read;
        self.trunk_wait += other.trunk_wait;
        self.expert_wait += other.expert_wait;
        self.trunk_decode += other.trunk_decode;
        self.drive_busy += other.drive_busy;
        self.read_piece_time += other.read_piece_time;
    }

    /// Time computation waited for any read (trunk + experts).
    pub fn io_wait(&self) -> Duration {
        self.trunk_wait + self.expert_wait
    }

    /// True-resident hit rate (prefetch-served hits excluded), 0 when nothing was requested.
    pub fn true_hit_rate(&self) -> f64 {
        if self.expert_requests == 0 {
            0.0
        } else {
            self.expert_true_hits as f64 / self.expert_requests as f64
        }
    }
}

pub use crate::io::sysinfo::peak_rss_bytes;
