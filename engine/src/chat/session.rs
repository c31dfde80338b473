//! Multi-turn chat over one engine [`Session`]: each turn prefills only what is new.
//!
//! Owns: the conversation (system prompt + messages), the text the engine session holds
//! (`fed_text`, the decoded session tokens), and turning a new user message into the
//! tokens to append: render the whole conversation, and when it extends `fed_text`,
//! encode and feed only the extension; otherwise (a template that renders history
//! differently than it was generated) clear the session and prefill everything.
//! Must not: re-encode text the engine already consumed (tokens are the truth), or let a
//! special-token string a person typed become a control token (`chat::literal`).
//! Also owns saving a conversation with its engine state and resuming it
//! ([`ChatSession::save`], [`ChatSession::resume`], over `resume`'s file format).
//! Easy to break: the assistant message is stored as the reply's channels read by
//! [`ReplyReader`] (markup removed), so rendering it again reproduces exactly what was
//! generated followed by the close (a reply cut short by the token limit is closed in the
//! next turn's delta; one with stray added tokens renders differently and is replayed).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::chat::calls::CallError;
use crate::chat::literal::{Literals, Room};
use crate::chat::message::{ChatMessage, Role, ToolCall, ToolSpec};
use crate::chat::options::{ChatMode, ChatOptions};
use crate::chat::reply::ReplyReader;
use crate::chat::template::ChatTemplate;
use crate::constraint::TokenConstraint;
use crate::engine::{Engine, GenerateParams, Generation, Session};
use crate::error::{Error, Result};
use crate::events::{CancelToken, EventSink};
use crate::tokenizer::Tokenizer;

/// What one turn sends: the messages after the last reply (a user message, or tool
/// results), the options it renders with, and the prefix of its calls' ids.
#[derive(Debug, Clone, Default)]
pub struct TurnInput {
    pub messages: Vec<ChatMessage>,
    pub options: ChatOptions,
    /// Each tool call of the reply gets this prefix and its position as its id.
    pub call_id_prefix: String,
    /// At most one call in the reply (OpenAI's `parallel_tool_calls: false`).
    pub single_call: bool,
}

impl TurnInput {
    /// One user message, without tools or options.
    pub fn user(text: impl Into<String>) -> Self {
        TurnInput { messages: vec![ChatMessage::new(Role::User, text)], ..TurnInput::default() }
    }
}

/// The outcome of one turn.
#[derive(Debug, Clone)]
pub struct ChatReply {
    /// The reply text (the response channel, closing markers removed).
    pub text: String,
    /// The reply's tool calls (its tools channel), in order.
    pub tool_calls: Vec<ToolCall>,
    /// What is wrong with the reply's tool calls (they are then not to be run).
    pub call_error: Option<CallError>,
    pub generation: Generation,
    /// True when the turn reused the engine state of earlier turns.
    pub reused_history: bool,
}

/// What a saved chat holds beside the engine session (the state file's note).
#[derive(Serialize, Deserialize)]
struct SavedChat {
    system: Option<String>,
    messages: Vec<ChatMessage>,
    mode: ChatMode,
    fed_text: String,
    nonce: u64,
    #[serde(default)]
    options: ChatOptions,
}

/// The conversation a state file holds (read without a model, to show or continue it).
#[derive(Debug, Clone, PartialEq)]
pub struct SavedConversation {
    pub system: Option<String>,
    pub messages: Vec<ChatMessage>,
    pub mode: ChatMode,
}

/// The conversation saved at `path` by [`ChatSession::save`].
pub fn read_saved_conversation(path: &Path) -> Result<SavedConversation> {
    let saved = saved_chat(path, crate::resume::read_note(path)?)?;
    Ok(SavedConversation { system: saved.system, messages: saved.messages, mode: saved.mode })
}

/// What a damaged state file's conversation said, from its header alone (the engine state
/// is lost; the history is prefilled again): [`crate::resume::recover_note`].
pub fn recover_saved_conversation(path: &Path) -> Result<SavedConversation> {
    let saved = saved_chat(path, crate::resume::recover_note(path)?)?;
    Ok(SavedConversation { system: saved.system, messages: saved.messages, mode: saved.mode })
}

fn saved_chat(path: &Path, note: serde_json::Value) -> Result<SavedChat> {
    serde_json::from_value(note)
        .map_err(|e| Error::StateFile { path: path.into(), reason: format!("its conversation: {e}") })
}

/// A conversation with carried engine state.
pub struct ChatSession {
    session: Session,
    system: Option<String>,
    messages: Vec<ChatMessage>,
    mode: ChatMode,
    /// The options the last turn rendered with.
    options: ChatOptions,
    template: ChatTemplate,
    /// The marked render (user and system text as markers, see `chat::literal`) that every
    /// token in `session` was encoded from.
    fed_text: String,
    /// Keeps user and system text apart from control tokens.
    literals: Literals,
}

impl ChatSession {
    pub fn new(engine: &Engine, template: ChatTemplate, mode: ChatMode, system: Option<String>) -> Self {
        ChatSession {
            session: engine.new_session(),
            system,
            messages: Vec::new(),
            mode,
            options: ChatOptions::default(),
            template,
            fed_text: String::new(),
            literals: Literals::new(),
        }
    }

    /// Forgets the conversation (the system prompt stays).
    pub fn reset(&mut self) {
        self.session.clear();
        self.messages.clear();
        self.fed_text.clear();
    }

    /// Replaces the system prompt; the conversation starts over.
    pub fn set_system(&mut self, system: Option<String>) {
        self.system = system;
        self.reset();
    }

    /// Replaces the conversation with `messages` (user and assistant turns, no system
    /// message): the next `send` renders and prefills the whole history. Used when the
    /// history was edited, a reply is regenerated, or another conversation is resumed.
    pub fn replace_history(&mut self, messages: Vec<ChatMessage>) {
        self.reset();
        self.messages = messages;
    }

    pub fn mode(&self) -> ChatMode {
        self.mode
    }

    pub fn system(&self) -> Option<&str> {
        self.system.as_deref()
    }

    pub fn messages(&self) -> &[ChatMessage] {
        &self.messages
    }

    /// The options the last turn rendered with.
    pub fn options(&self) -> &ChatOptions {
        &self.options
    }

    /// Sets the options the next turn renders with (a change of tools or effort renders
    /// the conversation anew from its start).
    pub fn set_options(&mut self, options: ChatOptions) {
        self.options = options;
    }

    /// Saves the conversation and its engine state to `path` (`resume`'s format), so
    /// [`ChatSession::resume`] can answer the next turn prefilling only its message.
    pub fn save(&self, engine: &Engine, path: &Path) -> Result<()> {
        let saved = SavedChat {
            system: self.system.clone(),
            messages: self.messages.clone(),
            mode: self.mode,
            fed_text: self.fed_text.clone(),
            nonce: self.literals.nonce(),
            options: self.options.clone(),
        };
        let note =
            serde_json::to_value(saved).map_err(|e| Error::StateFile { path: path.into(), reason: e.to_string() })?;
        engine.save_session(&self.session, path, note)
    }

    /// The conversation saved at `path` with its engine state; a file that does not match
    /// this checkpoint (or is damaged) is `Error::StateFile`: start a new session and
    /// replay the history instead.
    pub fn resume(engine: &Engine, template: ChatTemplate, path: &Path) -> Result<Self> {
        let (session, note) = engine.resume_session(path)?;
        let saved = saved_chat(path, note)?;
        Ok(ChatSession {
            session,
            system: saved.system,
            messages: saved.messages,
            mode: saved.mode,
            options: saved.options,
            template,
            fed_text: saved.fed_text,
            literals: Literals::with_nonce(saved.nonce),
        })
    }

    /// Every token the engine session holds (prompts and replies).
    pub fn tokens(&self) -> &[u32] {
        self.session.tokens()
    }

    fn conversation(&self, input: &[ChatMessage]) -> Vec<ChatMessage> {
        let system = self.system.iter().map(|s| ChatMessage::new(Role::System, s.clone()));
        system.chain(self.messages.iter().cloned()).chain(input.iter().cloned()).collect()
    }

    /// Sends a user message and generates the reply (no tools, the session's options).
    pub fn send(
        &mut self,
        engine: &Engine,
        tokenizer: &Tokenizer,
        user_text: &str,
        params: &GenerateParams,
        cancel: &CancelToken,
        sink: &mut dyn EventSink,
    ) -> Result<ChatReply> {
        let input = TurnInput { options: self.options.clone(), ..TurnInput::user(user_text) };
        self.send_turn(engine, tokenizer, &input, params, None, (cancel, sink))
    }

    /// Sends `input`'s messages with its options and generates the reply. The prompt is
    /// the whole conversation rendered; when it extends what the engine holds, only the
    /// extension is prefilled. `params.stop_ids` gets the end-of-message id added. With a
    /// `constraint` (built for this turn's options), only tokens it allows are picked.
    pub fn send_turn(
        &mut self,
        engine: &Engine,
        tokenizer: &Tokenizer,
        input: &TurnInput,
        params: &GenerateParams,
        constraint: Option<&mut dyn TokenConstraint>,
        (cancel, sink): (&CancelToken, &mut dyn EventSink),
    ) -> Result<ChatReply> {
        self.options = input.options.clone();
        let conversation = self.conversation(&input.messages);
        // User, system and tool text go in as markers and come out as plain text: only
        // the template's own markup becomes control tokens.
        let marked = self.literals.mark(&conversation, tokenizer);
        let full = self.template.render_with(&marked, &self.options, self.mode, true)?;
        let reused_history = !self.fed_text.is_empty() && full.starts_with(&self.fed_text);
        let new_text = if reused_history {
            &full[self.fed_text.len()..]
        } else {
            self.session.clear();
            self.fed_text.clear();
            &full[..]
        };
        let context_length = engine.context_length();
        let room = Room { left: context_length.saturating_sub(self.session.tokens().len()), context_length };
        let prompt = self.literals.encode(tokenizer, (new_text, room), &conversation)?;
        let mut params = params.clone();
        if let Some(eos) = tokenizer.eos_id() {
            if !params.stop_ids.contains(&eos) {
                params.stop_ids.push(eos);
            }
        }
        let generation = engine.generate_constrained(&mut self.session, &prompt, &params, constraint, cancel, sink)?;
        let reply_raw = tokenizer.decode(&generation.generated)?;
        self.fed_text.push_str(new_text);
        self.fed_text.push_str(&reply_raw);
        let declared = declared_tools(&conversation, &self.options);
        let reader = ReplyReader::chat(tokenizer, self.mode)
            .with_tools(declared, input.call_id_prefix.clone())
            .read_all(&generation.generated);
        let reply = ChatMessage::assistant(
            reader.response(),
            (self.mode == ChatMode::Thinking).then(|| reader.think().to_string()),
            reader.tool_calls().to_vec(),
        );
        let call_error = reader.call_error().cloned();
        self.messages.extend(input.messages.iter().cloned());
        self.messages.push(reply.clone());
        Ok(ChatReply { text: reply.content, tool_calls: reply.tool_calls, call_error, generation, reused_history })
    }
}

/// The prompt a new session would feed to answer `input` after `history` (with `system`
/// first): every token, as [`ChatSession::send_turn`] encodes it (counting a request).
pub fn prompt_tokens(
    (template, tokenizer): (&ChatTemplate, &Tokenizer),
    (mode, system): (ChatMode, Option<&str>),
    history: &[ChatMessage],
    input: &TurnInput,
) -> Result<Vec<u32>> {
    let system = system.map(|s| ChatMessage::new(Role::System, s));
    let conversation: Vec<ChatMessage> =
        system.into_iter().chain(history.iter().cloned()).chain(input.messages.iter().cloned()).collect();
    let literals = Literals::new();
    let full = template.render_with(&literals.mark(&conversation, tokenizer), &input.options, mode, true)?;
    literals.encode(tokenizer, (&full, Room::UNBOUNDED), &conversation)
}

/// The names of the tools a reply may call: the request's, and those declared by system
/// messages of the conversation (K3's dynamic tools).
pub fn declared_tools<'a>(
    conversation: impl IntoIterator<Item = &'a ChatMessage>,
    options: &ChatOptions,
) -> Vec<String> {
    declared_tool_specs(conversation, options).into_iter().map(|t| t.name).collect()
}

/// The tools a reply may call, with their schemas (see [`declared_tools`]).
pub fn declared_tool_specs<'a>(
    conversation: impl IntoIterator<Item = &'a ChatMessage>,
    options: &ChatOptions,
) -> Vec<ToolSpec> {
    let dynamic = conversation.into_iter().filter(|m| m.role == Role::System).flat_map(|m| m.tools.iter());
    options.tools.iter().chain(dynamic).cloned().collect()
}
