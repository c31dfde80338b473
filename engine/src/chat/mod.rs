//! Conversations: messages with tool calls, the XTML chat template and multi-turn chat
//! sessions.
//!
//! Owns: what a conversation is ([`message`], [`options`]); rendering it the way K3 was
//! trained to read it ([`template`], [`xtml`]); a [`ChatSession`] that keeps the engine
//! state of earlier turns so new messages are prefilled alone ([`session`]); which
//! generated tokens are text a person sees and which are tool calls ([`reply`],
//! [`calls`]).
//! Must not: re-tokenise history that the engine already holds: the session's tokens are
//! the truth, rendered text only tells what to append.

pub mod calls;
pub mod escape;
pub mod literal;
pub mod message;
pub mod options;
pub mod reply;
pub mod session;
pub mod template;
pub mod xtml;

pub use calls::{CallDelta, CallError};
pub use message::{ChatMessage, Role, ToolAnswer, ToolCall, ToolSpec};
pub use options::{ChatMode, ChatOptions, Effort, ResponseFormat, ToolChoice};
pub use reply::{Channel, Piece, ReplyReader};
pub use session::{
    declared_tool_specs, declared_tools, prompt_tokens, read_saved_conversation, recover_saved_conversation, ChatReply,
    ChatSession, SavedConversation, TurnInput,
};
pub use template::ChatTemplate;
