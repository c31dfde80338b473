//! One message of `k3 chat`: the turn sent to the runtime, the reply's text streamed as it
//! comes, Ctrl-C stopping it, and the stats line and notes printed after it.

use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};

use k3_engine::chat::{ChatMessage, Role, TurnInput};
use k3_engine::FinishReason;
use k3_runtime::{ChatTurn, JobId, ReplyHandler, ReplyOutcome, ReplyProgress, Runtime, StateNote};

use super::conversation::Conversation;
use crate::commands::{runtime_error, Failure};

/// Prints reply text as it streams and hands the outcome back to the REPL.
struct TerminalReply {
    turn: Option<ChatTurn>,
    done: Sender<ReplyOutcome>,
}

impl ReplyHandler for TerminalReply {
    fn queued(&mut self, _job: JobId, _position: usize) {}

    fn begin(&mut self, _job: JobId) -> Option<ChatTurn> {
        self.turn.take()
    }

    fn progress(&mut self, _job: JobId, progress: ReplyProgress) {
        if let ReplyProgress::Text { text, .. } = progress {
            out!("{text}");
        }
    }

    fn end(&mut self, _job: JobId, outcome: ReplyOutcome) {
        let _ = self.done.send(outcome);
    }
}

/// The job id of the reply in progress, shared with the Ctrl-C handler.
pub(super) type CurrentReply = Arc<Mutex<Option<JobId>>>;

pub(super) fn install_ctrl_c(runtime: Arc<Runtime>, current: CurrentReply) -> Result<(), Failure> {
    ctrlc::set_handler(move || {
        let guard = current.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        match *guard {
            Some(job) => {
                runtime.cancel(job);
            }
            None => eprintln!("\n(Ctrl-C stops a reply; /quit or Ctrl-D exits)"),
        }
    })
    .map_err(|e| runtime_error(format!("installing the Ctrl-C handler: {e}")))
}

pub(super) fn reply(
    runtime: &Runtime,
    conversation: &mut Conversation,
    line: &str,
    current: &CurrentReply,
) -> Result<(), Failure> {
    let turn = ChatTurn {
        conversation: k3_runtime::ConversationKey::Terminal,
        system: conversation.system.clone(),
        mode: conversation.mode,
        history: conversation.messages.clone(),
        input: TurnInput::user(line),
        params: conversation.params.clone(),
        state_file: conversation.state_file.clone(),
    };
    let (done, outcome) = mpsc::channel();
    let job = runtime.reply(Box::new(TerminalReply { turn: Some(turn), done }));
    *current.lock().unwrap_or_else(|p| p.into_inner()) = Some(job);
    let outcome = outcome.recv().map_err(|_| runtime_error("the engine worker has stopped".into()));
    *current.lock().unwrap_or_else(|p| p.into_inner()) = None;
    let out = match outcome? {
        ReplyOutcome::Finished(out) => *out,
        ReplyOutcome::Failed { error, .. } => {
            let exit_code = if error.is_input_error() { 2 } else { 1 };
            return Err(Failure { exit_code, message: error.to_string() });
        }
        ReplyOutcome::Refused => return Err(runtime_error("the reply was refused".into())),
    };
    conversation.messages.push(ChatMessage::new(Role::User, line));
    conversation.messages.push(ChatMessage::assistant(out.text.clone(), out.think, Vec::new()));
    let f = &out.figures;
    outln!(
        "\n[{} tokens · {} · prefilled {} tokens{} in {:.2} s · {}]",
        f.output_tokens,
        finish_word(out.finish),
        f.prefilled_tokens,
        if out.reused_history { "" } else { " (full history)" },
        f.time_to_first_token.as_secs_f64(),
        f.seconds_per_token.map_or("– s/token".to_string(), |s| format!("{s:.3} s/token")),
    );
    let used = f.prompt_tokens + f.output_tokens;
    let limit = runtime.probe().snapshot().model.map_or(0, |m| m.context_length);
    if k3_plan::nearly_full(used as u64, limit as u64) {
        outln!(
            "(this conversation holds {used} of its {limit} positions ({} %): a reply that reaches {limit} ends as \
             \"context full\"; /reset starts a new one)",
            used * 100 / limit
        );
    }
    match &out.state {
        Some(StateNote::Resumed) => outln!("(the engine state was read from the saved file: no history replayed)"),
        Some(StateNote::Refused(reason)) => {
            outln!("(the saved state was not used: {reason}; the history was replayed)")
        }
        Some(StateNote::SaveFailed(reason)) => outln!("(the state could not be saved: {reason})"),
        Some(StateNote::Saved) | None => {}
    }
    Ok(())
}

fn finish_word(finish: FinishReason) -> &'static str {
    match finish {
        FinishReason::Stop => "stop",
        FinishReason::Length => "length",
        FinishReason::Cancelled => "cancelled",
        FinishReason::ContextFull => "context full",
    }
}
