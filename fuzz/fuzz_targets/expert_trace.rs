//! The expert trace `k3 sim-cache` replays (`k3_plan::trace`), then the simulator on it
//! (`k3_plan::cachesim`).
//!
//! Input: one byte (the piece size of a chunked decode, 1..=256), then the trace bytes.
//! Invariants: decoding in pieces equals decoding at once; an accepted trace re-encodes to
//! exactly its bytes and holds whole non-negative pairs. On traces of at most 256
//! requests (longer ones only repeat what those reach; 2,048 made this target run at
//! 177–473 inputs a second), at a few capacities: hits + misses = requests for every policy; no policy
//! misses less than the distinct experts (compulsory misses), exactly that when the cache
//! holds them all; Belady's MIN hits at least as often as LRU and LayerCycle.
#![no_main]

use k3_plan::cachesim::{distinct_count, simulate, PolicyKind};
use k3_plan::trace::{decode_trace, encode_trace, TraceDecoder};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&piece, bytes)) = data.split_first() else { return };
    let whole = decode_trace(bytes);
    let mut decoder = TraceDecoder::default();
    let pieces: Result<(), _> = bytes.chunks(usize::from(piece).max(1)).try_for_each(|p| decoder.push(p));
    let chunked = pieces.and_then(|()| decoder.finish());
    assert_eq!(whole, chunked, "a chunked decode differs");
    let Ok(trace) = whole else { return };
    assert_eq!(encode_trace(&trace), bytes, "the trace does not re-encode to its bytes");
    assert!(trace.iter().all(|r| r.layer <= i32::MAX as u32 && r.expert <= i32::MAX as u32));
    if trace.len() > 256 {
        return;
    }
    let distinct = distinct_count(&trace) as u64;
    for capacity in [1, 2, usize::from(piece), distinct as usize] {
        let run = |kind| simulate(&trace, capacity, kind).expect("the built-in policies keep the contract");
        let [lru, min, cycle] = [PolicyKind::Lru, PolicyKind::Min, PolicyKind::LayerCycle].map(run);
        for r in [lru, min, cycle] {
            assert_eq!(r.hits + r.misses, trace.len() as u64);
            if capacity > 0 {
                assert!(r.misses >= distinct, "fewer misses than distinct experts");
            }
            if capacity as u64 >= distinct && capacity > 0 {
                assert_eq!(r.misses, distinct, "a cache that holds everything still evicted");
            }
        }
        assert!(min.hits >= lru.hits, "MIN {} < LRU {} at {capacity}", min.hits, lru.hits);
        assert!(min.hits >= cycle.hits, "MIN {} < LayerCycle {} at {capacity}", min.hits, cycle.hits);
    }
});
