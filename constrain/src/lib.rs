//! Constrained decoding for K3 replies, with `llguidance`.
//!
//! Owns: the grammar of one reply under a request's options ([`grammar`]: the channels
//! of the XTML template, a call of a declared tool when the tool choice asks for one,
//! each call's typed arguments against that tool's schema, the response as JSON against
//! `response_format`), the tokenizer's vocabulary as llguidance reads it ([`vocab`]) and
//! the [`ReplyConstraint`] that hands the engine one token mask per step ([`matcher`]).
//! Must not: change a logit (the engine's `constraint` seam only narrows the choice), or
//! be built per token (a [`Constrainer`] is built once per model and shared).
//!
//! Why llguidance: it is the Rust library behind llama.cpp's and vLLM's structured
//! output, compiles JSON schemas and Lark grammars with special tokens, and computes a
//! mask over a 160 K vocabulary in well under a millisecond (`k3 bench constrain`).

pub mod grammar;
pub mod matcher;
pub mod vocab;

pub use grammar::{reply_grammar, ReplyShape};
pub use matcher::{check_shape, ConstrainError, Constrainer, ReplyConstraint};
