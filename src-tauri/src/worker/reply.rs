//! One generation job: update the stored conversation, run the engine, save the reply.
//!
//! Owns: the order of effects that makes a crash lose at most the reply in progress:
//! (1) the user's message (or edit, or the dropped old reply) is committed first,
//! (2) the engine runs with events streaming out, (3) the reply is committed with its
//! stats, then `finished` is sent with the saved message.
//! Also owns reusing the engine state of the previous turn: the cached `ChatSession`
//! is kept only when its messages, system prompt and mode equal the stored history.
//! Must not: hold the history lock while the engine runs.

use std::sync::Mutex;

use k3_engine::chat::{ChatMessage, ChatMode, ChatSession, Role as EngineRole};
use k3_engine::{CancelToken, DecodeMode, FinishReason as EngineFinish, GenerateParams, Generation, Sampling};

use super::model::LoadedModel;
use super::sink::{io_share, ReplySink};
use crate::history::{HistoryStore, NewAssistantMessage};
use crate::ipc::dto::{Conversation, FinishReason, Message, MessageStats, MessageStatus, Role, SamplingSettings};
use crate::ipc::error::IpcError;
use crate::ipc::events::{EventEmitter, GenerationEvent};

/// What a generation job does to the conversation before generating.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobKind {
    /// Append a user message and answer it.
    Send { text: String },
    /// Drop the last reply and answer the last user message again.
    Regenerate,
    /// Replace a user message's text, drop everything after it, answer it.
    Edit { message_id: i64, text: String },
}

/// The engine state of the conversation answered last.
pub struct CachedChat {
    conversation_id: i64,
    session: ChatSession,
}

/// A generation, as queued.
pub struct GenerateJob {
    pub id: u64,
    pub conversation_id: i64,
    pub kind: JobKind,
    pub cancel: CancelToken,
    pub emit: EventEmitter,
}

/// The stored state a job starts from.
struct Prepared {
    conversation: Conversation,
    /// Messages before the one being answered.
    history: Vec<Message>,
    user_text: String,
    new_user_message: Option<Message>,
}

fn prepare(store: &Mutex<HistoryStore>, conversation_id: i64, kind: &JobKind) -> Result<Prepared, IpcError> {
    let mut store = store.lock().map_err(|_| IpcError::internal("history store lock poisoned"))?;
    let (answered, new_user_message) = match kind {
        JobKind::Send { text } => {
            let m = store.add_user_message(conversation_id, text)?;
            (m.clone(), Some(m))
        }
        JobKind::Regenerate => (store.drop_last_reply(conversation_id)?, None),
        JobKind::Edit { message_id, text } => {
            let m = store.edit_user_message(conversation_id, *message_id, text)?;
            (m.clone(), Some(m))
        }
    };
    let conversation = store.get(conversation_id)?;
    let at = conversation.messages.iter().position(|m| m.id == answered.id).unwrap_or(conversation.messages.len());
    let history = conversation.messages[..at].to_vec();
    Ok(Prepared { conversation, history, user_text: answered.content, new_user_message })
}

/// Runs `job` to its end: every outcome is reported on the job's emitter.
pub fn run(model: &LoadedModel, cached: &mut Option<CachedChat>, store: &Mutex<HistoryStore>, mut job: GenerateJob) {
    let prepared = match prepare(store, job.conversation_id, &job.kind) {
        Ok(p) => p,
        Err(error) => return (job.emit)(GenerationEvent::Failed { job_id: job.id, error, message: None }),
    };
    (job.emit)(GenerationEvent::Started {
        job_id: job.id,
        conversation_id: job.conversation_id,
        user_message: prepared.new_user_message.clone(),
    });
    let settings = prepared.conversation.settings.clone();
    let mut chat = take_session(model, cached, &prepared);
    let params = generate_params(&settings);
    let streamed = model.engine.plan().is_some();
    let mut sink = ReplySink::new(job.id, &model.tokenizer, &mut job.emit, streamed);
    let result = chat.send(&model.engine, &model.tokenizer, &prepared.user_text, &params, &job.cancel, &mut sink);
    sink.finish();
    let partial = std::mem::take(&mut sink.text);
    drop(sink);
    let outcome = match result {
        Ok(reply) => {
            let stats = message_stats(&reply.generation, chat.tokens().len(), &settings, model, streamed);
            let think = chat.messages().last().and_then(|m| m.think.clone());
            let status = match reply.generation.finish {
                EngineFinish::Cancelled => MessageStatus::Stopped,
                _ => MessageStatus::Complete,
            };
            let saved = save(
                store,
                job.conversation_id,
                NewAssistantMessage { content: reply.text, think, status, stats: Some(stats.clone()) },
            );
            *cached = Some(CachedChat { conversation_id: job.conversation_id, session: chat });
            saved.map(|message| GenerationEvent::Finished { job_id: job.id, reason: stats.finish_reason, message })
        }
        Err(e) => {
            let error = IpcError::from(e);
            let reply =
                NewAssistantMessage { content: partial, think: None, status: MessageStatus::Failed, stats: None };
            let message = save(store, job.conversation_id, reply).ok();
            Ok(GenerationEvent::Failed { job_id: job.id, error, message })
        }
    };
    let event = outcome.unwrap_or_else(|error| GenerationEvent::Failed { job_id: job.id, error, message: None });
    (job.emit)(event);
}

fn save(store: &Mutex<HistoryStore>, conversation_id: i64, reply: NewAssistantMessage) -> Result<Message, IpcError> {
    let mut store = store.lock().map_err(|_| IpcError::internal("history store lock poisoned"))?;
    Ok(store.add_assistant_message(conversation_id, &reply)?)
}

/// The cached session when it holds exactly this history; otherwise a new one.
fn take_session(model: &LoadedModel, cached: &mut Option<CachedChat>, p: &Prepared) -> ChatSession {
    let mode = if p.conversation.settings.thinking { ChatMode::Thinking } else { ChatMode::Instruct };
    let system = Some(p.conversation.system_prompt.clone()).filter(|s| !s.trim().is_empty());
    let history: Vec<ChatMessage> = p.history.iter().map(engine_message).collect();
    if let Some(c) = cached.take() {
        let s = &c.session;
        if c.conversation_id == p.conversation.id
            && s.mode() == mode
            && s.system() == system.as_deref()
            && s.messages() == history.as_slice()
        {
            return c.session;
        }
    }
    let mut session = ChatSession::new(&model.engine, model.template.clone(), mode, system);
    session.replace_history(history);
    session
}

fn engine_message(m: &Message) -> ChatMessage {
    let role = match m.role {
        Role::User => EngineRole::User,
        Role::Assistant => EngineRole::Assistant,
    };
    ChatMessage { role, content: m.content.clone(), think: m.think.clone() }
}

/// Engine parameters for a conversation's settings (temperature 0 = greedy).
pub fn generate_params(s: &SamplingSettings) -> GenerateParams {
    let sampling = if s.temperature <= 0.0 {
        Sampling::Greedy
    } else {
        Sampling::TopP { temperature: s.temperature, top_p: s.top_p, seed: s.seed }
    };
    GenerateParams { max_new_tokens: s.max_tokens as usize, sampling, stop_ids: vec![], mode: DecodeMode::Incremental }
}

fn message_stats(
    g: &Generation,
    session_tokens: usize,
    s: &SamplingSettings,
    model: &LoadedModel,
    streamed: bool,
) -> MessageStats {
    let n = g.generated.len();
    let decode = g.total_time.saturating_sub(g.prefill_time);
    MessageStats {
        prompt_tokens: session_tokens.saturating_sub(n) as u32,
        prefilled_tokens: g.n_prefilled as u32,
        output_tokens: n as u32,
        time_to_first_token_ms: g.prefill_time.as_millis() as u64,
        total_ms: g.total_time.as_millis() as u64,
        seconds_per_token: (n > 1).then(|| decode.as_secs_f64() / (n - 1) as f64),
        io_share: streamed.then(|| io_share(g.metrics.io_wait, g.total_time)),
        true_hit_rate: (g.metrics.expert_requests > 0).then(|| g.metrics.true_hit_rate()),
        bytes_read: g.metrics.expert_bytes_read + g.metrics.trunk_bytes_read,
        finish_reason: match g.finish {
            EngineFinish::Stop => FinishReason::Stop,
            EngineFinish::Length => FinishReason::Length,
            EngineFinish::Cancelled => FinishReason::Cancelled,
        },
        seed: (s.temperature > 0.0).then_some(s.seed),
        model: model.info.name.clone(),
    }
}
