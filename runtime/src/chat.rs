//! Running one chat turn on the loaded model, reusing the engine state of the turn
//! before when it holds exactly this conversation.
//!
//! Owns: [`CachedChat`] (the `ChatSession` of the conversation answered last) and the
//! reuse rule: the cached session serves a turn only when its conversation key, mode,
//! system prompt and messages equal the turn's; otherwise a new session replays the
//! history (edits, regenerations, another conversation, a restart).
//! Must not: keep a session whose turn failed (its tokens may disagree with the history).

use k3_engine::chat::ChatSession;
use k3_engine::{CancelToken, EventSink};

use crate::error::RuntimeError;
use crate::figures::ReplyFigures;
use crate::handler::{ChatTurn, FinishedReply};
use crate::model::LoadedModel;

/// The engine state of the conversation answered last.
pub struct CachedChat {
    conversation: i64,
    session: ChatSession,
}

/// Answers `turn`, streaming to `sink`; the session is cached again on success.
pub fn run_turn(
    model: &LoadedModel,
    cached: &mut Option<CachedChat>,
    turn: &ChatTurn,
    cancel: &CancelToken,
    sink: &mut dyn EventSink,
) -> Result<FinishedReply, RuntimeError> {
    let mut session = take_session(model, cached, turn);
    let reply = session.send(&model.engine, &model.tokenizer, &turn.user_text, &turn.params, cancel, sink)?;
    let streamed = model.engine.plan().is_some();
    let figures = ReplyFigures::of(&reply.generation, session.tokens().len(), streamed);
    let think = session.messages().last().and_then(|m| m.think.clone());
    let finished = FinishedReply {
        text: reply.text,
        think,
        finish: reply.generation.finish,
        figures,
        reused_history: reply.reused_history,
        generated: reply.generation.generated.clone(),
        remote_host: None,
    };
    *cached = Some(CachedChat { conversation: turn.conversation, session });
    Ok(finished)
}

/// The cached session when it holds exactly this history; otherwise a new one.
fn take_session(model: &LoadedModel, cached: &mut Option<CachedChat>, turn: &ChatTurn) -> ChatSession {
    if let Some(c) = cached.take() {
        let s = &c.session;
        if c.conversation == turn.conversation
            && s.mode() == turn.mode
            && s.system() == turn.system.as_deref()
            && s.messages() == turn.history.as_slice()
        {
            return c.session;
        }
    }
    let mut session = ChatSession::new(&model.engine, model.template.clone(), turn.mode, turn.system.clone());
    session.replace_history(turn.history.clone());
    session
}
