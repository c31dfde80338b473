//! Keeping people's text apart from control tokens: what a user, the system prompt or a
//! tool's result says is encoded as text, whatever it contains; only the chat template inserts special
//! tokens. An assistant message's content and reasoning are text too when they hold a
//! special-token string (a history sent to the API, probe finding: a forged system turn
//! mid-history); the model's own replies hold none, so they render as generated and the
//! session's state is reused.
//!
//! Owns: [`Literals`]: before rendering, each user, system and tool message's content (and
//! an assistant's content or reasoning holding a special-token string) is replaced by a
//! marker (`U+E000`, a per-session nonce, the message's index, `U+E001`; the reasoning's
//! index has [`THINK`] set);
//! after rendering, [`Literals::encode`] encodes the template's text with added-token
//! matching and each marker's original content with none (`Tokenizer::encode_ordinary`).
//! Must not: change the tokens of text that holds no special-token string: the template
//! puts message content between special tokens, which split the text there anyway.
//! Easy to break: markers are stable per message index for the whole session, so the
//! rendered (marked) text of earlier turns stays a prefix of later renders; a marker the
//! template mangled is refused (`Error::Template`), never encoded with added tokens.

use crate::chat::message::{ChatMessage, Role};
use crate::error::{Error, Result};
use crate::tokenizer::Tokenizer;

const OPEN: char = '\u{E000}';
const CLOSE: char = '\u{E001}';
/// Set in a marker's index when it stands for the message's reasoning (`think`).
const THINK: usize = 0x8000_0000;

/// The positions a prompt may take: those `left` of a context of `context_length`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Room {
    pub left: usize,
    pub context_length: usize,
}

impl Room {
    /// No bound (counting a prompt's tokens, not feeding them).
    pub const UNBOUNDED: Room = Room { left: usize::MAX, context_length: usize::MAX };
}

/// The markers of one session.
#[derive(Debug, Clone)]
pub struct Literals {
    nonce: u64,
}

impl Literals {
    /// Markers with a nonce no message will contain by chance.
    pub fn new() -> Self {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(0x6b33);
        Literals { nonce: h.finish() }
    }

    /// The nonce, to save with a session ([`Literals::with_nonce`] restores it).
    pub fn nonce(&self) -> u64 {
        self.nonce
    }

    /// The markers of a saved session.
    pub fn with_nonce(nonce: u64) -> Self {
        Literals { nonce }
    }

    fn marker(&self, index: usize) -> String {
        format!("{OPEN}{:016x}{index:08x}{CLOSE}", self.nonce)
    }

    /// `messages` with every user, system and tool content replaced by its marker, and an
    /// assistant's content or reasoning when it holds a special-token string.
    pub fn mark(&self, messages: &[ChatMessage], tokenizer: &Tokenizer) -> Vec<ChatMessage> {
        messages
            .iter()
            .enumerate()
            .map(|(i, m)| match m.role {
                Role::User | Role::System | Role::Tool => ChatMessage { content: self.marker(i), ..m.clone() },
                Role::Assistant => {
                    let mut m = m.clone();
                    if tokenizer.holds_added_token(&m.content) {
                        m.content = self.marker(i);
                    }
                    if m.think.as_deref().is_some_and(|t| tokenizer.holds_added_token(t)) {
                        m.think = Some(self.marker(i | THINK));
                    }
                    m
                }
            })
            .collect()
    }

    /// Token ids of `marked_tail` (the part of a marked render not yet fed): template text
    /// with added tokens, marked contents as plain text. A content whose size alone shows
    /// the prompt cannot fit `room` positions is refused before it is encoded
    /// ([`Error::PromptTooLong`]); `room` bounds nothing else.
    pub fn encode(
        &self,
        tokenizer: &Tokenizer,
        (marked_tail, room): (&str, Room),
        messages: &[ChatMessage],
    ) -> Result<Vec<u32>> {
        let mut ids = Vec::new();
        let mut rest = marked_tail;
        while let Some(open) = rest.find(OPEN) {
            ids.extend(tokenizer.encode(&rest[..open]));
            let after = &rest[open..];
            let close = after.find(CLOSE).ok_or_else(altered)?;
            let index = self.index_of(&after[..close + CLOSE.len_utf8()]).ok_or_else(altered)?;
            let message = messages.get(index & !THINK).ok_or_else(altered)?;
            let content =
                if index & THINK != 0 { message.think.as_deref().ok_or_else(altered)? } else { &message.content };
            let at_least = ids.len().saturating_add(tokenizer.min_tokens_for(content.len()));
            if at_least > room.left {
                let (bytes, limit) = (content.len(), room.context_length);
                return Err(Error::PromptTooLong { bytes, at_least, room: room.left, limit });
            }
            ids.extend(tokenizer.encode_ordinary(content));
            rest = &after[close + CLOSE.len_utf8()..];
        }
        ids.extend(tokenizer.encode(rest));
        Ok(ids)
    }

    /// The message index a whole marker names, if it is one of this session's.
    fn index_of(&self, marker: &str) -> Option<usize> {
        let body = marker.strip_prefix(OPEN)?.strip_suffix(CLOSE)?;
        let (nonce, index) = (body.get(..16)?, body.get(16..)?);
        (u64::from_str_radix(nonce, 16).ok()? == self.nonce && index.len() == 8)
            .then(|| usize::from_str_radix(index, 16).ok())
            .flatten()
    }
}

impl Default for Literals {
    fn default() -> Self {
        Self::new()
    }
}

fn altered() -> Error {
    Error::Template {
        reason: "the chat template alters or repeats message text, so what a person typed cannot be kept apart from \
                 control tokens"
            .into(),
    }
}
