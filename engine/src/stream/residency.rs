//! Which weights are in RAM under the memory plan in force, and changing that between
//! generations without reloading the model ([`Residency::replan`]).
//!
//! Owns: the plan, the expert cache and the streamed trunk the model reads through (the
//! engine keeps these handles, the model a clone of each), where the embeddings and head
//! live (`VocabShape`), and the order of a replan: everything that shrinks (cache slots
//! evicted, trunk layers unpinned, embeddings and head read when used) happens before
//! anything grows (layers pinned, slots added, embeddings and head held), so memory never
//! holds both plans at once.
//! Must not: change a result: every source serves the same weights, so tokens and logits
//! are identical before and after a replan (tests compare them bit for bit).
//! Easy to break: a replan runs only between generations (the engine is `&mut`); a
//! failure while growing leaves a consistent, smaller residency and reports the error.

use std::sync::Arc;

use k3_plan::{expert_slot_bytes, BudgetChoice, Footprint, LayerResidency, MachineMemory, MemoryPlan, ResidencyRule};

use crate::config::ModelConfig;
use crate::error::Result;
use crate::format::TensorIndex;
use crate::io::release::return_freed_memory;
use crate::io::sysinfo::machine_memory;
use crate::io::Reader;
use crate::model::bind::Binder;
use crate::model::experts::{ExpertSource, ResidentExperts};
use crate::model::trunk::TrunkSource;
use crate::model::{Model, VocabPlacement, VocabShape};
use crate::options::MemoryOptions;
use crate::stream::expert_cache::{CacheIo, CacheSlots};
use crate::stream::expert_sums::{open_expert_sums, ExpertSums};
use crate::stream::footprint::footprint;
use crate::stream::plan::{fitted_context, make_plan};
use crate::stream::trunk_manifest::{open_packed_trunk, CodedLayout, PackedTrunk};
use crate::stream::trunk_stream::{RingShape, StreamedTrunk};
use crate::stream::{Counters, ExpertCache};

/// The sources a model is first bound with (`None`: bind resident from the shards).
pub(crate) struct Sources {
    pub trunk: Option<Box<dyn TrunkSource>>,
    pub experts: Option<Box<dyn ExpertSource + Send>>,
    /// Where the embeddings and head live.
    pub vocab: VocabShape,
}

/// The weights' residency of one engine.
pub(crate) struct Residency {
    index: Arc<TensorIndex>,
    cfg: ModelConfig,
    opts: MemoryOptions,
    footprint: Footprint,
    plan: Option<MemoryPlan>,
    cache: Option<Arc<ExpertCache>>,
    trunk: Option<Arc<StreamedTrunk>>,
    counters: Arc<Counters>,
    /// The one I/O engine every streamed read goes through.
    io: Arc<Reader>,
    /// A coded packed trunk's layout (what a plan may hold coded, and its staging).
    coded: Option<CodedLayout>,
}

impl Residency {
    /// Plans `opts` and builds the streaming sources the plan needs (no weight is read
    /// here except the pinned trunk prefix, reported by `progress(done, total)` per layer).
    pub fn new(
        cfg: &ModelConfig,
        index: Arc<TensorIndex>,
        opts: &MemoryOptions,
        counters: Arc<Counters>,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<(Residency, Sources)> {
        let mut footprint = footprint(cfg, &index)?;
        // A packed trunk is checked against the shards before planning uses it.
        let packed = match (&opts.trunk_dir, opts.budget) {
            (Some(dir), Some(_)) => Some(open_packed_trunk(dir, cfg, &index)?),
            _ => None,
        };
        if let Some(p) = &packed {
            restrict_pieces(&mut footprint, p);
        }
        let machine = machine_memory();
        let opts = &fitted(opts, &footprint, machine);
        opts.validate()?;
        let reader =
            Reader::with_gauge(opts.read_pattern, counters.reads_in_flight.clone(), counters.drive_busy.clone())?;
        let io = Arc::new(reader.reading_through(opts.read_storage.clone()));
        let mut r = Residency {
            index,
            cfg: cfg.clone(),
            opts: opts.clone(),
            footprint,
            plan: None,
            cache: None,
            trunk: None,
            counters,
            io,
            coded: None,
        };
        let Some(choice) = opts.budget else {
            return Ok((r, Sources { trunk: None, experts: None, vocab: VocabShape::held() }));
        };
        r.coded = packed.as_ref().and_then(|p| p.coded_layout());
        let coded = r.coded.as_ref().map(CodedLayout::layers);
        let plan = make_plan(&r.footprint, choice, (packed.is_some(), coded), opts, machine)?;
        let sums = packed.as_ref().map(|p| p.experts.clone());
        let cache = Arc::new(r.new_cache(plan.cache_slots as usize, sums)?);
        let trunk = match packed {
            Some(packed) if streams_any(&plan.residency) => Some(Arc::new(StreamedTrunk::new(
                packed,
                r.index.clone(),
                cfg,
                ring_shape(&plan),
                r.io.clone(),
                r.counters.clone(),
                progress,
            )?)),
            _ => None,
        };
        let sources = Sources {
            trunk: trunk.clone().map(|t| Box::new(t) as Box<dyn TrunkSource>),
            experts: Some(Box::new(cache.clone())),
            vocab: VocabShape::of_plan(&plan, &r.footprint, r.counters.vocab_bytes_read.clone()),
        };
        r.plan = Some(plan);
        r.cache = Some(cache);
        r.trunk = trunk;
        Ok((r, sources))
    }

    /// A cache of `capacity` slots whose reads are checked against `sums` (the table of
    /// the packed trunk in use; `None` without one).
    fn new_cache(&self, capacity: usize, sums: Option<Arc<ExpertSums>>) -> Result<ExpertCache> {
        let slots = CacheSlots { capacity, slot_bytes: expert_slot_bytes(self.footprint.expert_bytes) as usize };
        let io = CacheIo { threads: self.opts.io_threads, reader: self.io.clone(), sums };
        let cache =
            ExpertCache::new(self.index.clone(), &self.cfg, slots, self.opts.cache_policy, io, self.counters.clone())?;
        if self.opts.record_trace {
            cache.record_trace();
        }
        Ok(cache)
    }

    pub fn plan(&self) -> Option<&MemoryPlan> {
        self.plan.as_ref()
    }

    pub fn footprint(&self) -> &Footprint {
        &self.footprint
    }

    pub fn options(&self) -> &MemoryOptions {
        &self.opts
    }

    pub fn cache(&self) -> Option<&Arc<ExpertCache>> {
        self.cache.as_ref()
    }

    /// Where the embeddings and head live under `plan` (held without a plan).
    fn vocab_of(&self, plan: Option<&MemoryPlan>) -> VocabShape {
        let reads = self.counters.vocab_bytes_read.clone();
        plan.map_or(VocabShape::held(), |p| VocabShape::of_plan(p, &self.footprint, reads))
    }

    /// Bytes this residency holds now by its plan (everything, when resident): what a
    /// replan frees before the new plan is admitted.
    fn held_bytes(&self) -> u64 {
        let fp = &self.footprint.for_sequences(self.opts.sequences as u64);
        match &self.plan {
            Some(p) => p.total_bytes,
            None => {
                let experts = fp.n_experts_total * fp.expert_bytes;
                fp.trunk_total_bytes() + experts + k3_plan::fixed_bytes(fp, self.opts.context_length as u64)
            }
        }
    }

    /// Switches to `choice` (`None`: everything resident) without reloading: see the
    /// module header for the order. `progress(done, total)` reports trunk layers pinned.
    pub fn replan(
        &mut self,
        model: &mut Model,
        choice: Option<BudgetChoice>,
        (context_length, rule): (usize, ResidencyRule),
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<()> {
        let n_layers = self.cfg.n_layers;
        let packed_available = self.opts.trunk_dir.is_some();
        let machine = machine_memory();
        // What this engine holds now is freed before the new plan is admitted.
        let machine = MachineMemory { available_bytes: machine.available_bytes + self.held_bytes(), ..machine };
        let mut opts = self.opts.clone();
        opts.budget = choice;
        opts.context_length = context_length;
        opts.residency = rule;
        opts.validate()?;
        // A trunk not streamed yet is checked (and its coding learnt) before planning.
        let mut packed = match (&self.trunk, opts.trunk_dir.as_deref(), choice) {
            (None, Some(dir), Some(_)) => Some(open_packed_trunk(dir, &self.cfg, &self.index)?),
            _ => None,
        };
        if let Some(p) = &packed {
            restrict_pieces(&mut self.footprint, p);
            self.coded = p.coded_layout();
        }
        let coded = self.coded.as_ref().map(CodedLayout::layers);
        let plan =
            choice.map(|c| make_plan(&self.footprint, c, (packed_available, coded), &opts, machine)).transpose()?;
        let all_pinned =
            RingShape { residency: vec![LayerResidency::Pinned; n_layers], ring_slots: 0, slot_bytes: None };
        let target = plan.as_ref().map_or(all_pinned, ring_shape);
        let (old_vocab, new_vocab) = (self.vocab_of(self.plan.as_ref()), self.vocab_of(plan.as_ref()));

        // 1. Shrink: fewer cache slots, fewer pinned layers, the embeddings and head out
        // of RAM.
        if new_vocab.placement != old_vocab.placement && new_vocab.placement == VocabPlacement::Read {
            model.place_vocab(&self.index, &new_vocab)?;
        }
        if let (Some(cache), Some(p)) = (&self.cache, &plan) {
            if (p.cache_slots as usize) < cache.capacity() {
                cache.resize(p.cache_slots as usize);
            }
        }
        match &self.trunk {
            Some(trunk) => trunk.release_unplanned(&target.residency),
            // Resident trunk → streamed (a plan streams only with a packed trunk): drop
            // every layer, then load the new residency.
            None => {
                let Some(packed) = packed.take().filter(|_| streams_any(&target.residency)) else {
                    return self.finish_replan(model, opts, plan, target, progress);
                };
                let shape = RingShape { residency: vec![LayerResidency::Streamed; n_layers], ..target.clone() };
                let (index, io, counters) = (self.index.clone(), self.io.clone(), self.counters.clone());
                let trunk = Arc::new(StreamedTrunk::new(packed, index, &self.cfg, shape, io, counters, progress)?);
                model.set_trunk(Box::new(trunk.clone()));
                self.trunk = Some(trunk);
            }
        }
        self.finish_replan(model, opts, plan, target, progress)
    }

    /// The grow half of a replan: more pinned layers, more cache slots (or another expert
    /// source).
    fn finish_replan(
        &mut self,
        model: &mut Model,
        opts: MemoryOptions,
        plan: Option<MemoryPlan>,
        target: RingShape,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<()> {
        let (old_vocab, new_vocab) = (self.vocab_of(self.plan.as_ref()), self.vocab_of(plan.as_ref()));
        self.opts = opts;
        self.plan = plan;
        // What the shrink freed leaves the process before anything new is read.
        return_freed_memory();
        if new_vocab.placement != old_vocab.placement && new_vocab.placement == VocabPlacement::Held {
            model.place_vocab(&self.index, &new_vocab)?;
        }
        if let Some(trunk) = &self.trunk {
            trunk.repin(&target, progress)?;
        }
        match (&self.cache, &self.plan) {
            (Some(cache), Some(p)) => cache.resize(p.cache_slots as usize),
            (None, Some(p)) => {
                let sums = match &self.opts.trunk_dir {
                    Some(dir) => Some(open_expert_sums(dir, &self.cfg, &self.index)?),
                    None => None,
                };
                let cache = Arc::new(self.new_cache(p.cache_slots as usize, sums)?);
                model.set_experts(Box::new(cache.clone()));
                self.cache = Some(cache);
            }
            (Some(_), None) => {
                let experts = ResidentExperts::bind(&Binder::new(&self.index, true), &self.cfg)?;
                model.set_experts(Box::new(experts));
                self.cache = None;
            }
            (None, None) => {}
        }
        Ok(())
    }
}

/// `opts` with [`MemoryOptions::fit_context`] resolved: the fitted context in
/// `context_length`, and the flag cleared, so the options in force say what was reserved.
fn fitted(opts: &MemoryOptions, fp: &Footprint, machine: MachineMemory) -> MemoryOptions {
    let mut opts = opts.clone();
    if opts.fit_context {
        opts.context_length = fitted_context(fp, &opts, machine);
        opts.fit_context = false;
    }
    opts
}

/// The trunk's residency and ring under `plan`.
fn ring_shape(plan: &MemoryPlan) -> RingShape {
    let slot_bytes = (plan.ring_slots > 0).then_some(plan.ring_slot_bytes);
    RingShape { residency: plan.residency.clone(), ring_slots: plan.ring_slots, slot_bytes }
}

/// Marks the layers `packed` cannot stream in pieces (stored coded, or packed before
/// per-tensor checksums) as needing a slot of their whole size, so no plan asks for it.
fn restrict_pieces(fp: &mut Footprint, packed: &PackedTrunk) {
    for ((p, pieces), &whole) in packed.layers.iter().zip(&mut fp.layer_pieces).zip(&fp.layer_trunk_bytes) {
        if !p.has_pieces() {
            *pieces = k3_plan::LayerPieces { largest_piece: whole, eager_bytes: 0 };
        }
    }
}

/// True when a layer of `residency` is not pinned raw (so a streamed trunk is needed).
fn streams_any(residency: &[LayerResidency]) -> bool {
    residency.iter().any(|r| *r != LayerResidency::Pinned)
}
