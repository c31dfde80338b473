//! [`VisibleText`]: the one rule for which generated tokens are text a person sees.
//!
//! Owns: decoding generated ids into UTF-8 text as they stream (never half a character)
//! and hiding the end-of-message token, as the saved reply drops it; every other token,
//! added tokens included, shows as its text, exactly as the saved reply has it.
//! Must not: differ between the window, the terminal and the server.

use k3_engine::tokenizer::{StreamDecoder, Tokenizer};

/// Streams visible text out of generated ids.
pub struct VisibleText<'a> {
    tokenizer: &'a Tokenizer,
    decoder: StreamDecoder,
}

impl<'a> VisibleText<'a> {
    pub fn new(tokenizer: &'a Tokenizer) -> Self {
        VisibleText { tokenizer, decoder: StreamDecoder::new() }
    }

    /// The text `id` completes (empty for the end-of-message token or an incomplete
    /// UTF-8 sequence, whose bytes wait for the next token).
    pub fn push(&mut self, id: u32) -> String {
        if Some(id) == self.tokenizer.eos_id() {
            return String::new();
        }
        self.decoder.push(self.tokenizer.token_bytes(id).unwrap_or_default())
    }

    /// Bytes held back for an incomplete sequence, as replacement characters.
    pub fn finish(&mut self) -> String {
        self.decoder.finish()
    }
}
