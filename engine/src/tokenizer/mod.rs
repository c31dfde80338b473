//! Text ⇄ token ids with the released Kimi tokenizer files.
//!
//! Owns: loading `tiktoken.model` and `tokenizer_config.json` ([`files`]), the Kimi
//! pre-tokenisation pattern ([`pattern`]), encoding with added tokens matched in the text
//! and rank-BPE elsewhere ([`Tokenizer`]), and UTF-8-safe streaming decode
//! ([`StreamDecoder`]).
//! Must not: hard-code a special-token id: every id comes from the files.
//! Easy to break: keys of `tiktoken.model` are BYTES; a token's bytes need not be valid
//! UTF-8 on their own, so decoding works on bytes and only the stream decoder makes text.

mod encoder;
pub mod files;
pub mod pattern;
mod stream;

pub use encoder::{Tokenizer, MAX_WHITESPACE_RUN};
pub use stream::StreamDecoder;
