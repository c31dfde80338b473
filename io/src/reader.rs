//! The one I/O engine for streamed reads: a large read is split into aligned
//! sub-requests that are in flight together, the way a drive wants to be read.
//!
//! Owns: [`ReadPattern`] (request size and requests in flight, from `k3 bench disk` or a
//! conservative default) and [`Reader`], a pool of `depth` reader threads shared by the
//! trunk ring and the expert cache. A window is read into a caller's aligned blob in
//! `request_bytes` pieces (each clamped below 2 GiB, looping on short reads), with the
//! checksum the caller asks for ([`Checksum`]: CRC-32 for the trunk, CRC32C for experts)
//! computed piece by piece on the reader threads and combined.
//! Priorities: pieces of every read share one FIFO queue; a read needed `Now` (experts)
//! queues all its pieces, a read needed `Next` (the trunk read-ahead) keeps at most
//! `depth` queued, so the bytes needed soonest wait behind at most one piece per thread.
//! Must not: allocate on the hot path (the caller owns the destination), or report a
//! window as read before every piece is in.
//! Easy to break: pieces must start at 4096-aligned file offsets and buffer addresses for
//! O_DIRECT; only the last piece may end short of its page-rounded length.
//! A generation's read ([`Reader::read_window_until`]) stops starting pieces once its
//! cancel token is set, so a stop waits for at most the pieces already reading.
//! Every `pread` goes through the reader's [`PositionedRead`] (`io::storage`): the OS's,
//! or a test's that injects faults ([`Reader::reading_through`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::blob::Blob;
use crate::busy::BusyClock;
use crate::direct::{widen, DirectFile, ALIGN};
use crate::error::{Error, Result};
use crate::storage::{os_read, PositionedRead};
use crate::CancelToken;

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

/// How soon a read's bytes are needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Urgency {
    /// Needed now (a layer's missing experts): every piece is queued at once.
    Now,
    /// Needed next (the next layer's trunk): at most `depth` pieces are queued at a time,
    /// so a read queued `Now` meanwhile waits behind at most that many pieces, never
    /// behind a whole layer.
    Next,
}

/// Which checksum of the payload a read computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checksum {
    /// CRC-32 (IEEE), what `trunk.json` records per layer.
    Crc32,
    /// CRC32C (Castagnoli), what the expert table records per routed expert.
    Crc32c,
    /// None: a coded trunk layer, whose CRC-32 covers the decoded bytes instead.
    None,
}

/// A window read into a blob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowRead {
    /// Where the payload starts in the blob.
    pub payload_start: usize,
    /// The asked [`Checksum`] of the payload bytes.
    pub checksum: u32,
}

/// One piece's checksum, combined in piece order.
enum PieceSum {
    Crc32(crc32fast::Hasher),
    Crc32c { crc: u32, len: usize },
    None,
}

impl PieceSum {
    fn of(kind: Checksum, bytes: &[u8]) -> PieceSum {
        match kind {
            Checksum::Crc32 => {
                let mut h = crc32fast::Hasher::new();
                h.update(bytes);
                PieceSum::Crc32(h)
            }
            Checksum::Crc32c => PieceSum::Crc32c { crc: crc32c::crc32c(bytes), len: bytes.len() },
            Checksum::None => PieceSum::None,
        }
    }

    /// Appends `next` (the bytes after this piece's) to `self`.
    fn combine(self, next: PieceSum) -> PieceSum {
        match (self, next) {
            (PieceSum::Crc32(mut a), PieceSum::Crc32(b)) => {
                a.combine(&b);
                PieceSum::Crc32(a)
            }
            (PieceSum::Crc32c { crc, len }, PieceSum::Crc32c { crc: c2, len: l2 }) => {
                PieceSum::Crc32c { crc: crc32c::crc32c_combine(crc, c2, l2), len: len + l2 }
            }
            // Every piece of a read uses the read's one kind.
            (a, _) => a,
        }
    }

    fn value(self) -> u32 {
        match self {
            PieceSum::Crc32(h) => h.finalize(),
            PieceSum::Crc32c { crc, .. } => crc,
            PieceSum::None => 0,
        }
    }
}

/// The shared reader pool.
pub struct Reader {
    pool: rayon::ThreadPool,
    pattern: ReadPattern,
    /// Pieces being read now (the dashboards' "reads in flight").
    in_flight: Arc<AtomicU64>,
    /// Time with any piece being read (`k3 bench stream`'s drive busy share).
    busy: Arc<BusyClock>,
    /// The storage seam every piece's `pread` goes through.
    storage: Arc<dyn PositionedRead>,
}

/// Counts one piece in flight, on the gauge and the busy clock, while it lives.
struct InFlight<'a> {
    gauge: &'a AtomicU64,
    busy: &'a BusyClock,
    since: std::time::Instant,
}

impl<'a> InFlight<'a> {
    fn enter(gauge: &'a AtomicU64, busy: &'a BusyClock) -> Self {
        gauge.fetch_add(1, Ordering::Relaxed);
        busy.enter();
        InFlight { gauge, busy, since: std::time::Instant::now() }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.gauge.fetch_sub(1, Ordering::Relaxed);
        self.busy.leave(self.since.elapsed());
    }
}

impl Reader {
    /// A reader over the operating system's `pread`.
    pub fn new(pattern: ReadPattern) -> Result<Reader> {
        Self::with_gauge(pattern, Arc::default(), Arc::default())
    }

    /// A reader that keeps `in_flight` at the number of pieces being read, and `busy`
    /// running while any is.
    pub fn with_gauge(pattern: ReadPattern, in_flight: Arc<AtomicU64>, busy: Arc<BusyClock>) -> Result<Reader> {
        pattern.validate()?;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(pattern.depth)
            .thread_name(|i| format!("k3-read-{i}"))
            .build()
            .map_err(|e| Error::Option { option: "read-depth", reason: e.to_string() })?;
        Ok(Reader { pool, pattern, in_flight, busy, storage: os_read() })
    }

    /// This reader with every `pread` going through `storage` (tests inject faults here).
    pub fn reading_through(self, storage: Arc<dyn PositionedRead>) -> Reader {
        Reader { storage, ..self }
    }

    pub fn pattern(&self) -> ReadPattern {
        self.pattern
    }

    /// Reads the widened window of `[offset, offset + len)` of `file` into `blob`, which
    /// must hold it; the pieces are in flight together on the reader threads (queued as
    /// `urgency` says), each piece's `sum` computed by the thread that read it.
    /// Never stopped (packing, benchmarks, reads that outlive a generation).
    pub fn read_window_into(
        &self,
        file: &DirectFile,
        blob: &mut Blob,
        offset: u64,
        len: usize,
        urgency: Urgency,
        sum: Checksum,
    ) -> Result<WindowRead> {
        self.read_window_until(file, blob, (offset, len), (urgency, sum), &CancelToken::new())
    }

    /// [`Reader::read_window_into`] for a generation: once `stop` is set, no further piece
    /// starts and the read is [`Error::Stopped`] as soon as the pieces already reading
    /// are in (they write into `blob`, so they are waited for, never abandoned).
    pub fn read_window_until(
        &self,
        file: &DirectFile,
        blob: &mut Blob,
        (offset, len): (u64, usize),
        (urgency, sum): (Urgency, Checksum),
        stop: &CancelToken,
    ) -> Result<WindowRead> {
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
        let mut results: Vec<Result<PieceSum>> = Vec::with_capacity(n_pieces);
        let read_piece = |i: usize, buf: &mut [u8]| -> Result<PieceSum> {
            if stop.is_cancelled() {
                return Err(Error::Stopped);
            }
            let at = i * piece;
            let piece_need = need.saturating_sub(at).min(buf.len());
            let counted = InFlight::enter(&self.in_flight, &self.busy);
            file.read_range_via(&*self.storage, buf, start + at as u64, piece_need)?;
            drop(counted);
            // The payload's part of this piece.
            let (from, to) = (payload_start.max(at) - at, piece_need);
            Ok(PieceSum::of(sum, if from < to { &buf[from..to] } else { &[] }))
        };
        if n_pieces == 1 {
            results.push(read_piece(0, pages));
        } else {
            results.resize_with(n_pieces, || Ok(PieceSum::of(sum, &[])));
            // Pieces are queued from this thread (FIFO with every other read's pieces);
            // `Next` reads keep at most `depth` of theirs queued or running.
            let window = Window::new(match urgency {
                Urgency::Now => n_pieces,
                Urgency::Next => self.pattern.depth,
            });
            self.pool.in_place_scope(|s| {
                for (i, (buf, slot)) in pages.chunks_mut(piece).zip(results.iter_mut()).enumerate() {
                    window.enter();
                    if stop.is_cancelled() {
                        // The pieces not queued keep their empty sums; the error decides.
                        *slot = Err(Error::Stopped);
                        window.leave();
                        break;
                    }
                    let (read_piece, window) = (&read_piece, &window);
                    s.spawn(move |_| {
                        *slot = read_piece(i, buf);
                        window.leave();
                    });
                }
            });
        }
        let mut total = PieceSum::of(sum, &[]);
        for r in results {
            total = total.combine(r?);
        }
        Ok(WindowRead { payload_start, checksum: total.value() })
    }
}

/// A counting gate: at most `size` pieces of one read between `enter` and `leave`.
struct Window {
    open: std::sync::Mutex<usize>,
    changed: std::sync::Condvar,
}

impl Window {
    fn new(size: usize) -> Self {
        Window { open: std::sync::Mutex::new(size.max(1)), changed: std::sync::Condvar::new() }
    }

    fn enter(&self) {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        while *open == 0 {
            open = self.changed.wait(open).unwrap_or_else(|p| p.into_inner());
        }
        *open -= 1;
    }

    fn leave(&self) {
        *self.open.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        self.changed.notify_one();
    }
}
