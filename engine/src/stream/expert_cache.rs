//! The expert cache: whole routed experts in RAM slots, read from the shards on demand or
//! by a per-layer batch prefetch, replaced by a policy (LRU).
//!
//! Owns: slot states (absent = empty, in-flight, ready), the capacity in slots, the
//! victim choice (least recently used among ready experts no computation holds),
//! concurrent prefetch reads sorted by (shard, offset) on an I/O thread pool, and the
//! honest counters.
//! Must not: publish an expert before its read, CRC32C check and bind succeeded, skip an
//! expert whose read failed (that is an error for the generation), keep a failed read in a
//! slot (a prefetch that fails frees its slot; the demand read then reads again and
//! reports the error, so the next generation reads fresh bytes), or hold more than `capacity`
//! experts it owns (an expert still borrowed by a computation keeps its slot until the
//! borrow ends; victims are only experts nobody holds).
//! Also owns the slot buffers (read through the shared `io::Reader`, reused through a
//! `BlobPool`: an evicted expert's buffer serves the next read, so reads never allocate
//! once the cache is warm; owned experts + idle buffers ≤ capacity) and resizing between
//! generations ([`ExpertCache::resize`]): a smaller capacity evicts at once.
//! With the expert checksum table of a packed trunk (`stream::expert_sums`), every read's
//! CRC32C — computed piece by piece on the reader threads — must equal the recorded one,
//! else `Error::ExpertChecksum` naming the layer, expert, shard and offset.
//! Easy to break: a victim search must skip in-flight slots; a prefetch must not reserve
//! more slots than are free, or demand reads could wait forever.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

use crate::config::ModelConfig;
use crate::error::{Error, Result};
use crate::events::CancelToken;
use crate::format::TensorIndex;
use crate::io::{Blob, BlobPool, Checksum, DirectFile, Reader, Urgency};
use crate::model::bind::{Binder, RunView};
use crate::model::experts::{bind_expert, Demand, ExpertSource};
use crate::model::mlp::GluMlp;
use crate::stream::expert_dir::{locate, Placement};
use crate::stream::expert_sums::ExpertSums;
use crate::stream::metrics::Counters;
use crate::stream::STOP_TICK;

use crate::stream::replacement::{CachePolicy, Key};

/// A slot's state.
enum Slot {
    /// A read is running; waiters sleep on the condvar.
    InFlight,
    /// Ready to use. `prefetched` until its first use after a batch prefetch read it.
    /// `blob` is the slot buffer the expert is bound in (`None`: scattered tensors).
    Ready { mlp: Arc<GluMlp>, blob: Option<Arc<Blob>>, last_use: u64, prefetched: bool },
}

struct State {
    slots: HashMap<Key, Slot>,
    clock: u64,
    /// The layer most recently routed (for layer-aware replacement).
    layer_now: usize,
    trace: Option<Vec<(u32, u32)>>,
}

/// How many expert slots, of how many bytes each (`k3_plan::expert_slot_bytes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheSlots {
    pub capacity: usize,
    pub slot_bytes: usize,
}

/// An expert just read, and the slot buffer it is bound in.
struct Loaded {
    mlp: Arc<GluMlp>,
    blob: Option<Arc<Blob>>,
}

/// How the cache reads: prefetch threads, the shared reader, and the CRC32C table every
/// read is checked against (`None`: no packed trunk, reads are unchecked).
pub struct CacheIo {
    pub threads: usize,
    pub reader: Arc<Reader>,
    pub sums: Option<Arc<ExpertSums>>,
}

/// A bounded cache of routed experts over the checkpoint's shards.
pub struct ExpertCache {
    inner: Arc<Inner>,
    io_pool: rayon::ThreadPool,
}

/// The part of the cache that prefetch jobs on the I/O pool share.
struct Inner {
    index: Arc<TensorIndex>,
    cfg: ModelConfig,
    files: Vec<DirectFile>,
    reader: Arc<Reader>,
    sums: Option<Arc<ExpertSums>>,
    /// Slot buffers, reused: an evicted expert's buffer serves the next read.
    blobs: BlobPool,
    capacity: AtomicUsize,
    policy: CachePolicy,
    state: Mutex<State>,
    changed: Condvar,
    counters: Arc<Counters>,
}

impl ExpertCache {
    /// A cache of `capacity` slots of `slot_bytes` (at least top-k + 1), prefetching on
    /// `io.threads` threads that read through `io.reader`, checked against `io.sums`.
    pub fn new(
        index: Arc<TensorIndex>,
        cfg: &ModelConfig,
        slots: CacheSlots,
        policy: CachePolicy,
        io: CacheIo,
        counters: Arc<Counters>,
    ) -> Result<Self> {
        let CacheSlots { capacity, slot_bytes } = slots;
        let CacheIo { threads: io_threads, reader, sums } = io;
        let files = index.shard_paths().iter().map(|p| DirectFile::open(p)).collect::<k3_io::Result<Vec<_>>>()?;
        let io_pool = rayon::ThreadPoolBuilder::new()
            .num_threads(io_threads.max(1))
            .thread_name(|i| format!("k3-expert-io-{i}"))
            .build()
            .map_err(|e| Error::Option { option: "io-threads", reason: e.to_string() })?;
        let state = Mutex::new(State { slots: HashMap::new(), clock: 0, layer_now: 0, trace: None });
        let inner = Inner {
            index,
            cfg: cfg.clone(),
            files,
            reader,
            sums,
            blobs: BlobPool::new(slot_bytes, capacity),
            capacity: AtomicUsize::new(capacity),
            policy,
            state,
            changed: Condvar::new(),
            counters,
        };
        Ok(ExpertCache { inner: Arc::new(inner), io_pool })
    }

    /// Starts recording every request as `(layer, expert)`.
    pub fn record_trace(&self) {
        self.inner.lock().trace = Some(Vec::new());
    }

    /// The requests recorded since `record_trace`, emptying the record.
    pub fn take_trace(&self) -> Vec<(u32, u32)> {
        self.inner.lock().trace.as_mut().map(std::mem::take).unwrap_or_default()
    }

    pub fn capacity(&self) -> usize {
        self.inner.capacity()
    }

    /// Sets the capacity to `capacity` slots. Reads in flight finish first; then the
    /// policy's victims are evicted until at most `capacity` experts are owned (experts a
    /// computation still holds keep their slots until released, so call this between
    /// generations).
    pub fn resize(&self, capacity: usize) {
        let inner = &self.inner;
        inner.capacity.store(capacity, Ordering::Relaxed);
        let mut state = inner.lock();
        while state.slots.values().any(|s| matches!(s, Slot::InFlight)) {
            state = inner.changed.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        // With more experts than slots, `make_room` evicts one victim per call.
        while state.slots.len() > capacity {
            if !inner.make_room(&mut state) {
                break;
            }
        }
        inner.gauge(&state);
        // Buffers alive never exceed the slots: owned experts plus idle buffers.
        inner.blobs.set_max_free(capacity.saturating_sub(state.slots.len()));
    }

    /// Experts currently owned (ready or in flight).
    pub fn len(&self) -> usize {
        self.inner.lock().slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reads and binds one expert (no locks held) into a reused slot buffer; a generation's
    /// read stops with `stop`.
    fn load(&self, key: Key, stop: &CancelToken) -> Result<Loaded> {
        let (layer_idx, expert_idx) = key;
        let (placement, nbytes) = locate(&self.index, layer_idx, expert_idx)?;
        let loaded = match placement {
            Placement::Contiguous { shard_idx, start, len } => {
                let mut blob = self.blobs.take();
                if blob.capacity() < crate::io::direct::widen(start, len).1 {
                    blob = Blob::zeroed(crate::io::direct::widen(start, len).1);
                }
                let file = &self.files[shard_idx];
                let window = (start, len);
                let read =
                    self.reader.read_window_until(file, &mut blob, window, (Urgency::Now, Checksum::Crc32c), stop);
                let read = match read {
                    Ok(read) => read,
                    Err(e) => {
                        // The buffer serves the next read (a stop must not cost an allocation).
                        self.blobs.give(Arc::new(blob));
                        return Err(e.into());
                    }
                };
                let blob = Arc::new(blob);
                if let Err(e) = self.check(key, file, (start, len), read.checksum) {
                    self.blobs.give(blob);
                    return Err(e);
                }
                let run = RunView {
                    blob: blob.clone(),
                    payload_start: read.payload_start,
                    payload_len: len,
                    shard_idx,
                    run_start: start,
                };
                let mlp = bind_expert(&Binder::over_run(&self.index, run), &self.cfg, layer_idx, expert_idx)?;
                Loaded { mlp: Arc::new(mlp), blob: Some(blob) }
            }
            Placement::Scattered if self.sums.is_some() => {
                // `k3 pack` refuses such experts, so a table never covers one.
                let reason = "its tensors are scattered, so the checksum table cannot cover it".into();
                let name = crate::model::names::experts_prefix(layer_idx) + &expert_idx.to_string();
                let source = Box::new(Error::Expert { name, reason });
                return Err(Error::ExpertRead { layer_idx, expert_idx, source });
            }
            Placement::Scattered => {
                let mlp = bind_expert(&Binder::new(&self.index, true), &self.cfg, layer_idx, expert_idx)?;
                Loaded { mlp: Arc::new(mlp), blob: None }
            }
        };
        Counters::add(&self.counters.expert_bytes_read, nbytes);
        Ok(loaded)
    }

    /// Compares a read's CRC32C with the table's (nothing to compare without a table).
    fn check(
        &self,
        (layer_idx, expert_idx): Key,
        file: &DirectFile,
        (offset, len): (u64, usize),
        actual: u32,
    ) -> Result<()> {
        let Some(sums) = &self.sums else { return Ok(()) };
        match sums.get(layer_idx, expert_idx) {
            Some(expected) if expected == actual => Ok(()),
            expected => Err(Error::ExpertChecksum {
                layer_idx,
                expert_idx,
                path: file.path().to_path_buf(),
                offset,
                len,
                expected: expected.unwrap_or(0),
                actual,
            }),
        }
    }

    /// Drops an evicted slot, handing its buffer back once the expert is gone.
    fn recycle(&self, slot: Slot) {
        if let Slot::Ready { mlp, blob: Some(blob), .. } = slot {
            drop(mlp);
            self.blobs.give(blob);
        }
    }

    /// Frees one slot if the cache is full: the policy's victim among ready experts that
    /// no computation holds. Returns false when every slot is in flight or borrowed.
    fn capacity(&self) -> usize {
        self.capacity.load(Ordering::Relaxed)
    }

    fn make_room(&self, state: &mut State) -> bool {
        if state.slots.len() < self.capacity() {
            return true;
        }
        let candidates = state.slots.iter().filter_map(|(k, s)| match s {
            Slot::Ready { mlp, last_use, .. } if Arc::strong_count(mlp) == 1 => Some((*k, *last_use)),
            _ => None,
        });
        match self.policy.victim(candidates, state.layer_now, self.cfg.n_layers) {
            Some(key) => {
                if let Some(slot) = state.slots.remove(&key) {
                    self.recycle(slot);
                }
                self.gauge(state);
                true
            }
            None => false,
        }
    }

    /// Publishes a read: a loaded expert becomes ready; a failed read frees its slot (the
    /// demand read that needs it reads again and reports the error).
    fn publish(&self, key: Key, loaded: Option<&Loaded>, prefetched: bool) {
        let mut state = self.lock();
        state.clock += 1;
        let clock = state.clock;
        match loaded {
            Some(l) => {
                let slot = Slot::Ready { mlp: l.mlp.clone(), blob: l.blob.clone(), last_use: clock, prefetched };
                state.slots.insert(key, slot);
            }
            None => drop(state.slots.remove(&key)),
        }
        self.gauge(&state);
        drop(state);
        self.changed.notify_all();
    }

    /// Keeps the slots-in-use gauge at the number of experts owned.
    fn gauge(&self, state: &State) {
        self.counters.expert_slots_used.store(state.slots.len() as u64, Ordering::Relaxed);
    }
}

impl ExpertSource for ExpertCache {
    fn prefetch(&self, layer_idx: usize, wanted: &[Demand]) {
        let inner = &self.inner;
        let mut to_read = Vec::new();
        {
            let mut state = inner.lock();
            state.layer_now = layer_idx;
            // The trace lists routing's requests in first-use order, whatever order the
            // experts then arrive and are computed in.
            if let Some(t) = state.trace.as_mut() {
                for d in wanted {
                    t.extend(std::iter::repeat_n((layer_idx as u32, d.expert_idx as u32), d.uses.max(1)));
                }
            }
            for &Demand { expert_idx: e, .. } in wanted {
                let key = (layer_idx, e);
                if state.slots.contains_key(&key) || to_read.contains(&key) {
                    continue;
                }
                if !inner.make_room(&mut state) {
                    break;
                }
                state.slots.insert(key, Slot::InFlight);
                inner.gauge(&state);
                to_read.push(key);
            }
        }
        // A forward sweep over the files: sort by (shard, offset).
        to_read.sort_by_key(|&(l, e)| match locate(&inner.index, l, e) {
            Ok((Placement::Contiguous { shard_idx, start, .. }, _)) => (shard_idx, start),
            _ => (usize::MAX, 0),
        });
        for key in to_read {
            let inner = self.inner.clone();
            self.io_pool.spawn(move || {
                // Never stopped: the expert serves this layer's next use whoever asks.
                let result = inner.load(key, &CancelToken::new());
                inner.publish(key, result.as_ref().ok(), true);
            });
        }
    }

    fn next_ready(&self, layer_idx: usize, pending: &[usize], stop: &CancelToken) -> Result<usize> {
        self.inner.next_ready(layer_idx, pending, stop)
    }

    fn expert(&self, layer_idx: usize, expert_idx: usize, stop: &CancelToken) -> Result<Arc<GluMlp>> {
        self.inner.expert((layer_idx, expert_idx), 1, stop)
    }

    fn expert_uses(
        &self,
        layer_idx: usize,
        expert_idx: usize,
        n_uses: usize,
        stop: &CancelToken,
    ) -> Result<Arc<GluMlp>> {
        self.inner.expert((layer_idx, expert_idx), n_uses.max(1) as u64, stop)
    }
}

impl Inner {
    /// The first of `pending` that is ready; else the first nobody is reading (its demand
    /// read starts now, beside the prefetches in flight); else waits for a read to land.
    /// The wait counts as expert wait and ends within [`STOP_TICK`] of `stop`.
    fn next_ready(&self, layer_idx: usize, pending: &[usize], stop: &CancelToken) -> Result<usize> {
        let mut state = self.lock();
        let mut waiting_since = None;
        loop {
            let ready =
                pending.iter().position(|&e| matches!(state.slots.get(&(layer_idx, e)), Some(Slot::Ready { .. })));
            let unread = || pending.iter().position(|&e| !state.slots.contains_key(&(layer_idx, e)));
            if let Some(i) = ready.or_else(unread) {
                if let Some(since) = waiting_since {
                    self.counters.add_expert_wait(Instant::elapsed(&since));
                }
                return Ok(i);
            }
            if stop.is_cancelled() {
                return Err(Error::Stopped);
            }
            waiting_since.get_or_insert_with(Instant::now);
            state = self.changed.wait_timeout(state, STOP_TICK).unwrap_or_else(|p| p.into_inner()).0;
        }
    }

    /// Serves `uses` token uses of one expert; every use is counted with the
    /// classification of the fetch that served it. Once `stop` is set, a wait for a read in
    /// flight or a free slot ends within [`STOP_TICK`], and a read of its own within one
    /// piece, with [`Error::Stopped`].
    fn expert(&self, key: Key, uses: u64, stop: &CancelToken) -> Result<Arc<GluMlp>> {
        let (layer_idx, expert_idx) = key;
        Counters::add(&self.counters.expert_requests, uses);
        let mut state = self.lock();
        let wait_start = Instant::now();
        let mut waited = false;
        loop {
            state.clock += 1;
            let clock = state.clock;
            match state.slots.get_mut(&key) {
                Some(Slot::Ready { mlp, last_use, prefetched, .. }) => {
                    *last_use = clock;
                    let counter = if std::mem::take(prefetched) {
                        &self.counters.expert_prefetch_hits
                    } else {
                        &self.counters.expert_true_hits
                    };
                    Counters::add(counter, uses);
                    if waited {
                        self.counters.add_expert_wait(wait_start.elapsed());
                    }
                    return Ok(mlp.clone());
                }
                Some(Slot::InFlight) if stop.is_cancelled() => return Err(Error::Stopped),
                Some(Slot::InFlight) => {
                    waited = true;
                    state = self.changed.wait_timeout(state, STOP_TICK).unwrap_or_else(|p| p.into_inner()).0;
                }
                None => {
                    state.layer_now = layer_idx;
                    if stop.is_cancelled() {
                        return Err(Error::Stopped);
                    }
                    if !self.make_room(&mut state) {
                        // Every slot is in flight or borrowed. A finished read notifies; a
                        // borrow that ends does not, so poll briefly as well.
                        waited = true;
                        let tick = std::time::Duration::from_millis(2);
                        state = self.changed.wait_timeout(state, tick).unwrap_or_else(|p| p.into_inner()).0;
                        continue;
                    }
                    state.slots.insert(key, Slot::InFlight);
                    self.gauge(&state);
                    drop(state);
                    Counters::add(&self.counters.expert_misses, uses);
                    let read_start = Instant::now();
                    let result = self.load(key, stop).map_err(|e| match e {
                        e @ (Error::ExpertChecksum { .. } | Error::ExpertRead { .. } | Error::Stopped) => e,
                        e => Error::ExpertRead { layer_idx, expert_idx, source: Box::new(e) },
                    });
                    self.counters.add_expert_wait(read_start.elapsed());
                    self.publish(key, result.as_ref().ok(), false);
                    return result.map(|l| l.mlp);
                }
            }
        }
    }
}
