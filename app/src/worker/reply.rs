//! [`HistoryReply`]: one generation job as the app runs it on the runtime — the history
//! store and the window's event channel behind the runtime's `ReplyHandler`.
//!
//! Owns: the order of effects that makes a crash lose at most the reply in progress:
//! (1) when the job reaches the engine, the user's message (or edit, or the dropped old
//! reply) is committed, (2) the engine runs with events streaming out, (3) the reply is
//! committed with its stats, then `finished` is sent with the saved message. Also owns
//! mapping the runtime's figures and outcome to the wire (`MessageStats`, events).
//! Must not: hold the history lock while the engine runs; decide engine-state reuse (the
//! runtime does, from the turn's conversation id, system prompt, mode and history).

use std::sync::{Arc, Mutex};

use k3_engine::chat::{
    ChatMessage, ChatMode, ChatOptions, Effort, Role as EngineRole, ToolAnswer as EngineToolAnswer,
    ToolCall as EngineToolCall, TurnInput,
};
use k3_engine::FinishReason as EngineFinish;
use k3_runtime::{
    Channel, ChatTurn, ConversationKey, FinishedReply, JobId, ReplyHandler, ReplyOutcome, ReplyProgress, RuntimeError,
};

use crate::error::AppError;
use crate::history::{
    Conversation, FinishReason, Message, MessageStats, MessageStatus, Role, SamplingSettings, ThinkingEffort, ToolCall,
};
use crate::history::{HistoryStore, NewAssistantMessage};
use crate::reply_event::{ReplyEmitter, ReplyEvent};

/// What a generation job does to the conversation before generating.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobKind {
    /// Append a user message and answer it.
    Send { text: String },
    /// Drop the last reply and answer the last user message again.
    Regenerate,
    /// Replace a user message's text, drop everything after it, answer it.
    Edit { message_id: i64, text: String },
    /// Answer the tool results after the last reply (the next step of a tool loop).
    Continue,
}

/// A reply to one conversation, saved to the history and streamed to the window.
pub struct HistoryReply {
    pub conversation_id: i64,
    pub kind: JobKind,
    pub store: Arc<Mutex<HistoryStore>>,
    pub emit: ReplyEmitter,
    /// The model's name, saved with the stats.
    pub model_name: String,
    /// How the local engine decodes the reply and where it saves the state.
    local: super::LocalReply,
    /// Set by `begin`: the settings the reply runs with, or why the job was refused.
    settings: Option<SamplingSettings>,
    refusal: Option<AppError>,
}

impl HistoryReply {
    pub fn new(
        conversation_id: i64,
        kind: JobKind,
        store: Arc<Mutex<HistoryStore>>,
        emit: ReplyEmitter,
        model_name: String,
    ) -> Self {
        let local = super::LocalReply::serial();
        HistoryReply { conversation_id, kind, store, emit, model_name, local, settings: None, refusal: None }
    }

    /// This reply answered by the local engine as `local` says.
    pub fn local(self, local: super::LocalReply) -> Self {
        HistoryReply { local, ..self }
    }
}

/// The stored state a job starts from.
struct Prepared {
    conversation: Conversation,
    /// Messages before the ones being answered.
    history: Vec<Message>,
    /// What the reply answers: a user message, or the tool results after the last reply.
    input: Vec<Message>,
    new_user_message: Option<Message>,
}

fn prepare(store: &Mutex<HistoryStore>, conversation_id: i64, kind: &JobKind) -> Result<Prepared, AppError> {
    let mut store = store.lock().map_err(|_| AppError::internal("history store lock poisoned"))?;
    let (answered, new_user_message) = match kind {
        JobKind::Send { text } => {
            let m = store.add_user_message(conversation_id, text)?;
            (Some(m.clone()), Some(m))
        }
        JobKind::Regenerate => (Some(store.drop_last_reply(conversation_id)?), None),
        JobKind::Edit { message_id, text } => {
            let m = store.edit_user_message(conversation_id, *message_id, text)?;
            (Some(m.clone()), Some(m))
        }
        JobKind::Continue => (None, None),
    };
    let conversation = store.get(conversation_id)?;
    let messages = &conversation.messages;
    let at = match answered {
        Some(answered) => messages.iter().position(|m| m.id == answered.id).unwrap_or(messages.len()),
        None => tool_results_start(messages)?,
    };
    let (history, input) = (messages[..at].to_vec(), messages[at..].to_vec());
    Ok(Prepared { conversation, history, input, new_user_message })
}

/// Where the tool results after the last reply begin; refused when the conversation does
/// not end with them (there is nothing to continue from).
fn tool_results_start(messages: &[Message]) -> Result<usize, AppError> {
    let results = messages.iter().rev().take_while(|m| m.role == Role::Tool).count();
    let at = messages.len() - results;
    match at.checked_sub(1).map(|i| &messages[i]) {
        Some(reply) if results > 0 && reply.role == Role::Assistant && !reply.tool_calls.is_empty() => Ok(at),
        _ => Err(AppError::invalid("the conversation does not end with tool results to answer")),
    }
}

impl ReplyHandler for HistoryReply {
    fn queued(&mut self, job: JobId, position: usize) {
        (self.emit)(ReplyEvent::Queued { job_id: job, position: position as u32 });
    }

    fn begin(&mut self, job: JobId) -> Option<ChatTurn> {
        let prepared = match prepare(&self.store, self.conversation_id, &self.kind) {
            Ok(p) => p,
            Err(error) => {
                self.refusal = Some(error);
                return None;
            }
        };
        (self.emit)(ReplyEvent::Started {
            job_id: job,
            conversation_id: self.conversation_id,
            user_message: prepared.new_user_message.clone(),
        });
        let settings = prepared.conversation.settings.clone();
        let turn = ChatTurn {
            conversation: ConversationKey::History(self.conversation_id),
            system: Some(prepared.conversation.system_prompt.clone()).filter(|s| !s.trim().is_empty()),
            mode: if settings.thinking { ChatMode::Thinking } else { ChatMode::Instruct },
            history: prepared.history.iter().map(engine_message).collect(),
            input: TurnInput {
                messages: prepared.input.iter().map(engine_message).collect(),
                options: ChatOptions {
                    effort: effort(&settings),
                    tools: self.local.tools.clone(),
                    tool_choice: self.local.tool_choice.clone(),
                    ..ChatOptions::default()
                },
                call_id_prefix: format!("call_{}_", prepared.conversation.messages.len()),
                single_call: false,
            },
            params: settings.generate_params(self.local.mode),
            state_file: self.local.state_file.clone(),
        };
        self.settings = Some(settings);
        Some(turn)
    }

    fn progress(&mut self, job: JobId, progress: ReplyProgress) {
        let event = match progress {
            ReplyProgress::Prefill { done, total } => {
                ReplyEvent::PrefillProgress { job_id: job, done: done as u32, total: total as u32 }
            }
            ReplyProgress::Text { index, text, channel } => {
                let think = channel == Channel::Think;
                ReplyEvent::Token { job_id: job, index: index as u32, text, think }
            }
            // A finished reply's calls are saved with it and shown then, each waiting for
            // the user's Allow (`crate::tools`).
            ReplyProgress::ToolCall(_) => return,
            ReplyProgress::Figures(f) => ReplyEvent::Stats {
                job_id: job,
                tokens: f.tokens as u32,
                elapsed_ms: f.elapsed.as_millis() as u64,
                seconds_per_token: f.seconds_per_token,
                io_share: f.io_share,
                true_hit_rate: f.true_hit_rate,
            },
        };
        (self.emit)(event);
    }

    fn end(&mut self, job: JobId, outcome: ReplyOutcome) {
        let event = match outcome {
            ReplyOutcome::Finished(reply) => self.save_finished(job, *reply),
            ReplyOutcome::Failed { error, partial_text } => self.save_failed(job, &error, partial_text),
            ReplyOutcome::Refused => {
                let error = self.refusal.take().unwrap_or_else(|| AppError::internal("the reply was refused"));
                ReplyEvent::Failed { job_id: job, error, message: None }
            }
        };
        (self.emit)(event);
    }
}

impl HistoryReply {
    fn save_finished(&mut self, job: JobId, reply: FinishedReply) -> ReplyEvent {
        let settings = self.settings.clone().unwrap_or_default();
        let stats = message_stats(&reply, &settings, &self.model_name);
        let status = match reply.finish {
            EngineFinish::Cancelled => MessageStatus::Stopped,
            EngineFinish::Stop | EngineFinish::Length | EngineFinish::ContextFull => MessageStatus::Complete,
        };
        log::info!(
            "reply {job}: {:?} after {} tokens in {} ms ({} prompt tokens, {:.1} MB read)",
            stats.finish_reason,
            stats.output_tokens,
            stats.total_ms,
            stats.prompt_tokens,
            stats.bytes_read as f64 / 1e6
        );
        // A stopped reply makes no call (Stop ends the tool loop), and calls the model got
        // wrong are not run: the reply says why instead.
        let (tool_calls, failure) = match (reply.finish, reply.call_error) {
            (EngineFinish::Cancelled, _) => (Vec::new(), None),
            (_, Some(e)) => (Vec::new(), Some(format!("The model's tool call could not be used: {e}"))),
            (_, None) => (reply.tool_calls, None),
        };
        let new = NewAssistantMessage {
            content: reply.text,
            think: reply.think,
            status,
            stats: Some(stats.clone()),
            failure,
            tool_calls: tool_calls
                .into_iter()
                .map(|c| ToolCall { id: c.id, tool: c.tool, index: c.index, arguments: c.arguments })
                .collect(),
        };
        match save(&self.store, self.conversation_id, new) {
            Ok(message) => ReplyEvent::Finished { job_id: job, reason: stats.finish_reason, message },
            Err(error) => ReplyEvent::Failed { job_id: job, error, message: None },
        }
    }

    fn save_failed(&mut self, job: JobId, error: &RuntimeError, partial: Option<String>) -> ReplyEvent {
        log::warn!("reply {job} failed: {error}");
        let error = AppError::from(error);
        // Only a reply the engine started leaves a (partial) message behind.
        let message = partial.and_then(|content| {
            let failure = Some(error.message.clone());
            let reply = NewAssistantMessage {
                content,
                think: None,
                status: MessageStatus::Failed,
                stats: None,
                failure,
                tool_calls: Vec::new(),
            };
            save(&self.store, self.conversation_id, reply).ok()
        });
        ReplyEvent::Failed { job_id: job, error, message }
    }
}

fn save(store: &Mutex<HistoryStore>, conversation_id: i64, reply: NewAssistantMessage) -> Result<Message, AppError> {
    let mut store = store.lock().map_err(|_| AppError::internal("history store lock poisoned"))?;
    Ok(store.add_assistant_message(conversation_id, &reply)?)
}

fn engine_message(m: &Message) -> ChatMessage {
    let role = match m.role {
        Role::User => EngineRole::User,
        Role::Assistant => EngineRole::Assistant,
        Role::Tool => EngineRole::Tool,
    };
    let tool_calls = m
        .tool_calls
        .iter()
        .map(|c| EngineToolCall {
            index: c.index,
            id: c.id.clone(),
            tool: c.tool.clone(),
            arguments: c.arguments.clone(),
        })
        .collect();
    let answers = m.tool_answer.as_ref().map(|a| EngineToolAnswer { tool: a.tool.clone(), index: a.index });
    ChatMessage { think: m.think.clone(), tool_calls, answers, ..ChatMessage::new(role, m.content.clone()) }
}

/// The thinking effort of a conversation's settings (thinking on only).
fn effort(s: &SamplingSettings) -> Option<Effort> {
    s.thinking_effort.filter(|_| s.thinking).map(|e| match e {
        ThinkingEffort::Low => Effort::Low,
        ThinkingEffort::High => Effort::High,
        ThinkingEffort::Max => Effort::Max,
    })
}

/// The wire form of the runtime's figures.
fn message_stats(reply: &FinishedReply, s: &SamplingSettings, model: &str) -> MessageStats {
    let f = &reply.figures;
    MessageStats {
        prompt_tokens: f.prompt_tokens as u32,
        prefilled_tokens: f.prefilled_tokens as u32,
        output_tokens: f.output_tokens as u32,
        time_to_first_token_ms: f.time_to_first_token.as_millis() as u64,
        total_ms: f.total.as_millis() as u64,
        seconds_per_token: f.seconds_per_token,
        io_share: f.io_share,
        true_hit_rate: f.true_hit_rate,
        bytes_read: f.bytes_read,
        finish_reason: finish_reason(reply.finish),
        seed: (s.temperature > 0.0).then_some(s.seed),
        model: model.to_string(),
        remote_host: reply.remote_host.clone(),
        context_length: f.context_length.map(|c| c as u32),
        context_nearly_full: f.context_nearly_full(),
    }
}

fn finish_reason(finish: EngineFinish) -> FinishReason {
    match finish {
        EngineFinish::Stop => FinishReason::Stop,
        EngineFinish::Length => FinishReason::Length,
        EngineFinish::Cancelled => FinishReason::Cancelled,
        EngineFinish::ContextFull => FinishReason::ContextFull,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::ToolAnswer;

    fn message(role: Role) -> Message {
        Message {
            id: 1,
            role,
            content: "text".into(),
            think: None,
            status: MessageStatus::Complete,
            stats: None,
            failure: None,
            tool_calls: Vec::new(),
            tool_answer: None,
            created_at: 0,
        }
    }

    #[test]
    fn stored_calls_and_results_become_the_engines_and_effort_follows_thinking() {
        let call = ToolCall { id: "c1".into(), tool: "weather".into(), index: 1, arguments: "{}".into() };
        let asked = engine_message(&Message { tool_calls: vec![call], ..message(Role::Assistant) });
        assert_eq!(
            asked.tool_calls,
            [EngineToolCall { index: 1, id: "c1".into(), tool: "weather".into(), arguments: "{}".into() }]
        );
        let answer =
            ToolAnswer { call_id: "c1".into(), tool: "weather".into(), index: 1, server: None, cut_from_bytes: None };
        let result = engine_message(&Message { tool_answer: Some(answer), ..message(Role::Tool) });
        assert_eq!(
            (result.role, result.answers),
            (EngineRole::Tool, Some(EngineToolAnswer { tool: "weather".into(), index: 1 }))
        );
        let on = SamplingSettings {
            thinking: true,
            thinking_effort: Some(ThinkingEffort::Low),
            ..SamplingSettings::default()
        };
        assert_eq!(effort(&on), Some(Effort::Low));
        assert_eq!(effort(&SamplingSettings { thinking: false, ..on }), None, "no effort without thinking");
    }
}
