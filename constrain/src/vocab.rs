//! The tokenizer's vocabulary as llguidance reads it.
//!
//! Owns: one byte string per id — a rank's raw bytes, an added token's text behind
//! llguidance's special-token marker (0xFF), and a named placeholder for an id the files
//! leave empty — and the end-of-sequence id.
//! Must not: re-tokenise (masks only need the vocabulary: llguidance's approximate
//! tokenizer env serves the rest).

use k3_engine::tokenizer::Tokenizer;
use llguidance::toktrie::{ApproximateTokEnv, TokEnv, TokRxInfo, TokTrie};

/// The vocabulary of `tokenizer` as a llguidance token environment.
pub fn token_env(tokenizer: &Tokenizer) -> TokEnv {
    let n = tokenizer.vocab_size();
    let words: Vec<Vec<u8>> = (0..n as u32).map(|id| word(tokenizer, id)).collect();
    let eos = tokenizer.eos_id().unwrap_or(n as u32 - 1);
    let info = TokRxInfo::new(n as u32, eos);
    std::sync::Arc::new(ApproximateTokEnv::new(TokTrie::from(&info, &words)))
}

/// A stand-in vocabulary — the 256 single bytes and the XTML markers — to compile a
/// reply's grammar before a model is at hand (a schema check costs no vocabulary pass).
pub fn probe_env() -> TokEnv {
    let mut words: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    for marker in ["<|open|>", "<|close|>", "<|sep|>", "<|end_of_msg|>"] {
        let mut w = vec![TokTrie::SPECIAL_TOKEN_MARKER];
        w.extend_from_slice(marker.as_bytes());
        words.push(w);
    }
    let info = TokRxInfo::new(words.len() as u32, words.len() as u32 - 1);
    std::sync::Arc::new(ApproximateTokEnv::new(TokTrie::from(&info, &words)))
}

/// The bytes llguidance sees for `id`.
fn word(tokenizer: &Tokenizer, id: u32) -> Vec<u8> {
    let special = |text: &[u8]| {
        let mut w = vec![TokTrie::SPECIAL_TOKEN_MARKER];
        w.extend_from_slice(text);
        w
    };
    match tokenizer.token_bytes(id) {
        Ok(bytes) if tokenizer.is_added(id) => special(bytes),
        Ok(bytes) => bytes.to_vec(),
        Err(_) => special(format!("<[unused {id}]>").as_bytes()),
    }
}
