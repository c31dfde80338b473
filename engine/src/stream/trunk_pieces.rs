//! Layers larger than a ring slot, streamed through it a matrix at a time.
//!
//! Owns: binding such a layer ([`Pieces::bind_layer`]: its small tensors read now, each
//! into a buffer of its own and checked by its CRC-32; its matrices bound as pieces), and
//! reading a piece when the forward pass loads it ([`Pieces::fetch`]: into a ring slot,
//! checked by the tensor's CRC-32 from `trunk.json`), with the next piece read ahead into
//! the other slot when the ring has two. The next piece is the one that followed this one
//! on the previous pass (the forward order, learnt), else the next in the layer.
//! Must not: take a slot the plan does not have (a read ahead happens only into a free
//! slot, and a wrong guess is waited for and dropped before the piece wanted is read), or
//! hand out a piece whose checksum failed (the error names the layer and the tensor).
//! Easy to break: a piece keeps its slot until the matrix bound in it is dropped; the
//! forward pass holds one piece at a time (`model::weight`), so with one slot the next
//! read always finds the slot free.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

use k3_plan::is_piece_shape;

use crate::config::ModelConfig;
use crate::error::{Error, Result};
use crate::events::CancelToken;
use crate::format::TensorIndex;
use crate::io::{Blob, ByteView, Checksum, DirectFile, Reader, Urgency};
use crate::model::bind::{Binder, PieceBinding, RunView};
use crate::model::matrix::Matrix;
use crate::model::weight::{PieceRef, PieceSource};
use crate::model::{bind_layer, Layer};
use crate::stream::metrics::Counters;
use crate::stream::ring::Ring;
use crate::stream::trunk_layout::{PackedLayer, PackedTensor};
use crate::stream::STOP_TICK;

/// A piece: (layer, index among the layer's pieces).
type PieceId = (usize, usize);

/// The piece being read ahead: `None` while in flight.
type PieceAhead = Option<(PieceId, Option<Result<Matrix>>)>;

/// What a piece read needs of the trunk.
pub struct PieceFiles {
    pub layers: Vec<PackedLayer>,
    pub file: Arc<DirectFile>,
    pub io: Arc<Reader>,
    pub index: Arc<TensorIndex>,
    pub ring: Arc<Ring>,
    pub counters: Arc<Counters>,
}

/// Reads the pieces of the layers larger than a ring slot.
pub struct Pieces {
    files: PieceFiles,
    /// Per layer, the indices (in `PackedLayer::tensors`) of its pieces, in run order.
    piece_tensors: Vec<Vec<usize>>,
    /// Read the next piece ahead (two ring slots).
    read_ahead: AtomicBool,
    ahead: Mutex<PieceAhead>,
    changed: Condvar,
    /// The previous pass's order: which piece followed which.
    order: Mutex<Order>,
    /// The trunk's read-ahead threads.
    reader: Arc<rayon::ThreadPool>,
}

#[derive(Default)]
struct Order {
    last: Option<PieceId>,
    next: HashMap<PieceId, PieceId>,
}

/// A layer's pieces as the model's weights see them.
struct Source(Arc<Pieces>);

impl PieceSource for Source {
    fn fetch(&self, layer_idx: usize, piece: usize, shape: (usize, usize), stop: &CancelToken) -> Result<Matrix> {
        Pieces::fetch(&self.0, (layer_idx, piece), shape, stop)
    }
}

impl Pieces {
    /// Pieces of `files`' layers, read ahead (with two ring slots) on `reader`, the
    /// trunk's read-ahead threads.
    pub fn new(files: PieceFiles, read_ahead: bool, reader: Arc<rayon::ThreadPool>) -> Arc<Self> {
        let piece_tensors = files
            .layers
            .iter()
            .map(|p| p.tensors.iter().enumerate().filter(|(_, t)| is_piece_shape(&t.shape)).map(|(i, _)| i).collect())
            .collect();
        Arc::new(Pieces {
            files,
            piece_tensors,
            read_ahead: AtomicBool::new(read_ahead),
            ahead: Mutex::new(None),
            changed: Condvar::new(),
            order: Mutex::new(Order::default()),
            reader,
        })
    }

    /// Reads ahead from now on only with two slots (`ring_slots`).
    pub fn set_ring_slots(&self, ring_slots: usize) {
        self.read_ahead.store(ring_slots >= 2, Ordering::Relaxed);
    }

    /// Why layer `l` cannot stream through slots of `slot_bytes`, if it cannot.
    pub fn unfit_reason(&self, l: usize, slot_bytes: usize) -> Option<String> {
        let p = &self.files.layers[l];
        if p.buffer_len() <= slot_bytes {
            return None;
        }
        if p.coding.is_some() {
            return Some(format!(
                "layer {l} is stored coded and larger than a ring slot ({} > {slot_bytes} B); only raw layers stream \
                 in pieces (pack without --codec, or give the trunk more memory)",
                p.buffer_len()
            ));
        }
        if p.tensors.is_empty() {
            return Some(format!(
                "layer {l} is larger than a ring slot and its trunk has no per-tensor checksums: re-run `k3 pack`"
            ));
        }
        let too_big =
            self.piece_tensors[l].iter().map(|&i| &p.tensors[i]).find(|t| p.tensor_buffer_len(t) > slot_bytes);
        too_big.map(|t| format!("layer {l}: tensor `{}` is larger than a ring slot ({slot_bytes} B)", t.name))
    }

    fn lock(&self) -> MutexGuard<'_, PieceAhead> {
        self.ahead.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn tensor(&self, (l, piece): PieceId) -> &PackedTensor {
        &self.files.layers[l].tensors[self.piece_tensors[l][piece]]
    }

    /// Reads layer `l`'s small tensors (each checked) and binds the layer with its
    /// matrices as pieces of `this`.
    pub fn bind_layer(this: &Arc<Self>, l: usize, cfg: &ModelConfig, stop: &CancelToken) -> Result<Arc<Layer>> {
        let p = &this.files.layers[l];
        let pieces: Vec<&PackedTensor> = this.piece_tensors[l].iter().map(|&i| &p.tensors[i]).collect();
        let mut eager = HashMap::new();
        for t in p.tensors.iter().filter(|t| !is_piece_shape(&t.shape)) {
            let blob = Blob::zeroed(p.tensor_buffer_len(t));
            let (view, _) = this.read_tensor(l, t, blob, stop)?;
            eager.insert(t.name.clone(), view);
        }
        let source: Arc<dyn PieceSource> = Arc::new(Source(this.clone()));
        let refs = pieces
            .iter()
            .enumerate()
            .map(|(piece, t)| (t.name.clone(), PieceRef { source: source.clone(), layer_idx: l, piece }))
            .collect();
        Counters::add(&this.files.counters.trunk_layers_read, 1);
        let binding = Arc::new(PieceBinding { eager, pieces: refs });
        bind_layer(&Binder::over_pieces(&this.files.index, binding), cfg, l).map(Arc::new)
    }

    /// Reads tensor `t` of layer `l` into `blob` and checks it: its view and the buffer.
    fn read_tensor(
        &self,
        l: usize,
        t: &PackedTensor,
        mut blob: Blob,
        stop: &CancelToken,
    ) -> Result<(ByteView, Arc<Blob>)> {
        let p = &self.files.layers[l];
        let window = (p.file_off + t.off, t.nbytes as usize);
        let read = self.files.io.read_window_until(
            &self.files.file,
            &mut blob,
            window,
            (Urgency::Next, Checksum::Crc32),
            stop,
        )?;
        if read.checksum != t.crc32 {
            return Err(Error::Trunk {
                path: self.files.file.path().to_path_buf(),
                reason: format!(
                    "layer {l}: tensor `{}` fails its CRC-32 check (stored {:08x}, read {:08x}): re-run `k3 pack`",
                    t.name, t.crc32, read.checksum
                ),
            });
        }
        Counters::add(&self.files.counters.trunk_bytes_read, t.nbytes);
        let blob = Arc::new(blob);
        let view = ByteView::new(blob.clone(), read.payload_start, t.nbytes as usize).ok_or_else(|| Error::Trunk {
            path: self.files.file.path().to_path_buf(),
            reason: format!("layer {l}: tensor `{}` does not fit its buffer", t.name),
        })?;
        Ok((view, blob))
    }

    /// Reads piece `id` into ring buffer `blob` and binds it as a `[rows, cols]` matrix.
    fn read_piece(&self, id: PieceId, blob: Blob, (rows, cols): (usize, usize), stop: &CancelToken) -> Result<Matrix> {
        let (l, t) = (id.0, self.tensor(id));
        let p = &self.files.layers[l];
        let (view, blob) = self.read_tensor(l, t, blob, stop).inspect_err(|_| self.files.ring.lost())?;
        let run = RunView {
            blob: blob.clone(),
            payload_start: view.start(),
            payload_len: t.nbytes as usize,
            shard_idx: p.shard_idx,
            run_start: p.run_start + t.off,
        };
        drop(view);
        let matrix = Binder::over_run(&self.files.index, run).matrix(&t.name, rows, cols);
        self.files.ring.lend(blob);
        matrix
    }

    /// Piece `id`, from the read-ahead or read now; then the next one is read ahead.
    fn fetch(this: &Arc<Self>, id: PieceId, shape: (usize, usize), stop: &CancelToken) -> Result<Matrix> {
        let next = this.learn(id);
        let matrix = match this.take_ahead(id, stop)? {
            Some(matrix) => matrix,
            None => {
                let start = Instant::now();
                let t = this.tensor(id);
                let what = format!("layer {}'s tensor `{}`", id.0, t.name);
                let blob = this.files.ring.take(this.files.layers[id.0].tensor_buffer_len(t), &what)?;
                let matrix = this.read_piece(id, blob, shape, stop)?;
                this.files.counters.add_trunk_wait(start.elapsed());
                matrix
            }
        };
        if let Some(next) = next {
            Self::start_read_ahead(this, next);
        }
        Ok(matrix)
    }

    /// Records that `id` follows the previous piece; returns the piece that followed `id`
    /// last time (else the next in its layer).
    fn learn(&self, id: PieceId) -> Option<PieceId> {
        let mut order = self.order.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(last) = order.last.replace(id) {
            order.next.insert(last, id);
        }
        let in_layer = (id.1 + 1 < self.piece_tensors[id.0].len()).then_some((id.0, id.1 + 1));
        order.next.get(&id).copied().or(in_layer)
    }

    /// Starts reading `next` into a free slot (none free, or one slot: nothing is read).
    fn start_read_ahead(this: &Arc<Self>, next: PieceId) {
        if !this.read_ahead.load(Ordering::Relaxed) {
            return;
        }
        let mut ahead = this.lock();
        if ahead.is_some() {
            return;
        }
        let t = this.tensor(next);
        let Some(blob) = this.files.ring.try_take(this.files.layers[next.0].tensor_buffer_len(t)) else { return };
        let shape = (t.shape[0] as usize, t.shape[1] as usize);
        *ahead = Some((next, None));
        drop(ahead);
        let pieces = this.clone();
        this.reader.spawn(move || {
            // Never stopped: the piece is the next one whichever generation uses it.
            let result = pieces.read_piece(next, blob, shape, &CancelToken::new());
            if let Some((id, slot)) = pieces.lock().as_mut() {
                if *id == next {
                    *slot = Some(result);
                }
            }
            pieces.changed.notify_all();
        });
    }

    /// Piece `id` from the read-ahead, waiting while it is in flight; a read-ahead of
    /// another piece is waited for and dropped (its slot comes back). `None`: read it now.
    fn take_ahead(&self, id: PieceId, stop: &CancelToken) -> Result<Option<Matrix>> {
        let mut ahead = self.lock();
        let start = Instant::now();
        loop {
            match ahead.as_mut() {
                None => return Ok(None),
                Some((_, None)) if stop.is_cancelled() => return Err(Error::Stopped),
                Some((_, None)) => {
                    ahead = self.changed.wait_timeout(ahead, STOP_TICK).unwrap_or_else(|p| p.into_inner()).0;
                }
                Some((got, Some(_))) => {
                    let matches = *got == id;
                    let taken = ahead.take().and_then(|(_, r)| r);
                    self.files.counters.add_trunk_wait(start.elapsed());
                    return if matches { taken.transpose() } else { Ok(None) };
                }
            }
        }
    }

    /// Waits for a read-ahead in flight and drops it (before the ring is reshaped).
    pub fn drain(&self) {
        let mut ahead = self.lock();
        while matches!(ahead.as_ref(), Some((_, None))) {
            ahead = self.changed.wait(ahead).unwrap_or_else(|p| p.into_inner());
        }
        *ahead = None;
    }
}
