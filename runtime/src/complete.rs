//! Running one raw continuation on the loaded model: no chat template, no carried state.
//!
//! Owns: encoding a [`CompletionTurn`]'s prompt as `k3 run --prompt` does (added-token
//! strings become their ids) and generating from a fresh engine session.
//! Must not: touch the cached chat session: a completion between two chat turns leaves
//! the conversation's engine state as it was.

use k3_engine::chat::ReplyReader;
use k3_engine::{CancelToken, EventSink};

use crate::error::RuntimeError;
use crate::figures::ReplyFigures;
use crate::handler::{CompletionTurn, FinishedReply};
use crate::model::LoadedModel;

/// Continues `turn.prompt`, streaming to `sink`.
pub(crate) fn run_completion(
    model: &LoadedModel,
    turn: &CompletionTurn,
    cancel: &CancelToken,
    sink: &mut dyn EventSink,
) -> Result<FinishedReply, RuntimeError> {
    // A prompt whose size alone shows it cannot fit is refused before it is encoded.
    let limit = model.engine.context_length();
    let at_least = model.tokenizer.min_tokens_for(turn.prompt.len());
    if at_least > limit {
        let bytes = turn.prompt.len();
        return Err(k3_engine::Error::PromptTooLong { bytes, at_least, room: limit, limit }.into());
    }
    let prompt = model.tokenizer.encode(&turn.prompt);
    let mut session = model.engine.new_session();
    let generation = model.engine.generate(&mut session, &prompt, &turn.params, cancel, sink)?;
    let text = ReplyReader::raw(&model.tokenizer).read_all(&generation.generated).response().to_string();
    let streamed = model.engine.plan().is_some();
    let figures = ReplyFigures::of(&generation, (session.tokens().len(), model.engine.context_length()), streamed);
    Ok(FinishedReply {
        text,
        think: None,
        tool_calls: Vec::new(),
        call_error: None,
        finish: generation.finish,
        figures,
        reused_history: false,
        generated: generation.generated,
        remote_host: None,
        state: None,
    })
}
