//! The streamed trunk: a pinned prefix of layers in RAM, the rest read from `trunk.bin`
//! through a ring of one or two slots, the next layer read while the current computes.
//!
//! Owns: the ring (at most `ring_slots` unpinned layers alive: the one computing and, with
//! two slots, the one being read ahead) and its buffers, reused layer after layer (no
//! allocation or zeroing per read); reads of whole runs through the shared `io::Reader`
//! (pieces in flight together, CRC-32 computed piece by piece on the reader threads); the
//! CRC check of every run read; and binding a layer as views into its buffer. A layer packed
//! with `--codec huffman` is read and decoded into its ring buffer by `trunk_codec` (its
//! segments decoded on this module's two reader threads while later ones are read); a
//! pinned coded layer is decoded once, when pinned.
//! Must not: hand out a layer whose read or check failed (the error goes to the
//! generation), read ahead with one slot, or keep a cancelled generation waiting on a read
//! (waits and reads stop within [`STOP_TICK`] or one read piece).
//! Also owns changing the pinned prefix between generations ([`StreamedTrunk::repin`]):
//! unpinning drops layers at once, pinning reads them from `trunk.bin` (CRC-checked).
//! Easy to break: layers are used in order `0..n` on every pass; after the last layer the
//! read-ahead wraps to the first unpinned layer for the next pass. A repin first drains
//! the read-ahead, so no layer outside the new plan stays alive.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

use crate::config::ModelConfig;
use crate::error::{Error, Result};
use crate::events::CancelToken;
use crate::format::TensorIndex;
use crate::io::{Blob, BlobPool, Checksum, DirectFile, Reader, Urgency, WindowRead};
use crate::model::bind::{Binder, RunView};
use crate::model::trunk::TrunkSource;
use crate::model::{bind_layer, Layer};
use crate::stream::metrics::Counters;
use crate::stream::trunk_codec::{read_coded_layer, CodedRead, CodedSpan, Staging};
use crate::stream::trunk_manifest::{PackedLayer, PackedTrunk};

/// How often a wait for a read in flight looks at the generation's cancel token.
pub(crate) const STOP_TICK: Duration = Duration::from_millis(10);

/// The layer being read ahead: `None` while in flight.
type Ahead = Option<(usize, Option<Result<Arc<Layer>>>)>;

struct Inner {
    /// Layers `0..pinned.len()`, resident.
    pinned: RwLock<Vec<Arc<Layer>>>,
    packed: PackedTrunk,
    file: DirectFile,
    index: Arc<TensorIndex>,
    cfg: ModelConfig,
    ahead: Mutex<Ahead>,
    changed: Condvar,
    counters: Arc<Counters>,
    /// The shared I/O engine (pieces in flight together).
    io: Arc<Reader>,
    /// Ring slot buffers, reused layer after layer.
    ring: Mutex<RingBuffers>,
    /// Staging buffers of coded layers' reads.
    staging: Staging,
}

/// The ring's buffers: idle ones, and the ones layers are bound in (each comes back when
/// its layer is dropped).
struct RingBuffers {
    idle: BlobPool,
    in_use: Vec<Arc<Blob>>,
}

impl RingBuffers {
    fn new(slot_bytes: usize, slots: usize) -> Self {
        RingBuffers { idle: BlobPool::new(slot_bytes, slots.max(1)), in_use: Vec::new() }
    }

    /// A buffer of at least `bytes`: a reclaimed one when a layer let go of it.
    fn take(&mut self, bytes: usize) -> Blob {
        let (free, held): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.in_use).into_iter().partition(|b| Arc::strong_count(b) == 1);
        self.in_use = held;
        for blob in free {
            self.idle.give(blob);
        }
        let blob = self.idle.take();
        if blob.capacity() >= bytes {
            blob
        } else {
            Blob::zeroed(bytes)
        }
    }
}

/// The pinned prefix and the ring of a streamed trunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingShape {
    pub n_pinned: usize,
    pub ring_slots: usize,
}

/// Bytes of a ring buffer able to hold every layer from `n_pinned` on, widened for
/// O_DIRECT as the reader reads it.
fn ring_slot_bytes(packed: &PackedTrunk, n_pinned: usize) -> usize {
    packed.layers[n_pinned.min(packed.layers.len())..].iter().map(PackedLayer::buffer_len).max().unwrap_or(0)
}

/// A trunk streamed from a packed file under a memory plan.
pub struct StreamedTrunk {
    inner: Arc<Inner>,
    /// Two ring slots: read the next layer while this one computes.
    read_ahead: AtomicBool,
    /// The thread that runs the read-ahead (its pieces go to the shared reader).
    reader: rayon::ThreadPool,
}

impl StreamedTrunk {
    /// Pins layers `0..n_pinned` (read from the shards now) and streams the rest through
    /// `io`; with `ring_slots == 2` the next layer is read while the current one computes.
    pub fn new(
        packed: PackedTrunk,
        index: Arc<TensorIndex>,
        cfg: &ModelConfig,
        ring: RingShape,
        io: Arc<Reader>,
        counters: Arc<Counters>,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Self> {
        let RingShape { n_pinned, ring_slots } = ring;
        let slot_bytes = ring_slot_bytes(&packed, n_pinned);
        let file = DirectFile::open(&packed.bin_path)?;
        // Two threads: the read-ahead runs on one, and a coded layer's blocks decode on both.
        let reader = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .thread_name(|_| "k3-trunk-io".into())
            .build()
            .map_err(|e| Error::Option { option: "trunk reader", reason: e.to_string() })?;
        let inner = Inner {
            pinned: RwLock::new(Vec::new()),
            packed,
            file,
            index,
            cfg: cfg.clone(),
            ahead: Mutex::new(None),
            changed: Condvar::new(),
            counters,
            io,
            ring: Mutex::new(RingBuffers::new(slot_bytes, ring_slots)),
            staging: Staging::default(),
        };
        let trunk = StreamedTrunk { inner: Arc::new(inner), read_ahead: AtomicBool::new(ring_slots >= 2), reader };
        // The pinned prefix: whole runs from trunk.bin, CRC-checked like every streamed read.
        let to_pin = n_pinned.min(cfg.n_layers);
        for l in 0..to_pin {
            let layer = trunk.inner.read_pinned_layer(l)?;
            trunk.inner.write_pinned().push(layer);
            progress(l + 1, to_pin);
        }
        Ok(trunk)
    }

    /// Layers resident now.
    pub fn n_pinned(&self) -> usize {
        self.inner.n_pinned()
    }

    /// Changes the pinned prefix to `0..n_pinned` and the ring to `ring_slots`, between
    /// generations: layers beyond the new prefix are dropped first, then missing ones are
    /// read from `trunk.bin` (`progress(done, total)` after each). On a failed read the
    /// layers pinned so far stay pinned and the error names the layer.
    pub fn repin(&self, n_pinned: usize, ring_slots: usize, progress: &mut dyn FnMut(usize, usize)) -> Result<()> {
        let n_pinned = n_pinned.min(self.inner.cfg.n_layers);
        self.read_ahead.store(ring_slots >= 2, Ordering::Relaxed);
        self.inner.drain_ahead();
        // New ring buffers sized for the layers that stream under the new prefix.
        let slot_bytes = ring_slot_bytes(&self.inner.packed, n_pinned);
        *self.inner.lock_ring() = RingBuffers::new(slot_bytes, ring_slots);
        let have = self.n_pinned();
        if n_pinned <= have {
            self.inner.write_pinned().truncate(n_pinned);
            return Ok(());
        }
        for l in have..n_pinned {
            let layer = self.inner.read_pinned_layer(l)?;
            self.inner.write_pinned().push(layer);
            progress(l + 1 - have, n_pinned - have);
        }
        Ok(())
    }

    /// True when reads bypass the page cache with O_DIRECT (false: buffered fallback).
    pub fn is_direct(&self) -> bool {
        self.inner.file.is_direct()
    }

    fn start_read_ahead(&self, after: usize) {
        let n = self.inner.cfg.n_layers;
        let first = self.inner.n_pinned();
        if !self.read_ahead.load(Ordering::Relaxed) || first >= n {
            return;
        }
        let next = if after + 1 < n { after + 1 } else { first };
        *self.inner.lock() = Some((next, None));
        let inner = self.inner.clone();
        self.reader.spawn(move || {
            // Never stopped: the layer is the next pass's whichever generation runs it.
            let result = inner.read_layer(next, &CancelToken::new());
            let mut ahead = inner.lock();
            if let Some((l, slot)) = ahead.as_mut() {
                if *l == next {
                    *slot = Some(result);
                }
            }
            drop(ahead);
            inner.changed.notify_all();
        });
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Ahead> {
        self.ahead.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn n_pinned(&self) -> usize {
        self.pinned.read().unwrap_or_else(|p| p.into_inner()).len()
    }

    fn pinned_layer(&self, layer_idx: usize) -> Option<Arc<Layer>> {
        self.pinned.read().unwrap_or_else(|p| p.into_inner()).get(layer_idx).cloned()
    }

    fn write_pinned(&self) -> std::sync::RwLockWriteGuard<'_, Vec<Arc<Layer>>> {
        self.pinned.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits for a read-ahead in flight and drops it (its layer leaves RAM).
    fn drain_ahead(&self) {
        let mut ahead = self.lock();
        while matches!(ahead.as_ref(), Some((_, None))) {
            ahead = self.changed.wait(ahead).unwrap_or_else(|p| p.into_inner());
        }
        *ahead = None;
    }

    fn lock_ring(&self) -> MutexGuard<'_, RingBuffers> {
        self.ring.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reads, checks and binds unpinned layer `l` into a ring buffer (stopped by `stop`).
    fn read_layer(&self, l: usize, stop: &CancelToken) -> Result<Arc<Layer>> {
        let p = &self.packed.layers[l];
        let blob = self.lock_ring().take(p.buffer_len());
        let (layer, blob) = self.read_layer_into(l, blob, stop)?;
        self.lock_ring().in_use.push(blob);
        Ok(layer)
    }

    /// Reads, checks and binds layer `l` into a buffer of its own (a pinned layer).
    fn read_pinned_layer(&self, l: usize) -> Result<Arc<Layer>> {
        let p = &self.packed.layers[l];
        let blob = Blob::zeroed(p.buffer_len());
        Ok(self.read_layer_into(l, blob, &CancelToken::new())?.0)
    }

    /// Reads layer `l`'s run into `blob` through the shared reader (its CRC-32 computed
    /// piece by piece as the pieces arrive), checks it and binds the layer in place.
    fn read_layer_into(&self, l: usize, mut blob: Blob, stop: &CancelToken) -> Result<(Arc<Layer>, Arc<Blob>)> {
        let p = &self.packed.layers[l];
        let read = match p.coding {
            None => {
                let window = (p.file_off, p.run_len as usize);
                self.io.read_window_until(&self.file, &mut blob, window, (Urgency::Next, Checksum::Crc32), stop)?
            }
            Some(span) => self.read_coded_layer(l, &mut blob, span, stop)?,
        };
        if read.checksum != p.crc32 {
            return Err(Error::Trunk {
                path: self.packed.bin_path.clone(),
                reason: format!(
                    "layer {l} fails its CRC-32 check (stored {:08x}, read {:08x}): re-run `k3 pack`",
                    p.crc32, read.checksum
                ),
            });
        }
        Counters::add(&self.counters.trunk_bytes_read, p.stored_len());
        Counters::add(&self.counters.trunk_layers_read, 1);
        let blob = Arc::new(blob);
        let run = RunView {
            blob: blob.clone(),
            payload_start: read.payload_start,
            payload_len: p.run_len as usize,
            shard_idx: p.shard_idx,
            run_start: p.run_start,
        };
        let layer = bind_layer(&Binder::over_run(&self.index, run), &self.cfg, l).map(Arc::new)?;
        Ok((layer, blob))
    }

    /// Reads coded layer `l` and decodes it into `blob`, on this thread (the read-ahead's,
    /// so decoding overlaps the current layer's compute) while its later segments are still
    /// being read; the checksum is the decoded run's.
    fn read_coded_layer(&self, l: usize, blob: &mut Blob, span: CodedSpan, stop: &CancelToken) -> Result<WindowRead> {
        let p = &self.packed.layers[l];
        let read =
            CodedRead { io: &self.io, file: &self.file, bin_path: &self.packed.bin_path, staging: &self.staging, stop };
        let start = Instant::now();
        let checksum = read_coded_layer(&read, (l, p), span, &mut blob.pages_mut()[..p.run_len as usize])?;
        self.counters.add_trunk_decode(start.elapsed());
        Ok(WindowRead { payload_start: 0, checksum })
    }

    /// Takes layer `l` from the read-ahead, waiting if it is in flight; a read-ahead of
    /// another layer is waited for and dropped (so the ring never holds more than planned).
    /// A wait ends with [`Error::Stopped`] within [`STOP_TICK`] of `stop` being set (the
    /// read-ahead itself goes on: its layer is the next pass's).
    fn take_ahead(&self, l: usize, stop: &CancelToken) -> Option<Result<Arc<Layer>>> {
        let mut ahead = self.lock();
        let start = Instant::now();
        let mut waited = false;
        loop {
            match ahead.as_mut() {
                None => return None,
                Some((_, None)) if stop.is_cancelled() => return Some(Err(Error::Stopped)),
                Some((_, None)) => {
                    waited = true;
                    ahead = self.changed.wait_timeout(ahead, STOP_TICK).unwrap_or_else(|p| p.into_inner()).0;
                }
                Some((layer, Some(_))) => {
                    let matches = *layer == l;
                    let taken = ahead.take().and_then(|(_, r)| r);
                    if waited {
                        self.counters.add_trunk_wait(start.elapsed());
                    }
                    return if matches { taken } else { None };
                }
            }
        }
    }
}

impl TrunkSource for StreamedTrunk {
    fn layer(&self, layer_idx: usize, stop: &CancelToken) -> Result<Arc<Layer>> {
        if let Some(layer) = self.inner.pinned_layer(layer_idx) {
            return Ok(layer);
        }
        let layer = match self.inner.take_ahead(layer_idx, stop) {
            Some(result) => result?,
            None => {
                let start = Instant::now();
                let layer = self.inner.read_layer(layer_idx, stop)?;
                self.inner.counters.add_trunk_wait(start.elapsed());
                layer
            }
        };
        self.start_read_ahead(layer_idx);
        Ok(layer)
    }
}
