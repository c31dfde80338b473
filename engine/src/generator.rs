//! The engine's public entry: load a model folder, then score or generate.
//!
//! Owns: [`Engine::load`] (config → index → bind), the thread pool every kernel runs
//! in, [`Session`] (a conversation's tokens and carried state), prefill + incremental
//! decode or full recompute, sampling, stop ids, cancellation and per-token events.
//! Must not: hold global state, or let a cancelled forward pass leave a session whose
//! state disagrees with its tokens (such a session is rebuilt from its tokens).
//! Easy to break: the last generated token is NOT yet in the carried state; the next
//! call feeds `tokens[state.n_positions()..]` first.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::config::ModelConfig;
use crate::error::{Error, Result};
use crate::events::{CancelToken, EventSink, TokenEvent};
use crate::format::TensorIndex;
use crate::model::{LogitsFor, Model, SequenceState, Tap};
use crate::sampling::{Sampler, Sampling};

/// The longest sequence (prompt + generated) the engine accepts.
pub const MAX_CONTEXT: usize = 32_768 + 4_096;

/// What [`Engine::load`] needs.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Folder with `config.json` and the `*.safetensors` shards.
    pub model_dir: PathBuf,
    /// Worker threads for the kernels; `None` = all cores.
    pub threads: Option<usize>,
}

/// How each new token is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeMode {
    /// Prefill once, then one token per step with carried KDA state and MLA cache.
    Incremental,
    /// Clear all state and rerun the whole sequence at every step (a correctness check).
    FullRecompute,
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
}

/// A loaded model plus the thread pool it runs in.
pub struct Engine {
    model: Model,
    pool: rayon::ThreadPool,
}

impl Engine {
    /// Reads `config.json`, indexes the shards, validates and binds every tensor.
    pub fn load(opts: &EngineOptions) -> Result<Engine> {
        let cfg = ModelConfig::load(&opts.model_dir.join("config.json"))?;
        let index = TensorIndex::open(&opts.model_dir)?;
        let model = Model::bind(cfg, &index)?;
        let pool = build_pool(opts.threads)?;
        Ok(Engine { model, pool })
    }

    pub fn config(&self) -> &ModelConfig {
        self.model.config()
    }

    pub fn new_session(&self) -> Session {
        Session { tokens: Vec::new(), state: SequenceState::new(self.config()) }
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
        let mut state = SequenceState::new(self.config());
        self.pool.install(|| self.model.forward(ids, &mut state, LogitsFor::All, cancel, tap))
    }

    /// Appends `prompt` to the session and generates up to `params.max_new_tokens`.
    pub fn generate(
        &self,
        session: &mut Session,
        prompt: &[u32],
        params: &GenerateParams,
        cancel: &CancelToken,
        sink: &mut dyn EventSink,
    ) -> Result<Generation> {
        params.sampling.validate()?;
        if prompt.is_empty() && session.tokens.is_empty() {
            return Err(Error::Empty { what: "prompt" });
        }
        self.check_ids(prompt, session.tokens.len() + params.max_new_tokens)?;
        let mut sampler = Sampler::new(params.sampling.clone())?;
        session.tokens.extend_from_slice(prompt);
        let start = Instant::now();
        let mut generated = Vec::new();
        let mut prefill_time = Duration::ZERO;
        let mut step_start = start;
        if params.max_new_tokens == 0 {
            let n_prefilled = session.tokens.len().saturating_sub(1).saturating_sub(session.state.n_positions());
            let finish = self.prefill_pending(session, cancel)?;
            let elapsed = start.elapsed();
            return Ok(Generation { generated, finish, n_prefilled, prefill_time: elapsed, total_time: elapsed });
        }
        let n_prefilled = match params.mode {
            DecodeMode::Incremental if session.state.n_positions() <= session.tokens.len() => {
                session.tokens.len() - session.state.n_positions()
            }
            _ => session.tokens.len(),
        };
        let finish = loop {
            if generated.len() == params.max_new_tokens {
                break FinishReason::Length;
            }
            let Some(logits) = self.next_logits(session, params.mode, cancel)? else {
                break FinishReason::Cancelled;
            };
            let id = sampler.pick(&logits);
            if generated.is_empty() {
                prefill_time = start.elapsed();
                sink.prefill_done(session.tokens.len(), prefill_time);
            }
            session.tokens.push(id);
            generated.push(id);
            sink.token(&TokenEvent { index: generated.len() - 1, id, logits: &logits, elapsed: step_start.elapsed() });
            step_start = Instant::now();
            if params.stop_ids.contains(&id) {
                break FinishReason::Stop;
            }
        };
        Ok(Generation { generated, finish, n_prefilled, prefill_time, total_time: start.elapsed() })
    }

    /// Folds every session token but the last into the state (the last stays pending so
    /// the next call has a position to read logits from).
    fn prefill_pending(&self, session: &mut Session, cancel: &CancelToken) -> Result<FinishReason> {
        let upto = session.tokens.len().saturating_sub(1);
        if session.state.n_positions() >= upto {
            return Ok(FinishReason::Length);
        }
        let pending = &session.tokens[session.state.n_positions()..upto];
        let out =
            self.pool.install(|| self.model.forward(pending, &mut session.state, LogitsFor::Last, cancel, None))?;
        if out.is_none() {
            session.state = SequenceState::new(self.config());
            return Ok(FinishReason::Cancelled);
        }
        Ok(FinishReason::Length)
    }

    /// Logits of the last session token, feeding whatever the state has not consumed.
    fn next_logits(&self, session: &mut Session, mode: DecodeMode, cancel: &CancelToken) -> Result<Option<Vec<f32>>> {
        if mode == DecodeMode::FullRecompute || session.state.n_positions() > session.tokens.len() {
            session.state = SequenceState::new(self.config());
        }
        let pending = &session.tokens[session.state.n_positions()..];
        let out =
            self.pool.install(|| self.model.forward(pending, &mut session.state, LogitsFor::Last, cancel, None))?;
        if out.is_none() {
            // A pass stopped between layers leaves some layers ahead of others: rebuild later.
            session.state = SequenceState::new(self.config());
        }
        Ok(out)
    }

    fn check_ids(&self, ids: &[u32], extra: usize) -> Result<()> {
        let vocab_size = self.config().vocab_size;
        if let Some(&id) = ids.iter().find(|&&id| id as usize >= vocab_size) {
            return Err(Error::TokenId { id, vocab_size });
        }
        let requested = ids.len() + extra;
        if requested > MAX_CONTEXT {
            return Err(Error::ContextLimit { requested, limit: MAX_CONTEXT });
        }
        Ok(())
    }
}

fn build_pool(threads: Option<usize>) -> Result<rayon::ThreadPool> {
    if threads == Some(0) {
        return Err(Error::Option { option: "threads", reason: "must be at least 1".into() });
    }
    let mut builder = rayon::ThreadPoolBuilder::new().thread_name(|i| format!("k3-worker-{i}"));
    if let Some(n) = threads {
        builder = builder.num_threads(n);
    }
    builder.build().map_err(|e| Error::Option { option: "threads", reason: e.to_string() })
}

/// Convenience for callers that only have a path.
pub fn load_engine(model_dir: &Path, threads: Option<usize>) -> Result<Engine> {
    Engine::load(&EngineOptions { model_dir: model_dir.to_path_buf(), threads })
}
