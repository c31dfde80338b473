//! Several conversations in one forward pass: the engine's side of batched decoding.
//!
//! Owns: [`Engine::step_batch`] (each session's pending tokens, a bounded number of rows
//! each, through one [`crate::model::Model::forward_batch`]) and the session edits a batch
//! driver needs ([`Session::push`], [`Engine::extend_session`]). Sampling, stop rules and
//! streaming stay with the caller (`k3 bench batch`, the server's scheduler), one sampler
//! per sequence.
//! Must not: let one sequence's rows change another's numbers: the pass works row by row
//! except inside each sequence's own attention, so a session's logits are those it gets
//! alone, whatever the batch, its order or the rows per session.
//! Easy to break: a session's last token stays pending until the pass that feeds it, whose
//! logits pick the next token (as in [`Engine::generate`]).

use super::{Engine, Session};
use crate::error::{Error, Result};
use crate::events::CancelToken;
use crate::model::{LogitsFor, SequenceInput};

impl Session {
    /// Appends a token picked from the last logits: it is pending until the next pass.
    pub fn push(&mut self, id: u32) {
        self.tokens.push(id);
    }

    /// Tokens not yet folded into the state.
    pub fn pending(&self) -> usize {
        self.tokens.len().saturating_sub(self.state.n_positions())
    }
}

impl Engine {
    /// Appends `tokens` (a prompt, a tool result) to `session` after checking every id and
    /// the context length; they are fed by the next passes.
    pub fn extend_session(&self, session: &mut Session, tokens: &[u32]) -> Result<()> {
        self.check_ids(tokens, session.tokens.len())?;
        session.tokens.extend_from_slice(tokens);
        Ok(())
    }

    /// One forward pass over several sessions: each feeds up to `rows_per_session` of its
    /// pending tokens (a new prompt's prefill chunk rides along with other sessions' single
    /// decode steps). Returns, per session in order, the logits of its last token when this
    /// pass fed it (the session is caught up and the caller picks its next token), else
    /// `None` (still prefilling). `Ok(None)` when cancelled: every session of the batch is
    /// then reset, to be rebuilt from its tokens by the next pass (as after a failed pass,
    /// whose error is returned). A session with nothing pending is an error, as is a
    /// session past the context length. It drives its own passes, outside the step gate
    /// (`gate.rs`): not for use while generations run on other threads.
    pub fn step_batch(
        &self,
        sessions: &mut [&mut Session],
        rows_per_session: usize,
        cancel: &CancelToken,
    ) -> Result<Option<Vec<Option<Vec<f32>>>>> {
        let rows = rows_per_session.max(1);
        let limit = self.context_length();
        let mut feeds = Vec::with_capacity(sessions.len());
        for s in sessions.iter() {
            if s.tokens.len() > limit {
                return Err(Error::ContextLimit { requested: s.tokens.len(), limit });
            }
            let from = s.state.n_positions();
            let to = (from + rows).min(s.tokens.len());
            if from >= to {
                return Err(Error::Empty { what: "pending tokens of a batched session" });
            }
            feeds.push((s.tokens[from..to].to_vec(), to == s.tokens.len()));
        }
        let mut inputs: Vec<SequenceInput<'_>> = sessions
            .iter_mut()
            .zip(&feeds)
            .map(|(s, (tokens, last))| SequenceInput {
                tokens,
                state: &mut s.state,
                want: if *last { LogitsFor::Last } else { LogitsFor::None },
            })
            .collect();
        let out = self.pool.install(|| self.model.forward_batch(&mut inputs, cancel, None));
        drop(inputs);
        // A pass that stopped or failed part-way leaves some layers ahead of others.
        let Ok(Some(logits)) = out else {
            sessions.iter_mut().for_each(|s| s.state.reset());
            return out.map(|_| None);
        };
        Ok(Some(logits.into_iter().zip(&feeds).map(|(l, (_, last))| last.then_some(l)).collect()))
    }
}
