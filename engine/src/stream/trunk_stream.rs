//! The streamed trunk: each layer pinned in RAM, held coded in RAM, or read from
//! `trunk.bin`, as the plan's residency says; the layers that are not pinned pass through a
//! ring of one or two slots, the next one read (or decoded) while the current computes.
//!
//! Owns: the ring (at most `ring_slots` unpinned layers alive: the one computing and, with
//! two slots, the one being read ahead) and its buffers, reused layer after layer (no
//! allocation or zeroing per read); reads of whole runs through the shared `io::Reader`
//! (pieces in flight together, CRC-32 computed piece by piece on the reader threads); the
//! CRC check of every run read; and binding a layer as views into its buffer. A layer packed
//! with `--codec huffman` is read and decoded into its ring buffer by `trunk_codec` (its
//! segments decoded on this module's two reader threads while later ones are read); a
//! layer pinned raw from a coded trunk is decoded once, when pinned; a layer held coded
//! (`LayerResidency::PinnedCoded`) is decoded from RAM into its ring buffer every pass, on
//! the same threads, so its decode overlaps the previous layer's compute.
//! Must not: hand out a layer whose read or check failed (the error goes to the
//! generation), read ahead with one slot, or keep a cancelled generation waiting on a read
//! (waits and reads stop within [`super::STOP_TICK`] or one read piece).
//! Also owns changing the residency between generations ([`StreamedTrunk::repin`]):
//! layers leaving RAM are dropped at once ([`StreamedTrunk::release_unplanned`]), layers
//! entering it are read from `trunk.bin` (CRC-checked, or their directory parsed).
//! Easy to break: layers are used in order `0..n` on every pass; after the last layer the
//! read-ahead wraps to the first layer not pinned raw for the next pass. A repin first
//! drains the read-ahead, so no layer outside the new plan stays alive.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};
use std::time::Instant;

use crate::config::ModelConfig;
use crate::error::{Error, Result};
use crate::events::CancelToken;
use crate::format::TensorIndex;
use crate::io::{Blob, Checksum, DirectFile, Reader, Urgency, WindowRead};
use crate::model::bind::{Binder, RunView};
use crate::model::trunk::TrunkSource;
use crate::model::{bind_layer, Layer};
use crate::stream::metrics::Counters;
use crate::stream::ring::Ring;
use crate::stream::trunk_codec::{decode_held, load_coded_layer, read_coded_layer, CodedRead, HeldCoded, Staging};
use crate::stream::trunk_layout::CodedSpan;
use crate::stream::trunk_manifest::PackedTrunk;
use crate::stream::trunk_pieces::{PieceFiles, Pieces};
use crate::stream::STOP_TICK;
use k3_plan::LayerResidency;

/// The layer being read ahead: `None` while in flight.
type Ahead = Option<(usize, Option<Result<Arc<Layer>>>)>;

/// What the trunk holds of one layer between passes.
#[derive(Clone)]
enum Held {
    /// Nothing: read from `trunk.bin` when used.
    Streamed,
    /// Bound in a buffer of its own.
    Raw(Arc<Layer>),
    /// Its coded bytes, decoded into a ring buffer when used.
    Coded(Arc<HeldCoded>),
}

impl Held {
    fn residency(&self) -> LayerResidency {
        match self {
            Held::Streamed => LayerResidency::Streamed,
            Held::Raw(_) => LayerResidency::Pinned,
            Held::Coded(_) => LayerResidency::PinnedCoded,
        }
    }
}

struct Inner {
    /// Each layer's residency and, when in RAM, its weights.
    held: RwLock<Vec<Held>>,
    packed: PackedTrunk,
    file: Arc<DirectFile>,
    index: Arc<TensorIndex>,
    cfg: ModelConfig,
    ahead: Mutex<Ahead>,
    changed: Condvar,
    counters: Arc<Counters>,
    /// The shared I/O engine (pieces in flight together).
    io: Arc<Reader>,
    /// Ring slot buffers, reused layer after layer and piece after piece.
    ring: Arc<Ring>,
    /// The layers larger than a slot, streamed through it a matrix at a time.
    pieces: Arc<Pieces>,
    /// Staging buffers of coded layers' reads.
    staging: Staging,
}

/// Each layer's residency and the ring of a streamed trunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RingShape {
    /// Indexed by layer; a missing entry streams.
    pub residency: Vec<LayerResidency>,
    pub ring_slots: usize,
    /// Bytes of a slot (the plan's `ring_slot_bytes`): a streamed layer larger than it
    /// streams in pieces. `None`: a slot holds the largest layer not pinned raw.
    pub slot_bytes: Option<u64>,
}

impl RingShape {
    /// The bytes of a slot under this shape for `packed`.
    fn slot_bytes_for(&self, packed: &PackedTrunk) -> usize {
        self.slot_bytes.map_or_else(|| ring_slot_bytes(packed, &self.residency), |b| b as usize)
    }
}

/// Bytes of a ring buffer able to hold every layer not pinned raw under `residency`,
/// widened for O_DIRECT as the reader reads it.
fn ring_slot_bytes(packed: &PackedTrunk, residency: &[LayerResidency]) -> usize {
    let pinned = |l: usize| residency.get(l) == Some(&LayerResidency::Pinned);
    packed.layers.iter().enumerate().filter(|(l, _)| !pinned(*l)).map(|(_, p)| p.buffer_len()).max().unwrap_or(0)
}

/// A trunk streamed from a packed file under a memory plan.
pub struct StreamedTrunk {
    inner: Arc<Inner>,
    /// Two ring slots: read the next layer while this one computes.
    read_ahead: AtomicBool,
    /// The threads that run the read-ahead (its pieces go to the shared reader), shared
    /// with the pieces' read-ahead.
    reader: Arc<rayon::ThreadPool>,
}

impl StreamedTrunk {
    /// Loads the layers `ring.residency` keeps in RAM (read from `trunk.bin` now) and
    /// streams the rest through `io`; with `ring_slots == 2` the next layer is read while
    /// the current one computes.
    pub fn new(
        packed: PackedTrunk,
        index: Arc<TensorIndex>,
        cfg: &ModelConfig,
        ring: RingShape,
        io: Arc<Reader>,
        counters: Arc<Counters>,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Self> {
        let slot_bytes = ring.slot_bytes_for(&packed);
        let RingShape { residency, ring_slots, .. } = ring;
        let packed_largest_coded = packed.largest_coded();
        let file = Arc::new(DirectFile::open(&packed.bin_path)?);
        let ring = Arc::new(Ring::new(packed.bin_path.clone(), slot_bytes, ring_slots));
        let piece_files = PieceFiles {
            layers: packed.layers.clone(),
            file: file.clone(),
            io: io.clone(),
            index: index.clone(),
            ring: ring.clone(),
            counters: counters.clone(),
        };
        // Two threads: the read-ahead (of a layer or a piece) runs on one, and a coded
        // layer's blocks decode on both.
        let reader = Arc::new(
            rayon::ThreadPoolBuilder::new()
                .num_threads(2)
                .thread_name(|_| "k3-trunk-io".into())
                .build()
                .map_err(|e| Error::Option { option: "trunk reader", reason: e.to_string() })?,
        );
        let pieces = Pieces::new(piece_files, ring_slots >= 2, reader.clone());
        let inner = Inner {
            held: RwLock::new(vec![Held::Streamed; cfg.n_layers]),
            packed,
            file,
            index,
            cfg: cfg.clone(),
            ahead: Mutex::new(None),
            changed: Condvar::new(),
            counters,
            io,
            ring,
            pieces,
            staging: Staging::for_largest(packed_largest_coded),
        };
        inner.check_fits(&residency, slot_bytes)?;
        let trunk = StreamedTrunk { inner: Arc::new(inner), read_ahead: AtomicBool::new(ring_slots >= 2), reader };
        trunk.inner.load_missing(&residency, progress)?;
        Ok(trunk)
    }

    /// Layers pinned raw now.
    pub fn n_pinned(&self) -> usize {
        self.inner.read_held().iter().filter(|h| matches!(h, Held::Raw(_))).count()
    }

    /// Drops every layer held in RAM whose residency under `residency` differs (the shrink
    /// half of a replan), after the read-ahead in flight.
    pub fn release_unplanned(&self, residency: &[LayerResidency]) {
        self.inner.drain_ahead();
        self.inner.pieces.drain();
        let mut held = self.inner.write_held();
        for (l, h) in held.iter_mut().enumerate() {
            let want = residency.get(l).copied().unwrap_or(LayerResidency::Streamed);
            if h.residency() != want {
                *h = Held::Streamed;
            }
        }
    }

    /// Changes the residency and the ring to `shape`, between generations: layers
    /// leaving RAM are dropped first, then the ones entering it are read from `trunk.bin`
    /// (`progress(done, total)` after each). On a failed read the layers loaded so far
    /// stay and the error names the layer.
    pub fn repin(&self, shape: &RingShape, progress: &mut dyn FnMut(usize, usize)) -> Result<()> {
        let residency = &shape.residency;
        self.read_ahead.store(shape.ring_slots >= 2, Ordering::Relaxed);
        self.inner.pieces.set_ring_slots(shape.ring_slots);
        self.release_unplanned(residency);
        // New ring buffers sized for the layers (or pieces) that pass through the ring now.
        let slot_bytes = shape.slot_bytes_for(&self.inner.packed);
        self.inner.check_fits(residency, slot_bytes)?;
        self.inner.ring.reshape(slot_bytes, shape.ring_slots);
        self.inner.load_missing(residency, progress)
    }

    /// True when reads bypass the page cache with O_DIRECT (false: buffered fallback).
    pub fn is_direct(&self) -> bool {
        self.inner.file.is_direct()
    }

    fn start_read_ahead(&self, after: usize) {
        if !self.read_ahead.load(Ordering::Relaxed) {
            return;
        }
        let Some(next) = self.inner.next_through_ring(after) else { return };
        // A whole layer's slot is taken now (none free: no read-ahead), so a piece read
        // ahead meanwhile cannot take it; a layer in pieces needs no slot to bind.
        let slot = if self.inner.in_pieces(next) {
            None
        } else {
            match self.inner.ring.try_take(self.inner.packed.layers[next].buffer_len()) {
                Some(blob) => Some(blob),
                None => return,
            }
        };
        *self.inner.lock() = Some((next, None));
        let inner = self.inner.clone();
        self.reader.spawn(move || {
            // Never stopped: the layer is the next pass's whichever generation runs it.
            let result = inner.read_layer_in(next, slot, &CancelToken::new());
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

    fn read_held(&self) -> std::sync::RwLockReadGuard<'_, Vec<Held>> {
        self.held.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write_held(&self) -> std::sync::RwLockWriteGuard<'_, Vec<Held>> {
        self.held.write().unwrap_or_else(|p| p.into_inner())
    }

    fn held(&self, layer_idx: usize) -> Held {
        self.read_held().get(layer_idx).cloned().unwrap_or(Held::Streamed)
    }

    /// The layer after `after` (wrapping to the next pass) that passes through the ring.
    fn next_through_ring(&self, after: usize) -> Option<usize> {
        let held = self.read_held();
        let n = held.len();
        (1..=n).map(|k| (after + k) % n).find(|&l| !matches!(held[l], Held::Raw(_)))
    }

    /// Reads every layer `residency` keeps in RAM that is not there yet, in order.
    fn load_missing(&self, residency: &[LayerResidency], progress: &mut dyn FnMut(usize, usize)) -> Result<()> {
        let current: Vec<LayerResidency> = self.read_held().iter().map(Held::residency).collect();
        let missing: Vec<(usize, LayerResidency)> = residency
            .iter()
            .copied()
            .enumerate()
            .take(current.len())
            .filter(|&(l, r)| r.in_ram() && current[l] != r)
            .collect();
        for (k, &(l, r)) in missing.iter().enumerate() {
            let held = match r {
                LayerResidency::Pinned => Held::Raw(self.read_pinned_layer(l)?),
                LayerResidency::PinnedCoded => Held::Coded(Arc::new(self.load_coded(l)?)),
                LayerResidency::Streamed => Held::Streamed,
            };
            self.write_held()[l] = held;
            progress(k + 1, missing.len());
        }
        Ok(())
    }

    /// Reads coded layer `l`'s stored bytes to hold in RAM; a layer stored raw is refused.
    fn load_coded(&self, l: usize) -> Result<HeldCoded> {
        let p = &self.packed.layers[l];
        let Some(span) = p.coding else {
            return Err(Error::Trunk {
                path: self.packed.bin_path.clone(),
                reason: format!("layer {l} is stored raw, so it cannot be held coded (pack with --codec huffman)"),
            });
        };
        let stop = CancelToken::new();
        let read = CodedRead {
            io: &self.io,
            file: &self.file,
            bin_path: &self.packed.bin_path,
            staging: &self.staging,
            stop: &stop,
        };
        load_coded_layer(&read, (l, p), span)
    }

    /// Waits for a read-ahead in flight and drops it (its layer leaves RAM).
    fn drain_ahead(&self) {
        let mut ahead = self.lock();
        while matches!(ahead.as_ref(), Some((_, None))) {
            ahead = self.changed.wait(ahead).unwrap_or_else(|p| p.into_inner());
        }
        *ahead = None;
    }

    /// True when streamed layer `l` is larger than a ring slot, so it streams in pieces
    /// (a layer held coded in RAM decodes whole into a slot).
    fn in_pieces(&self, l: usize) -> bool {
        matches!(self.held(l), Held::Streamed) && self.packed.layers[l].buffer_len() > self.ring.slot_bytes()
    }

    /// Refuses a plan under which a layer not pinned raw fits neither a slot nor, in
    /// pieces, slots of `slot_bytes`.
    fn check_fits(&self, residency: &[LayerResidency], slot_bytes: usize) -> Result<()> {
        let through_ring = |l: usize| residency.get(l) != Some(&LayerResidency::Pinned);
        for l in (0..self.packed.layers.len()).filter(|&l| through_ring(l)) {
            let p = &self.packed.layers[l];
            let held_coded = residency.get(l) == Some(&LayerResidency::PinnedCoded);
            let reason = match (held_coded, self.pieces.unfit_reason(l, slot_bytes)) {
                (true, _) if p.buffer_len() > slot_bytes => {
                    Some(format!("layer {l} is held coded and larger than a ring slot ({slot_bytes} B)"))
                }
                (true, _) => None,
                (false, reason) => reason,
            };
            if let Some(reason) = reason {
                return Err(Error::Trunk { path: self.packed.bin_path.clone(), reason });
            }
        }
        Ok(())
    }

    /// Reads, checks and binds unpinned layer `l` (stopped by `stop`): into a ring buffer
    /// (`slot`, taken now when `None`), or in pieces when it is larger than a slot.
    fn read_layer_in(self: &Arc<Self>, l: usize, slot: Option<Blob>, stop: &CancelToken) -> Result<Arc<Layer>> {
        if self.in_pieces(l) {
            return Pieces::bind_layer(&self.pieces, l, &self.cfg, stop);
        }
        let p = &self.packed.layers[l];
        let blob = match slot {
            Some(blob) => blob,
            None => self.ring.take(p.buffer_len(), &format!("layer {l}"))?,
        };
        match self.read_layer_into(l, blob, stop) {
            Ok((layer, blob)) => {
                self.ring.lend(blob);
                Ok(layer)
            }
            Err(e) => {
                self.ring.lost();
                Err(e)
            }
        }
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
        let from_ram = match self.held(l) {
            Held::Coded(coded) => Some(coded),
            Held::Streamed | Held::Raw(_) => None,
        };
        let from_ram_read = from_ram.is_some();
        let read = match (p.coding, from_ram) {
            (_, Some(coded)) => {
                let start = Instant::now();
                let out = &mut blob.pages_mut()[..p.run_len as usize];
                let checksum = decode_held(&coded, l, &self.packed.bin_path, out)?;
                self.counters.add_trunk_decode(start.elapsed());
                WindowRead { payload_start: 0, checksum }
            }
            (None, None) => {
                let window = (p.file_off, p.run_len as usize);
                self.io.read_window_until(&self.file, &mut blob, window, (Urgency::Next, Checksum::Crc32), stop)?
            }
            (Some(span), None) => self.read_coded_layer(l, &mut blob, span, stop)?,
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
        if !from_ram_read {
            Counters::add(&self.counters.trunk_bytes_read, p.stored_len());
            Counters::add(&self.counters.trunk_layers_read, 1);
        }
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
        let (checksum, decoding) = read_coded_layer(&read, (l, p), span, &mut blob.pages_mut()[..p.run_len as usize])?;
        self.counters.add_trunk_decode(decoding);
        Ok(WindowRead { payload_start: 0, checksum })
    }

    /// Takes layer `l` from the read-ahead, waiting if it is in flight; a read-ahead of
    /// another layer is waited for and dropped (so the ring never holds more than planned).
    /// A wait ends with [`Error::Stopped`] within [`super::STOP_TICK`] of `stop` being set (the
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
        if let Held::Raw(layer) = self.inner.held(layer_idx) {
            return Ok(layer);
        }
        let layer = match self.inner.take_ahead(layer_idx, stop) {
            Some(result) => result?,
            None => {
                let start = Instant::now();
                let layer = self.inner.read_layer_in(layer_idx, None, stop)?;
                self.inner.counters.add_trunk_wait(start.elapsed());
                layer
            }
        };
        self.start_read_ahead(layer_idx);
        Ok(layer)
    }
}
