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

use crate::chat::literal::Literals;
use crate::chat::reply::ReplyReader;
use crate::chat::template::{ChatMessage, ChatMode, ChatTemplate, Role};
use crate::engine::{Engine, GenerateParams, Generation, Session};
use crate::error::{Error, Result};
use crate::events::{CancelToken, EventSink};
use crate::tokenizer::Tokenizer;

/// The outcome of one turn.
#[derive(Debug, Clone)]
pub struct ChatReply {
    /// The reply text (the response channel, closing markers removed).
    pub text: String,
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

    /// Saves the conversation and its engine state to `path` (`resume`'s format), so
    /// [`ChatSession::resume`] can answer the next turn prefilling only its message.
    pub fn save(&self, engine: &Engine, path: &Path) -> Result<()> {
        let saved = SavedChat {
            system: self.system.clone(),
            messages: self.messages.clone(),
            mode: self.mode,
            fed_text: self.fed_text.clone(),
            nonce: self.literals.nonce(),
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
            template,
            fed_text: saved.fed_text,
            literals: Literals::with_nonce(saved.nonce),
        })
    }

    /// Every token the engine session holds (prompts and replies).
    pub fn tokens(&self) -> &[u32] {
        self.session.tokens()
    }

    fn conversation(&self, extra: Option<&ChatMessage>) -> Vec<ChatMessage> {
        let system = self.system.iter().map(|s| ChatMessage::new(Role::System, s.clone()));
        system.chain(self.messages.iter().cloned()).chain(extra.cloned()).collect()
    }

    /// Sends a user message and generates the reply. `params.stop_ids` gets the
    /// tokenizer's end-of-message id added.
    pub fn send(
        &mut self,
        engine: &Engine,
        tokenizer: &Tokenizer,
        user_text: &str,
        params: &GenerateParams,
        cancel: &CancelToken,
        sink: &mut dyn EventSink,
    ) -> Result<ChatReply> {
        let user = ChatMessage::new(Role::User, user_text);
        let conversation = self.conversation(Some(&user));
        // User and system text go in as markers and come out as plain text: only the
        // template's own markup becomes control tokens.
        let full = self.template.render(&self.literals.mark(&conversation), self.mode, true)?;
        let reused_history = !self.fed_text.is_empty() && full.starts_with(&self.fed_text);
        let new_text = if reused_history {
            &full[self.fed_text.len()..]
        } else {
            self.session.clear();
            self.fed_text.clear();
            &full[..]
        };
        let prompt = self.literals.encode(tokenizer, new_text, &conversation)?;
        let mut params = params.clone();
        if let Some(eos) = tokenizer.eos_id() {
            if !params.stop_ids.contains(&eos) {
                params.stop_ids.push(eos);
            }
        }
        let generation = engine.generate(&mut self.session, &prompt, &params, cancel, sink)?;
        let reply_raw = tokenizer.decode(&generation.generated)?;
        self.fed_text.push_str(new_text);
        self.fed_text.push_str(&reply_raw);
        let reply = read_reply(tokenizer, &generation.generated, self.mode);
        let text = reply.content.clone();
        self.messages.push(user);
        self.messages.push(reply);
        Ok(ChatReply { text, generation, reused_history })
    }
}

/// The assistant message a reply's ids render back to, by the one reading rule
/// ([`ReplyReader`]): the response channel is its content, a thinking-mode reply's think
/// channel its think (cut short while thinking: all of it, and no content).
fn read_reply(tokenizer: &Tokenizer, generated: &[u32], mode: ChatMode) -> ChatMessage {
    let reader = ReplyReader::chat(tokenizer, mode).read_all(generated);
    let think = (mode == ChatMode::Thinking).then(|| reader.think().to_string());
    ChatMessage { role: Role::Assistant, content: reader.response().to_string(), think }
}
