//! Conversations: the XTML chat template and multi-turn chat sessions.
//!
//! Owns: rendering messages the way K3 was trained to read them ([`template`]) and a
//! [`ChatSession`] that keeps the engine state of earlier turns so a new user message is
//! prefilled alone ([`session`]); which generated tokens are text a person sees
//! ([`reply`]).
//! Must not: re-tokenise history that the engine already holds: the session's tokens are
//! the truth, rendered text only tells what to append.

pub mod literal;
pub mod reply;
pub mod session;
pub mod template;

pub use reply::{Channel, Piece, ReplyReader};
pub use session::{read_saved_conversation, ChatReply, ChatSession, SavedConversation};
pub use template::{ChatMessage, ChatMode, ChatTemplate, Role};
