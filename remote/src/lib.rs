//! k3-remote: chat through a remote OpenAI-compatible endpoint (issue 20).
//!
//! This first layer turns the bytes of a `POST /v1/chat/completions` stream (`"stream":
//! true`) into what a reply is made of: text and reasoning deltas, the finish reason and the
//! server's token usage. Server-sent-event framing is `eventsource-stream`'s; what the events
//! mean is [`chunk`] (one event) and [`assemble`] (a whole stream, with its ending checked).
//!
//! [`client`] speaks HTTP to one endpoint; [`backend`] makes an endpoint and model id the
//! runtime's `RemoteBackend`, so a remote reply runs behind the app's own reply handler.
//!
//! Must not: trust a stream that stops without saying it finished — a server that dies
//! mid-reply is an error carrying the partial text, never a short reply.

pub mod assemble;
pub mod backend;
pub mod chunk;
pub mod client;

pub use assemble::{assemble, assemble_watched, Assembler, Delta, Ended, Failure, RemoteReply, Watch};
pub use backend::{chat_request, host_of, RemoteChat};
pub use chunk::{Decoded, FinishReason, StreamError, Usage};
pub use client::{ChatRequest, Endpoint, Outcome, RemoteClient, RemoteError, Timeouts, WireMessage};
