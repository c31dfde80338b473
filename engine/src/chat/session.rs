//! Multi-turn chat over one engine [`Session`]: each turn prefills only what is new.
//!
//! Owns: the conversation (system prompt + messages), the text the engine session holds
//! (`fed_text`, the decoded session tokens), and turning a new user message into the
//! tokens to append: render the whole conversation, and when it extends `fed_text`,
//! encode and feed only the extension; otherwise (a template that renders history
//! differently than it was generated) clear the session and prefill everything.
//! Must not: re-encode text the engine already consumed (tokens are the truth), or let a
//! special-token string a person typed become a control token (`chat::literal`).
//! Easy to break: the assistant message is stored as the reply's channels read by
//! [`ReplyReader`] (markup removed), so rendering it again reproduces exactly what was
//! generated followed by the close (a reply cut short by the token limit is closed in the
//! next turn's delta; one with stray added tokens renders differently and is replayed).

use crate::chat::literal::Literals;
use crate::chat::reply::ReplyReader;
use crate::chat::template::{ChatMessage, ChatMode, ChatTemplate, Role};
use crate::engine::{Engine, GenerateParams, Generation, Session};
use crate::error::Result;
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
