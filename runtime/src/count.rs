//! Counting a turn's prompt tokens without the engine (Anthropic's `count_tokens`): the
//! loaded model's template and tokenizer, shared with the front ends' threads.
//!
//! Owns: [`PromptCounter`], replaced by the worker each time a model opens.
//! Must not: count differently than a turn feeds: it is `k3_engine::chat::prompt_tokens`,
//! the encoding `ChatSession::send_turn` uses.

use std::sync::Arc;

use k3_engine::chat::{prompt_tokens, ChatTemplate};
use k3_engine::tokenizer::Tokenizer;

use crate::error::RuntimeError;
use crate::handler::ChatTurn;

/// The open model's template and tokenizer.
pub struct PromptCounter {
    pub(crate) template: ChatTemplate,
    pub(crate) tokenizer: Arc<Tokenizer>,
}

impl PromptCounter {
    /// The tokens `turn`'s prompt has: system, history, input and options, rendered.
    pub fn count(&self, turn: &ChatTurn) -> Result<usize, RuntimeError> {
        let tokens = prompt_tokens(
            (&self.template, &self.tokenizer),
            (turn.mode, turn.system.as_deref()),
            &turn.history,
            &turn.input,
        )?;
        Ok(tokens.len())
    }
}
