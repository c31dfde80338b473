//! The engine's public entry: load a model folder, then score or generate.
//!
//! Layout: `decoder` (the generation loop: prefill, incremental or full recompute, exact
//! speculative decoding, sampling, stop ids, per-token events; the one place a
//! [`Generation`] is built) · `gate` (the step gate generations share passes through) ·
//! `batch` (several sequences' steps in one pass).
//! Owns: [`Engine::load`] (config → index → plan → bind), [`Engine::replan`] (another
//! memory plan between generations, no reload), the thread pool every kernel runs in,
//! [`Session`] (a conversation's tokens and carried state), scoring, feeding tokens,
//! saved sessions, the context length.
//! Must not: hold global state, or let a cancelled forward pass leave a session whose
//! state disagrees with its tokens (such a session is rebuilt from its tokens).
//! Easy to break: the last generated token is NOT yet in the carried state; the next
//! call feeds `tokens[state.n_positions()..]` first.

mod batch;
mod decoder;
mod gate;

pub use gate::BatchCounters;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use k3_plan::{BudgetChoice, Footprint, MemoryPlan, ResidencyRule, PREFILL_CHUNK};

use crate::config::ModelConfig;
use crate::error::{Error, Result};
use crate::events::{CancelToken, EventSink};
use crate::format::TensorIndex;
use crate::model::{LogitsFor, Model, SequenceState, Tap};
use crate::options::{EngineOptions, MemoryOptions};
use crate::resume::{self, CheckpointIdentity};
use crate::sampling::Sampling;
use crate::speculate::SpeculationStats;
use crate::stream::residency::Residency;
use crate::stream::{Counters, StreamMetrics};

/// How each new token is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeMode {
    /// Prefill once, then one token per step with carried KDA state and MLA cache.
    Incremental,
    /// Clear all state and rerun the whole sequence at every step (a correctness check).
    FullRecompute,
    /// Incremental, with up to `max_draft` tokens drafted by prompt lookup and verified
    /// in one batched pass (`speculate`): the same tokens and logits as `Incremental`,
    /// several tokens per pass where the text repeats.
    Speculative { max_draft: usize },
}

/// Parameters of one generation.
#[derive(Debug, Clone)]
pub struct GenerateParams {
    pub max_new_tokens: usize,
    pub sampling: Sampling,
    /// Generation stops after emitting any of these ids.
    pub stop_ids: Vec<u32>,
    pub mode: DecodeMode,
}

/// Why a generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    /// `max_new_tokens` reached.
    Length,
    /// A stop id was generated (it is the last generated id).
    Stop,
    /// The cancel token was set.
    Cancelled,
    /// The conversation reached the context length the memory plan reserved.
    ContextFull,
}

/// The result of one generation.
#[derive(Debug, Clone)]
pub struct Generation {
    pub generated: Vec<u32>,
    /// Positions computed by the first forward pass of this call: the session tokens the
    /// carried state had not yet consumed (the new prompt, plus the previous call's last
    /// generated token). A multi-turn chat shows here that only the new turn was prefilled.
    pub n_prefilled: usize,
    pub finish: FinishReason,
    /// Time until the first token's logits were ready.
    pub prefill_time: Duration,
    pub total_time: Duration,
    /// What streaming did during this call.
    pub metrics: StreamMetrics,
    /// Peak resident set of the process at the end of the call (bytes), where known.
    pub peak_rss_bytes: Option<u64>,
    /// Drafts verified and accepted (all zero unless `DecodeMode::Speculative`).
    pub speculation: SpeculationStats,
}

/// One conversation: its tokens so far and the state that has consumed a prefix of them.
pub struct Session {
    tokens: Vec<u32>,
    state: SequenceState,
}

impl Session {
    /// All tokens of the conversation (prompts and generated).
    pub fn tokens(&self) -> &[u32] {
        &self.tokens
    }
    /// Forgets everything: tokens and carried state.
    pub fn clear(&mut self) {
        self.tokens.clear();
        self.state.reset();
    }

    /// Positions already folded into the carried state.
    pub fn n_cached_positions(&self) -> usize {
        self.state.n_positions()
    }

    /// The carried state (KDA states, conv histories, MLA caches).
    pub fn carried(&self) -> &SequenceState {
        &self.state
    }
}

/// A loaded model plus the thread pool it runs in.
pub struct Engine {
    model: Model,
    pool: rayon::ThreadPool,
    residency: Residency,
    counters: Arc<Counters>,
    /// What saved conversation states are tied to (`resume`).
    identity: CheckpointIdentity,
    /// Where generations running on several threads meet to share forward passes.
    gate: gate::StepGate,
}

impl Engine {
    /// Reads `config.json`, indexes the shards, plans memory, validates every tensor and
    /// binds the weights the plan keeps in RAM.
    pub fn load(opts: &EngineOptions) -> Result<Engine> {
        Self::load_with_progress(opts, &mut |_, _| {})
    }

    /// [`Engine::load`], reporting `progress(done, total)` as each trunk layer the plan
    /// pins is read from the packed trunk (the long part of opening a streamed K3).
    pub fn load_with_progress(opts: &EngineOptions, progress: &mut dyn FnMut(usize, usize)) -> Result<Engine> {
        crate::io::release::bound_heap_retention();
        let cfg = ModelConfig::load(&opts.model_dir.join("config.json"))?;
        let index = Arc::new(TensorIndex::open(&opts.model_dir)?);
        let pool = build_pool(opts.threads)?;
        let counters = Arc::new(Counters::default());
        // Every tensor is checked before the plan measures the checkpoint or any weight is read.
        Model::validate(&cfg, &index)?;
        let (residency, sources) = Residency::new(&cfg, index.clone(), &opts.memory, counters.clone(), progress)?;
        let model = Model::bind_validated(cfg, &index, sources.trunk, sources.experts, sources.vocab)?;
        let identity = CheckpointIdentity::of(&opts.model_dir, index.shard_paths())?;
        Ok(Engine { model, pool, residency, counters, identity, gate: gate::StepGate::default() })
    }

    /// The memory plan in force (`None` when everything is resident).
    pub fn plan(&self) -> Option<&MemoryPlan> {
        self.residency.plan()
    }

    /// Tokens per prefill chunk: the plan's ([`MemoryPlan::prefill_chunk`], sized by its
    /// budgets), or [`PREFILL_CHUNK`] with every weight resident, where the chunk changes
    /// no read (measured on k3-mid: 512-token prompts took the same time at 64 and 512).
    /// Never changes a result: the arithmetic per token is the same in any chunking.
    pub fn prefill_chunk(&self) -> usize {
        self.plan().map_or(PREFILL_CHUNK, |p| p.prefill_chunk as usize).max(1)
    }

    /// The checkpoint's sizes as the planner sees them.
    pub fn footprint(&self) -> &Footprint {
        self.residency.footprint()
    }

    /// The memory options in force (the budget of the last successful replan).
    pub fn memory_options(&self) -> &MemoryOptions {
        self.residency.options()
    }

    /// Threads the kernels run on.
    pub fn compute_threads(&self) -> usize {
        self.pool.current_num_threads()
    }

    /// Positions one session may hold (prompt + generated).
    pub fn context_length(&self) -> usize {
        self.residency.options().context_length
    }

    /// Sequence states the plan holds at once (sessions kept besides the one answering).
    pub fn sequences(&self) -> usize {
        self.residency.options().sequences
    }

    /// Another memory plan, between generations, without reloading: `choice` `None` keeps
    /// every weight resident. Sessions stay valid and their next tokens are the ones they
    /// would have been (the budget changes only the speed). On a refused plan nothing
    /// changes; `progress(done, total)` reports trunk layers being pinned.
    pub fn replan(&mut self, choice: Option<BudgetChoice>, progress: &mut dyn FnMut(usize, usize)) -> Result<()> {
        self.replan_with(choice, (self.context_length(), self.residency_rule()), progress)
    }

    /// [`Engine::replan`] that also reserves KV cache for `context_length` positions per
    /// session from now on, and places the trunk's layers by `rule` (this and later
    /// replans). Sessions made before keep what they reserved; one already past the new
    /// length ends its next generation as `ContextFull`.
    pub fn replan_with(
        &mut self,
        choice: Option<BudgetChoice>,
        (context_length, rule): (usize, ResidencyRule),
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<()> {
        self.residency.replan(&mut self.model, choice, (context_length, rule), progress)
    }

    /// How the plan in force places the trunk's layers.
    pub fn residency_rule(&self) -> ResidencyRule {
        self.residency.options().residency
    }

    /// Generations decoding together now, and the batched steps and rows run so far.
    pub fn batch_counters(&self) -> BatchCounters {
        self.gate.counters()
    }

    /// Streaming counters since the engine was loaded.
    pub fn metrics(&self) -> StreamMetrics {
        self.counters.snapshot()
    }

    /// The live counters, readable from any thread while the engine runs.
    pub fn counters(&self) -> Arc<Counters> {
        self.counters.clone()
    }

    /// The routed-expert requests recorded so far (with `MemoryOptions::record_trace`),
    /// as `(layer, expert)` in request order; the record is emptied.
    pub fn take_expert_trace(&self) -> Vec<(u32, u32)> {
        self.residency.cache().map(|c| c.take_trace()).unwrap_or_default()
    }

    pub fn config(&self) -> &ModelConfig {
        self.model.config()
    }

    pub fn new_session(&self) -> Session {
        Session { tokens: Vec::new(), state: self.fresh_state() }
    }

    /// Teacher forcing: one pass over `ids` from an empty state; logits `[n][vocab]`.
    /// `None` when cancelled.
    pub fn score(
        &self,
        ids: &[u32],
        cancel: &CancelToken,
        tap: Option<&mut (dyn Tap + Send)>,
    ) -> Result<Option<Vec<f32>>> {
        self.check_ids(ids, 0)?;
        let mut state = SequenceState::new(self.config(), ids.len());
        self.pool.install(|| self.model.forward(ids, &mut state, LogitsFor::All, cancel, tap))
    }

    /// Teacher forcing in chunks of `PREFILL_CHUNK` positions: `each(first_position,
    /// logits)` receives each chunk's logits `[chunk][vocab]` as soon as they exist, so a
    /// long sequence never holds all its logits at once. Bit-identical to [`Engine::score`]
    /// (the arithmetic per position does not depend on the chunking). False when cancelled.
    pub fn score_chunked(
        &self,
        ids: &[u32],
        cancel: &CancelToken,
        each: &mut dyn FnMut(usize, &[f32]) -> Result<()>,
    ) -> Result<bool> {
        self.check_ids(ids, 0)?;
        if ids.is_empty() {
            return Err(Error::Empty { what: "token batch" });
        }
        let mut state = SequenceState::new(self.config(), ids.len());
        for (i, chunk) in ids.chunks(PREFILL_CHUNK).enumerate() {
            match self.pool.install(|| self.model.forward(chunk, &mut state, LogitsFor::All, cancel, None))? {
                Some(logits) => each(i * PREFILL_CHUNK, &logits)?,
                None => return Ok(false),
            }
        }
        Ok(true)
    }

    /// Runs `tokens` through the model in steps of at most [`Engine::prefill_chunk`] rows,
    /// shared with the other generations running now (`gate`; bounded scratch, and the
    /// arithmetic per token is the same in any chunking or company); returns the last
    /// token's logits, or `None` when cancelled. Feeds of several steps report progress to
    /// `sink`.
    fn feed(
        &self,
        state: &mut SequenceState,
        tokens: &[u32],
        cancel: &CancelToken,
        sink: &mut dyn EventSink,
    ) -> Result<Option<Vec<f32>>> {
        let total = tokens.len();
        self.feed_gated(state, tokens, cancel, &mut |done| sink.prefill_progress(done, total))
    }

    /// Saves `session` (its tokens and carried state, tied to this checkpoint) to `path`
    /// atomically, with the caller's `note`; [`Engine::resume_session`] reads it back.
    pub fn save_session(&self, session: &Session, path: &Path, note: serde_json::Value) -> Result<()> {
        resume::save(path, &self.identity, &session.tokens, &session.state, note)
    }

    /// The session saved at `path`, so the next turn prefills only what is new; a file of
    /// another checkpoint, truncated, corrupted or past this context is
    /// [`Error::StateFile`] (start a fresh session instead).
    pub fn resume_session(&self, path: &Path) -> Result<(Session, serde_json::Value)> {
        let r = resume::load(path, &self.identity, self.config(), self.context_length())?;
        Ok((Session { tokens: r.tokens, state: r.state }, r.note))
    }

    /// `session` grown to `positions` positions by repeating the positions it holds (their
    /// tokens and MLA rows, in order; KDA states unchanged), for `k3 bench context`: the
    /// work of each later step is that of a real conversation of that length, though its
    /// numbers are not. An empty session or more positions than the context length is
    /// [`Error::Option`].
    pub fn session_repeated_to(&self, mut session: Session, positions: usize) -> Result<Session> {
        let held = session.state.n_positions();
        if !session.state.repeat_positions_to(self.config(), positions, self.context_length()) {
            let reason =
                format!("cannot grow {held} held positions to {positions} (context length {})", self.context_length());
            return Err(Error::Option { option: "context", reason });
        }
        let prefix = session.tokens[..held].to_vec();
        session.tokens = prefix.iter().copied().cycle().take(positions).collect();
        Ok(session)
    }

    /// A state with KV room for the context length.
    fn fresh_state(&self) -> SequenceState {
        SequenceState::new(self.config(), self.context_length())
    }

    /// Refuses ids outside the vocabulary, and `ids` after `already` positions beyond the
    /// context length.
    fn check_ids(&self, ids: &[u32], already: usize) -> Result<()> {
        let vocab_size = self.config().vocab_size;
        if let Some(&id) = ids.iter().find(|&&id| id as usize >= vocab_size) {
            return Err(Error::TokenId { id, vocab_size });
        }
        let requested = ids.len() + already;
        let limit = self.context_length();
        if requested > limit {
            return Err(Error::ContextLimit { requested, limit });
        }
        Ok(())
    }
}

/// The most kernel threads an engine (or a benchmark) starts.
pub const MAX_THREADS: usize = 1024;

fn build_pool(threads: Option<usize>) -> Result<rayon::ThreadPool> {
    if let Some(n) = threads.filter(|&n| n == 0 || n > MAX_THREADS) {
        return Err(Error::Option { option: "threads", reason: format!("{n} is not between 1 and {MAX_THREADS}") });
    }
    let mut builder = rayon::ThreadPoolBuilder::new().thread_name(|i| format!("k3-worker-{i}"));
    if let Some(n) = threads {
        builder = builder.num_threads(n);
    }
    builder.build().map_err(|e| Error::Option { option: "threads", reason: e.to_string() })
}
