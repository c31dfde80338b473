//! The one I/O engine for streamed reads: a large read is split into aligned
//! sub-requests that are in flight together, the way a drive wants to be read.
//!
//! Owns: [`ReadPattern`] (request size and requests in flight, from `k3 bench disk` or a
//! conservative default) and [`Reader`], a pool of `depth` reader threads shared by the
//! trunk ring and the expert cache. A window is read into a caller's aligned blob in
//! `request_bytes` pieces (each clamped below 2 GiB, looping on short reads), with the
//! CRC-32 of the payload computed piece by piece on the reader threads and combined.
//! Must not: allocate on the hot path (the caller owns the destination), or report a
//! window as read before every piece is in.
//! Easy to break: pieces must start at 4096-aligned file offsets and buffer addresses for
//! O_DIRECT; only the last piece may end short of its page-rounded length.

use crate::error::{Error, Result};
use crate::io::blob::Blob;
use crate::io::direct::{widen, DirectFile, ALIGN};

/// One MiB.
pub const MIB: usize = 1 << 20;

/// How streamed reads are issued: pieces of `request_bytes`, `depth` of them at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadPattern {
    pub request_bytes: usize,
    pub depth: usize,
}

impl ReadPattern {
    /// Used when no drive measurement exists: 8 MiB pieces, 8 in flight (on the drives
    /// measured here, within 20 % of the best point and never a bad one).
    pub const DEFAULT: ReadPattern = ReadPattern { request_bytes: 8 * MIB, depth: 8 };

    /// Refuses a piece size that is not a positive multiple of 4096 or above 1 GiB, and a
    /// depth outside 1..=64.
    pub fn validate(&self) -> Result<()> {
        let size_ok = self.request_bytes > 0
            && self.request_bytes.is_multiple_of(ALIGN as usize)
            && self.request_bytes <= 1 << 30;
        if !size_ok {
            return Err(Error::Option {
                option: "read-size",
                reason: format!("{} bytes is not a multiple of 4096 between 4 KiB and 1 GiB", self.request_bytes),
            });
        }
        if !(1..=64).contains(&self.depth) {
            return Err(Error::Option {
                option: "read-depth",
                reason: format!("{} is not between 1 and 64", self.depth),
            });
        }
        Ok(())
    }
}

/// A window read into a blob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowRead {
    /// Where the payload starts in the blob.
    pub payload_start: usize,
    /// CRC-32 (IEEE) of the payload bytes.
    pub crc32: u32,
}

/// The shared reader pool.
pub struct Reader {
    pool: rayon::ThreadPool,
    pattern: ReadPattern,
}

impl Reader {
    pub fn new(pattern: ReadPattern) -> Result<Reader> {
        pattern.validate()?;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(pattern.depth)
            .thread_name(|i| format!("k3-read-{i}"))
            .build()
            .map_err(|e| Error::Option { option: "read-depth", reason: e.to_string() })?;
        Ok(Reader { pool, pattern })
    }

    pub fn pattern(&self) -> ReadPattern {
        self.pattern
    }

    /// Reads the widened window of `[offset, offset + len)` of `file` into `blob`, which
    /// must hold it; the pieces are in flight together on the reader threads.
    pub fn read_window_into(&self, file: &DirectFile, blob: &mut Blob, offset: u64, len: usize) -> Result<WindowRead> {
        let (start, padded) = widen(offset, len);
        if blob.capacity() < padded {
            let e = std::io::Error::new(std::io::ErrorKind::InvalidInput, "read buffer too small");
            return Err(Error::io(file.path(), e));
        }
        let payload_start = (offset - start) as usize;
        let need = payload_start + len;
        let piece = self.pattern.request_bytes;
        let pages = &mut blob.pages_mut()[..padded];
        let n_pieces = padded.div_ceil(piece);
        let mut results: Vec<Result<crc32fast::Hasher>> = Vec::with_capacity(n_pieces);
        let read_piece = |i: usize, buf: &mut [u8]| -> Result<crc32fast::Hasher> {
            let at = i * piece;
            let piece_need = need.saturating_sub(at).min(buf.len());
            file.read_range(buf, start + at as u64, piece_need)?;
            // The payload's part of this piece.
            let (from, to) = (payload_start.max(at) - at, piece_need);
            let mut crc = crc32fast::Hasher::new();
            if from < to {
                crc.update(&buf[from..to]);
            }
            Ok(crc)
        };
        if n_pieces == 1 {
            results.push(read_piece(0, pages));
        } else {
            results.resize_with(n_pieces, || Ok(crc32fast::Hasher::new()));
            self.pool.scope(|s| {
                for (i, (buf, slot)) in pages.chunks_mut(piece).zip(results.iter_mut()).enumerate() {
                    let read_piece = &read_piece;
                    s.spawn(move |_| *slot = read_piece(i, buf));
                }
            });
        }
        let mut crc = crc32fast::Hasher::new();
        for r in results {
            crc.combine(&r?);
        }
        Ok(WindowRead { payload_start, crc32: crc.finalize() })
    }
}
