//! Anthropic's Messages API over the same engine: `POST /v1/messages`.
//!
//! Owns: Anthropic's wire shapes — the request and its content blocks ([`request`]), the
//! message, its errors and the streaming event sequence ([`response`], [`stream`]) — mapped
//! to and from the same chat core, turns and replies as the OpenAI routes use.
//! Must not: decide anything the OpenAI path decides differently: validation of tools,
//! schemas, thinking and the turn split are shared (`agent`, `turn::assemble`).

pub mod request;
pub mod response;
pub mod stream;
