//! Running one chat turn on the loaded model, reusing the engine state of a kept
//! conversation when it holds exactly this one's history.
//!
//! Owns: the reuse rule: a kept session ([`KeptChats`]) serves a turn only when its
//! conversation key, mode, system prompt and messages equal the turn's; otherwise a new
//! session replays the history (edits, regenerations, another conversation). A turn with a
//! state file resumes from it when nothing kept holds it (a restart) and the file holds
//! exactly this conversation, and saves the session there when the reply ends
//! (`k3_engine::resume`).
//! Must not: keep a session whose turn failed (its tokens may disagree with the history);
//! hold the kept sessions' lock while the turn generates (other replies run meanwhile).

use std::sync::Mutex;

use k3_constrain::ReplyShape;
use k3_engine::chat::ChatSession;
use k3_engine::constraint::TokenConstraint;
use k3_engine::{CancelToken, EventSink};

use crate::error::RuntimeError;
use crate::figures::ReplyFigures;
use crate::handler::{ChatTurn, FinishedReply, StateNote};
use crate::kept::{holds, KeptChats, KeptSource};
use crate::model::LoadedModel;

/// Answers `turn`, streaming to `sink`; the session is kept again on success.
pub fn run_turn(
    model: &LoadedModel,
    kept: &Mutex<KeptChats>,
    turn: &ChatTurn,
    cancel: &CancelToken,
    sink: &mut dyn EventSink,
) -> Result<FinishedReply, RuntimeError> {
    let tools = turn.declared_tools();
    let shape = ReplyShape {
        mode: turn.mode,
        tools: &tools,
        options: &turn.input.options,
        parallel_calls: !turn.input.single_call,
    };
    let mut constraint = model.constraint(&shape)?;
    let (mut session, resumed) = take_session(model, kept, turn);
    let constraint = constraint.as_mut().map(|c| c as &mut dyn TokenConstraint);
    let sent =
        session.send_turn(&model.engine, &model.tokenizer, &turn.input, &turn.params, constraint, (cancel, sink));
    let reply = match sent {
        Ok(reply) => reply,
        Err(e) => {
            crate::lock(kept).release();
            return Err(e.into());
        }
    };
    let state = turn.state_file.as_deref().map(|path| match (session.save(&model.engine, path), resumed) {
        (Err(e), _) => {
            log::warn!("saving the conversation state to {}: {e}", path.display());
            StateNote::SaveFailed(e.to_string())
        }
        // Read back, but the history renders differently than the tokens it held (a reply
        // with stray added tokens): the turn replayed it, as it would have in RAM.
        (Ok(()), Some(StateNote::Resumed)) if !reply.reused_history => {
            StateNote::Refused("the history renders differently than the saved tokens".into())
        }
        (Ok(()), Some(note)) => note,
        (Ok(()), None) => StateNote::Saved,
    });
    let streamed = model.engine.plan().is_some();
    let positions = (session.tokens().len(), model.engine.context_length());
    let figures = ReplyFigures::of(&reply.generation, positions, streamed);
    let think = session.messages().last().and_then(|m| m.think.clone());
    let finished = FinishedReply {
        text: reply.text,
        think,
        tool_calls: reply.tool_calls,
        call_error: reply.call_error,
        finish: reply.generation.finish,
        figures,
        reused_history: reply.reused_history,
        generated: reply.generation.generated.clone(),
        remote_host: None,
        state,
    };
    crate::lock(kept).keep(model, turn.conversation, session);
    Ok(finished)
}

/// A kept session that holds exactly this history; else the one saved in the turn's
/// state file when that does (with what became of the file); otherwise a new one.
fn take_session(model: &LoadedModel, kept: &Mutex<KeptChats>, turn: &ChatTurn) -> (ChatSession, Option<StateNote>) {
    let taken = crate::lock(kept).take(model, turn);
    if let Some((session, source)) = taken {
        log::debug!("continuing a kept conversation from {}", if source == KeptSource::Ram { "RAM" } else { "disk" });
        return (session, None);
    }
    // A file that holds another history (an edit, a regeneration, a reset) is simply
    // written anew after this turn; one that cannot be read for this model is reported.
    let resumed = turn.state_file.as_deref().filter(|p| p.exists()).map(|path| {
        ChatSession::resume(&model.engine, model.template.clone(), path).map(|s| Some(s).filter(|s| holds(s, turn)))
    });
    let note = match resumed {
        Some(Ok(Some(session))) => return (session, Some(StateNote::Resumed)),
        Some(Err(e)) => {
            log::info!("not resuming from the saved state: {e}");
            Some(StateNote::Refused(e.to_string()))
        }
        Some(Ok(None)) | None => None,
    };
    let mut session = ChatSession::new(&model.engine, model.template.clone(), turn.mode, turn.system.clone());
    session.replace_history(turn.history.clone());
    (session, note)
}
