//! The generation loop: from a session and a prompt to generated tokens — the prompt's
//! prefill, one forward pass per token (or per verified draft), the sampler and a
//! constraint's mask, stop ids, the context's end, cancel, per-token events — and the one
//! place a [`Generation`] is built.
//!
//! Owns: [`Engine::generate`] and its constrained and drafting forms, `Run` (what a
//! generation measured as it went).
//! Must not: emit a token that serial decoding would not: a draft is kept only as far as
//! serial picks agree with it (`SequenceState::keep_tentative` drops the rest).

use std::time::{Duration, Instant};

use super::{DecodeMode, Engine, FinishReason, GenerateParams, Generation, Session};
use crate::constraint::{next_mask, TokenConstraint};
use crate::error::{Error, Result};
use crate::events::{CancelToken, EventSink, TokenEvent};
use crate::model::LogitsFor;
use crate::sampling::Sampler;
use crate::speculate::{self, Drafter, Speculation, SpeculationStats};
use crate::stream::StreamMetrics;

/// What one generation measured while it ran.
struct Run {
    start: Instant,
    metrics_start: StreamMetrics,
    generated: Vec<u32>,
    /// When the first token's logits were ready (`None`: no token was generated).
    prefill_time: Option<Duration>,
    /// Only the prompt was fed (no token asked for): the whole call was its prefill.
    prefill_only: bool,
    speculation: SpeculationStats,
}

impl Run {
    fn new(metrics_start: StreamMetrics) -> Run {
        Run {
            start: Instant::now(),
            metrics_start,
            generated: Vec::new(),
            prefill_time: None,
            prefill_only: false,
            speculation: SpeculationStats::default(),
        }
    }

    /// The generation this run was, ended by `finish`.
    fn finish(self, engine: &Engine, finish: FinishReason, n_prefilled: usize) -> Generation {
        let total_time = self.start.elapsed();
        Generation {
            generated: self.generated,
            finish,
            n_prefilled,
            prefill_time: match self.prefill_time {
                Some(t) => t,
                None if self.prefill_only => total_time,
                None => Duration::ZERO,
            },
            total_time,
            metrics: engine.counters.snapshot().since(&self.metrics_start),
            peak_rss_bytes: crate::stream::peak_rss_bytes(),
            speculation: self.speculation,
        }
    }
}

/// Positions the generation's first forward pass computes: the session tokens the carried
/// state has not yet consumed (the new prompt, plus the last call's last generated token),
/// or all of them when the state is rebuilt; with no token to generate, those but the last.
fn prefilled_by_first_pass(session: &Session, params: &GenerateParams) -> usize {
    let held = session.state.n_positions();
    if params.max_new_tokens == 0 {
        return session.tokens.len().saturating_sub(1).saturating_sub(held);
    }
    match params.mode {
        DecodeMode::Incremental | DecodeMode::Speculative { .. } if held <= session.tokens.len() => {
            session.tokens.len() - held
        }
        _ => session.tokens.len(),
    }
}

impl Engine {
    /// Appends `prompt` to the session and generates up to `params.max_new_tokens`.
    pub fn generate(
        &self,
        session: &mut Session,
        prompt: &[u32],
        params: &GenerateParams,
        cancel: &CancelToken,
        sink: &mut dyn EventSink,
    ) -> Result<Generation> {
        self.generate_constrained(session, prompt, params, None, cancel, sink)
    }

    /// [`Engine::generate`] picking only tokens `constraint` allows (`crate::constraint`).
    pub fn generate_constrained(
        &self,
        session: &mut Session,
        prompt: &[u32],
        params: &GenerateParams,
        constraint: Option<&mut dyn TokenConstraint>,
        cancel: &CancelToken,
        sink: &mut dyn EventSink,
    ) -> Result<Generation> {
        let mut drafter = Speculation::new(match params.mode {
            DecodeMode::Speculative { max_draft } if max_draft > speculate::MAX_DRAFT => {
                let reason = format!("{max_draft} draft tokens; at most {}", speculate::MAX_DRAFT);
                return Err(Error::Option { option: "speculate", reason });
            }
            DecodeMode::Speculative { max_draft } => max_draft,
            DecodeMode::Incremental | DecodeMode::FullRecompute => 0,
        });
        self.generate_drafting(session, prompt, params, (&mut drafter, constraint), (cancel, sink))
    }

    /// [`Engine::generate`] with drafts from `drafter` (in `DecodeMode::Speculative`; other
    /// modes never ask it): whatever it proposes, the output is serial decoding's. Drafts
    /// are cut to the generation's room and to [`speculate::MAX_DRAFT`]. With a
    /// `constraint`, each pick is among the tokens it allows.
    pub fn generate_drafting(
        &self,
        session: &mut Session,
        prompt: &[u32],
        params: &GenerateParams,
        (drafter, constraint): (&mut dyn Drafter, Option<&mut dyn TokenConstraint>),
        (cancel, sink): (&CancelToken, &mut dyn EventSink),
    ) -> Result<Generation> {
        params.sampling.validate()?;
        // Generations on other threads share this one's forward passes while it runs.
        let _member = self.gate.join();
        if prompt.is_empty() && session.tokens.is_empty() {
            return Err(Error::Empty { what: "prompt" });
        }
        self.check_ids(prompt, session.tokens.len())?;
        let sampler = Sampler::new(params.sampling.clone())?;
        session.tokens.extend_from_slice(prompt);
        let n_prefilled = prefilled_by_first_pass(session, params);
        let mut run = Run::new(self.counters.snapshot());
        let finish = if params.max_new_tokens == 0 {
            run.prefill_only = true;
            self.prefill_pending(session, cancel)?
        } else {
            self.decode_loop(session, params, &mut run, sampler, (drafter, constraint), (cancel, sink))?
        };
        Ok(run.finish(self, finish, n_prefilled))
    }

    /// One pass per token (or per verified draft) until the limit, a stop id, the
    /// context's end or a cancel: the generated tokens go into `run`.
    fn decode_loop(
        &self,
        session: &mut Session,
        params: &GenerateParams,
        run: &mut Run,
        mut sampler: Sampler,
        (drafter, mut constraint): (&mut dyn Drafter, Option<&mut dyn TokenConstraint>),
        (cancel, sink): (&CancelToken, &mut dyn EventSink),
    ) -> Result<FinishReason> {
        let speculative = matches!(params.mode, DecodeMode::Speculative { .. });
        let vocab = self.config().vocab_size;
        let mut metrics_step = run.metrics_start;
        let mut step_start = run.start;
        loop {
            if run.generated.len() == params.max_new_tokens {
                return Ok(FinishReason::Length);
            }
            if session.tokens.len() >= self.context_length() {
                return Ok(FinishReason::ContextFull);
            }
            // Drafts only once the state has caught up (the prompt is prefilled normally).
            let room = (params.max_new_tokens - run.generated.len()).min(self.context_length() - session.tokens.len());
            let caught_up = session.state.n_positions() + 1 == session.tokens.len();
            let mut draft = if caught_up && speculative { drafter.next_draft(&session.tokens, room) } else { vec![] };
            draft.truncate((room - 1).min(speculate::MAX_DRAFT));
            let pass_start = Instant::now();
            let Some(rows) = self.next_rows(session, params.mode, &draft, cancel, sink)? else {
                return Ok(FinishReason::Cancelled);
            };
            let pass_time = pass_start.elapsed();
            if run.generated.is_empty() {
                let prefill_time = run.start.elapsed();
                run.prefill_time = Some(prefill_time);
                sink.prefill_done(session.tokens.len(), prefill_time);
            }
            // Serial decoding's picks, position by position, until one differs from the draft.
            let mut emitted = 0;
            let mut stopped = false;
            for (j, logits) in rows.chunks(vocab).enumerate() {
                let id = match constraint.as_deref_mut() {
                    None => sampler.pick(logits),
                    Some(c) => {
                        let id = sampler.pick_allowed(logits, &next_mask(c, vocab)?);
                        c.commit(id).map_err(|reason| Error::Constraint { reason })?;
                        id
                    }
                };
                session.tokens.push(id);
                run.generated.push(id);
                emitted += 1;
                let now = self.counters.snapshot();
                let metrics = now.since(&metrics_step);
                metrics_step = now;
                let index = run.generated.len() - 1;
                sink.token(&TokenEvent { index, id, logits, elapsed: step_start.elapsed(), metrics });
                step_start = Instant::now();
                stopped = params.stop_ids.contains(&id);
                if stopped || draft.get(j) != Some(&id) {
                    break;
                }
            }
            if !draft.is_empty() {
                // The pass fed the pending token and the draft; serial decoding would have
                // fed the pending token and every emitted one but the last.
                session.state.keep_tentative(self.config(), emitted);
                let new = &run.generated[run.generated.len() - emitted..];
                drafter.verified(&draft, new, pass_time);
                run.speculation.verify_passes += 1;
                run.speculation.drafted += draft.len();
                run.speculation.accepted += new.iter().zip(&draft).take_while(|(got, drafted)| got == drafted).count();
            } else if caught_up {
                drafter.serial_step(pass_time);
            }
            if stopped {
                return Ok(FinishReason::Stop);
            }
        }
    }

    /// Folds every session token but the last into the state (the last stays pending so
    /// the next call has a position to read logits from).
    fn prefill_pending(&self, session: &mut Session, cancel: &CancelToken) -> Result<FinishReason> {
        let upto = session.tokens.len().saturating_sub(1);
        if session.state.n_positions() >= upto {
            return Ok(FinishReason::Length);
        }
        let pending = session.tokens[session.state.n_positions()..upto].to_vec();
        match self.feed(&mut session.state, &pending, cancel, &mut crate::events::NullSink)? {
            Some(_) => Ok(FinishReason::Length),
            None => {
                session.state.reset();
                Ok(FinishReason::Cancelled)
            }
        }
    }

    /// Logits of the last session token, feeding whatever the state has not consumed; with
    /// a `draft`, one tentative pass over the last token and the draft gives the logits of
    /// every one of those positions, `[(1 + draft.len()) × vocab]`.
    fn next_rows(
        &self,
        session: &mut Session,
        mode: DecodeMode,
        draft: &[u32],
        cancel: &CancelToken,
        sink: &mut dyn EventSink,
    ) -> Result<Option<Vec<f32>>> {
        if mode == DecodeMode::FullRecompute || session.state.n_positions() > session.tokens.len() {
            session.state.reset();
        }
        let out = if draft.is_empty() {
            let pending = session.tokens[session.state.n_positions()..].to_vec();
            self.feed(&mut session.state, &pending, cancel, sink)?
        } else {
            let mut batch = session.tokens[session.state.n_positions()..].to_vec();
            batch.extend_from_slice(draft);
            session.state.begin_tentative();
            let state = &mut session.state;
            self.gate.exclusive(cancel, || {
                self.pool.install(|| self.model.forward(&batch, state, LogitsFor::All, cancel, None))
            })?
        };
        if out.is_none() {
            // A pass stopped between layers leaves some layers ahead of others: rebuild later.
            session.state.reset();
        }
        Ok(out)
    }
}
