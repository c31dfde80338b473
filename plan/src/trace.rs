//! The expert-trace format `k3 sim-cache` replays: headerless little-endian `int32` pairs
//! `(layer, expert)`, one per routed-expert request, in request order.
//!
//! Owns: decoding that format from bytes, in pieces of any size ([`TraceDecoder`]), with
//! its refusals ([`TraceError`]): more than [`MAX_TRACE_BYTES`], a negative value, a length
//! that is not a whole number of pairs, no request at all.
//! Must not: do I/O (the CLI reads the file and pushes its pieces), silently truncate a
//! partial pair, or wrap a negative `int32` to a huge `u32`.
//! Easy to break: a pair may be split across two pushes; the carried bytes must be joined
//! before decoding, and the request index in an error counts whole pairs from the start.

use std::fmt;

use crate::cachesim::Request;

/// Bytes per request: two little-endian `int32`.
pub const PAIR_BYTES: usize = 8;
/// The largest trace accepted: 64 M requests (a 1,000-token K3 run records about 1.5 M).
pub const MAX_TRACE_BYTES: u64 = 512 << 20;

/// Why a trace cannot be replayed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TraceError {
    /// More bytes than [`MAX_TRACE_BYTES`].
    TooLarge { bytes: u64 },
    /// Request `index` has a negative layer or expert.
    Negative { index: usize, field: &'static str, value: i32 },
    /// The length is not a multiple of [`PAIR_BYTES`].
    PartialPair { bytes: u64 },
    /// No request at all.
    Empty,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceError::TooLarge { bytes } => {
                write!(f, "{bytes} bytes is more than the {MAX_TRACE_BYTES}-byte limit")
            }
            TraceError::Negative { index, field, value } => {
                write!(f, "request {index} has a negative {field} ({value})")
            }
            TraceError::PartialPair { bytes } => {
                write!(f, "{bytes} bytes is not a whole number of {PAIR_BYTES}-byte (layer, expert) int32 pairs")
            }
            TraceError::Empty => f.write_str("holds no requests"),
        }
    }
}

impl std::error::Error for TraceError {}

/// Decodes a trace pushed in pieces of any size.
#[derive(Debug, Default)]
pub struct TraceDecoder {
    requests: Vec<Request>,
    /// Bytes of a pair split across pushes.
    carry: Vec<u8>,
    bytes: u64,
}

impl TraceDecoder {
    /// A decoder that expects about `len` bytes (a capacity hint, capped at the limit).
    pub fn with_len_hint(len: u64) -> Self {
        let pairs = len.min(MAX_TRACE_BYTES) / PAIR_BYTES as u64;
        TraceDecoder { requests: Vec::with_capacity(usize::try_from(pairs).unwrap_or(0)), ..Self::default() }
    }

    /// Decodes the next piece of the trace.
    pub fn push(&mut self, piece: &[u8]) -> Result<(), TraceError> {
        self.bytes = self.bytes.saturating_add(piece.len() as u64);
        if self.bytes > MAX_TRACE_BYTES {
            return Err(TraceError::TooLarge { bytes: self.bytes });
        }
        let mut rest = piece;
        if !self.carry.is_empty() {
            let take = (PAIR_BYTES - self.carry.len()).min(rest.len());
            let (head, tail) = rest.split_at(take);
            self.carry.extend_from_slice(head);
            rest = tail;
            if self.carry.len() < PAIR_BYTES {
                return Ok(());
            }
            let pair = std::mem::take(&mut self.carry);
            self.decode(&pair)?;
        }
        let mut pairs = rest.chunks_exact(PAIR_BYTES);
        for pair in pairs.by_ref() {
            self.decode(pair)?;
        }
        self.carry.extend_from_slice(pairs.remainder());
        Ok(())
    }

    /// The whole trace, once every piece was pushed.
    pub fn finish(self) -> Result<Vec<Request>, TraceError> {
        if !self.carry.is_empty() {
            return Err(TraceError::PartialPair { bytes: self.bytes });
        }
        if self.requests.is_empty() {
            return Err(TraceError::Empty);
        }
        Ok(self.requests)
    }

    fn decode(&mut self, pair: &[u8]) -> Result<(), TraceError> {
        let index = self.requests.len();
        let field = |at: usize, field: &'static str| {
            let mut le = [0u8; 4];
            le.copy_from_slice(&pair[at..at + 4]);
            let value = i32::from_le_bytes(le);
            u32::try_from(value).map_err(|_| TraceError::Negative { index, field, value })
        };
        let request = Request { layer: field(0, "layer")?, expert: field(4, "expert")? };
        self.requests.push(request);
        Ok(())
    }
}

/// Decodes a whole trace held in memory.
pub fn decode_trace(bytes: &[u8]) -> Result<Vec<Request>, TraceError> {
    let mut decoder = TraceDecoder::with_len_hint(bytes.len() as u64);
    decoder.push(bytes)?;
    decoder.finish()
}

/// The bytes of `trace` in the trace format (requests whose values fit an `int32`).
pub fn encode_trace(trace: &[Request]) -> Vec<u8> {
    let mut out = Vec::with_capacity(trace.len() * PAIR_BYTES);
    for r in trace {
        out.extend_from_slice(&r.layer.to_le_bytes());
        out.extend_from_slice(&r.expert.to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_split_across_pushes_decodes_like_one_piece() {
        let bytes = encode_trace(&[Request { layer: 1, expert: 7 }, Request { layer: 2, expert: 895 }]);
        let mut d = TraceDecoder::default();
        for piece in bytes.chunks(3) {
            d.push(piece).expect("push");
        }
        assert_eq!(d.finish(), decode_trace(&bytes));
    }

    #[test]
    fn refusals_name_the_request_and_the_length() {
        let mut bytes = encode_trace(&[Request { layer: 1, expert: 7 }]);
        bytes.extend_from_slice(&(-1i32).to_le_bytes());
        bytes.extend_from_slice(&3i32.to_le_bytes());
        assert_eq!(decode_trace(&bytes), Err(TraceError::Negative { index: 1, field: "layer", value: -1 }));
        assert_eq!(decode_trace(&[0; 12]), Err(TraceError::PartialPair { bytes: 12 }));
        assert_eq!(decode_trace(&[]), Err(TraceError::Empty));
    }
}
