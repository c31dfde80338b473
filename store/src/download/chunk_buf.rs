//! One chunk's bytes as they arrive from the network, in 4096-aligned memory, so the writer
//! hands them to a write that bypasses the page cache (`StoredFile::write_uncached_at`)
//! without a copy.
//!
//! Owns: [`ChunkBuf`] and where a chunk ends ([`chunk_end_target`]).
//! Must not: grow past its capacity: a chunk is at most `chunk_bytes`, so the bytes of a
//! network read that do not fit go into the next chunk.
//! Easy to break: chunks start at multiples of 4096 only if every chunk but a file's last is
//! a whole number of blocks: a chunk that starts unaligned (after a retry kept a partial
//! chunk) ends at the next aligned offset, so the ones after it are aligned again.

use k3_io::direct::ALIGN;
use k3_io::Blob;

/// A chunk being filled: `len` bytes of an aligned buffer, at most `limit`.
pub struct ChunkBuf {
    blob: Blob,
    len: usize,
    limit: usize,
}

impl ChunkBuf {
    /// An empty chunk of at most `capacity` bytes.
    pub fn new(capacity: usize) -> ChunkBuf {
        ChunkBuf { blob: Blob::zeroed(capacity), len: 0, limit: capacity }
    }

    /// A full chunk holding a copy of `bytes`.
    pub fn copy_of(bytes: &[u8]) -> ChunkBuf {
        let mut c = ChunkBuf::new(bytes.len());
        c.push(bytes);
        c
    }

    /// Emptied, to take at most `limit` bytes next (grown to hold them if it cannot).
    pub fn reset(&mut self, limit: usize) {
        if limit > self.blob.len() {
            self.blob = Blob::zeroed(limit);
        }
        self.len = 0;
        self.limit = limit;
    }

    /// Copies as much of `bytes` as fits; returns how many bytes it took.
    pub fn push(&mut self, bytes: &[u8]) -> usize {
        let take = bytes.len().min(self.limit - self.len);
        self.blob.bytes_mut()[self.len..self.len + take].copy_from_slice(&bytes[..take]);
        self.len += take;
        take
    }

    /// Whether the chunk holds its limit.
    pub fn is_full(&self) -> bool {
        self.len == self.limit
    }

    pub fn bytes(&self) -> &[u8] {
        &self.blob.bytes()[..self.len]
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// How many bytes the chunk starting at `at` of a file of `size` bytes takes: `chunk_bytes`,
/// less what brings its end back to a multiple of 4096 when it starts unaligned (chunks of
/// under two blocks, as tests use, are never shortened), and never past the file's end (a
/// small file's buffer is its size).
pub fn chunk_end_target(at: u64, size: u64, chunk_bytes: usize) -> usize {
    let misaligned = (at % ALIGN) as usize;
    let target = if chunk_bytes >= 2 * ALIGN as usize { chunk_bytes - misaligned } else { chunk_bytes };
    let left = usize::try_from(size.saturating_sub(at)).unwrap_or(usize::MAX);
    target.min(left).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_takes_what_fits_and_its_bytes_start_aligned() {
        let mut c = ChunkBuf::new(10_000);
        assert_eq!(c.push(&[7; 6000]), 6000);
        assert_eq!(c.push(&[8; 6000]), 4000, "only up to the limit");
        assert!(c.is_full());
        assert_eq!(c.bytes().len(), 10_000);
        assert_eq!(c.bytes().as_ptr() as usize % 4096, 0);
        assert_eq!((c.bytes()[5999], c.bytes()[6000]), (7, 8));
        c.reset(100);
        assert!(c.is_empty());
        assert_eq!(c.push(&[1; 200]), 100);
        c.reset(20_000);
        assert_eq!(c.push(&[2; 30_000]), 20_000, "grown to the new limit");
        assert!(c.is_full() && c.bytes().len() == 20_000);
    }

    #[test]
    fn a_chunk_that_starts_unaligned_ends_aligned() {
        let chunk = 64 << 20;
        let size = 1 << 40;
        assert_eq!(chunk_end_target(0, size, chunk), chunk);
        assert_eq!(chunk_end_target(5 * chunk as u64, size, chunk), chunk);
        let at = 3 * chunk as u64 + 1000;
        assert_eq!((at + chunk_end_target(at, size, chunk) as u64) % 4096, 0);
        assert_eq!(chunk_end_target(1000, size, 1024), 1024, "small test chunks are kept");
    }

    #[test]
    fn a_chunk_never_reaches_past_the_files_end() {
        let chunk = 64 << 20;
        assert_eq!(chunk_end_target(0, 2_000, chunk), 2_000, "a small file's buffer is its size");
        assert_eq!(chunk_end_target(chunk as u64, chunk as u64 + 5, chunk), 5);
    }
}
