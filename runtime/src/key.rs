//! [`ConversationKey`]: whose conversation a turn continues. The runtime reuses a kept
//! session only for a turn of the same key whose history it holds exactly, so two front
//! ends never continue each other's state.
//!
//! Owns: the keys (the app's history rows, the terminal's `k3 chat`, the local API, the
//! app's queue) and their spelling in a kept file's name (`history.12`, `terminal`, `api`,
//! `queue`), which also reads the bare numbers files were named by before the key had a
//! type (the API's old constant, the terminal's 0, a history row's id).

use std::fmt;

/// The conversation a turn belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConversationKey {
    /// A conversation of the app's chat history (its row id).
    History(i64),
    /// The terminal's `k3 chat` session.
    Terminal,
    /// A request to the local API (OpenAI or Anthropic): each carries its whole history.
    Api,
    /// An item of the app's queue: a new conversation of one prompt.
    Queue,
}

/// The API's key when keys were bare numbers (kept files named by it still read as `Api`).
const LEGACY_API: i64 = -0x4b33_4150_4900;

impl fmt::Display for ConversationKey {
    /// The key as a kept file's name spells it (the file's number follows the last `-`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConversationKey::History(id) => write!(f, "history.{id}"),
            ConversationKey::Terminal => f.write_str("terminal"),
            ConversationKey::Api => f.write_str("api"),
            ConversationKey::Queue => f.write_str("queue"),
        }
    }
}

impl ConversationKey {
    /// The key spelled `text` in a kept file's name (or the bare number of an older one).
    pub fn parse(text: &str) -> Option<ConversationKey> {
        match text {
            "terminal" => Some(ConversationKey::Terminal),
            "api" => Some(ConversationKey::Api),
            "queue" => Some(ConversationKey::Queue),
            _ => match text.strip_prefix("history.") {
                Some(id) => id.parse().ok().map(ConversationKey::History),
                None => match text.parse::<i64>().ok()? {
                    LEGACY_API => Some(ConversationKey::Api),
                    0 => Some(ConversationKey::Terminal),
                    id => Some(ConversationKey::History(id)),
                },
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_key_reads_back_from_its_spelling_and_older_numbers_still_read() {
        for key in
            [ConversationKey::History(12), ConversationKey::Terminal, ConversationKey::Api, ConversationKey::Queue]
        {
            assert_eq!(ConversationKey::parse(&key.to_string()), Some(key));
        }
        assert_eq!(ConversationKey::parse("-82683511195904"), Some(ConversationKey::Api));
        assert_eq!(ConversationKey::parse("7"), Some(ConversationKey::History(7)));
        assert_eq!(ConversationKey::parse("0"), Some(ConversationKey::Terminal));
        assert_eq!(ConversationKey::parse("history.x"), None);
        assert_eq!(ConversationKey::parse("notes"), None);
    }
}
