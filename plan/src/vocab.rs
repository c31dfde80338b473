//! Where the vocabulary-sized tensors live — the embedding table and the output head, 4.70
//! GB of released K3 — and what each placement holds in RAM.
//!
//! Owns: [`VocabPlacement`] (held in RAM, or read from the checkpoint when used), the rule
//! that picks it from a plan's trunk residency ([`VocabPlacement::for_trunk`]), and the
//! bytes of each ([`vocab_bytes`]): held, both tensors; read, a cache of
//! [`EMBEDDING_CACHE_ROWS`] embedding rows plus the window of one row, and two head chunk
//! buffers of at most [`HEAD_CHUNK_BYTES`] (the next chunk is read while one is multiplied).
//! Must not: change a result: a logit is one head row's dot product whichever chunk holds
//! the row, and an embedding row is the same bytes however it arrived.
//! Easy to break: a plan whose trunk streams reads the head every token (its bytes belong
//! in the forecast's reads), and a plan that streams nothing holds both tensors.

use crate::footprint::{Footprint, LayerResidency};
use crate::size::exact_slot;

/// Embedding rows kept after they are read (a token's row is read once while it recurs).
pub const EMBEDDING_CACHE_ROWS: u64 = 256;

/// Most bytes of the output head read and multiplied at once.
pub const HEAD_CHUNK_BYTES: u64 = 32 << 20;

/// Where the embedding table and the output head live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VocabPlacement {
    /// Both in RAM, read once when the model opens.
    Held,
    /// Embedding rows read from the checkpoint when a token needs them (a small cache);
    /// the head read in row chunks every time logits are computed.
    Read,
}

impl VocabPlacement {
    /// Read when any trunk layer streams (the head then costs a small share of what a
    /// token reads anyway) and the footprint knows its vocabulary rows; held when the
    /// whole trunk is in RAM.
    pub fn for_trunk(fp: &Footprint, residency: &[LayerResidency]) -> VocabPlacement {
        if fp.vocab_rows > 0 && residency.contains(&LayerResidency::Streamed) {
            VocabPlacement::Read
        } else {
            VocabPlacement::Held
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            VocabPlacement::Held => "held",
            VocabPlacement::Read => "read when used",
        }
    }
}

/// Bytes of one embedding row (0 for a footprint without vocabulary rows).
pub fn embedding_row_bytes(fp: &Footprint) -> u64 {
    fp.embed_bytes.checked_div(fp.vocab_rows).unwrap_or(0)
}

/// Bytes of one output head row.
pub fn head_row_bytes(fp: &Footprint) -> u64 {
    fp.head_bytes.checked_div(fp.vocab_rows).unwrap_or(0)
}

/// Head rows read and multiplied at once: as many whole rows as [`HEAD_CHUNK_BYTES`]
/// holds, at least one, at most the vocabulary.
pub fn head_chunk_rows(fp: &Footprint) -> u64 {
    let row = head_row_bytes(fp).max(1);
    (HEAD_CHUNK_BYTES / row).clamp(1, fp.vocab_rows.max(1))
}

/// Bytes of one head chunk buffer: its rows widened to 4096-byte reads (saturating).
pub fn head_chunk_buffer_bytes(fp: &Footprint) -> u64 {
    exact_slot(head_chunk_rows(fp).saturating_mul(head_row_bytes(fp))).unwrap_or(u64::MAX)
}

/// RAM the vocabulary tensors take under `placement` (saturating); held, at most the
/// model-level bytes they are part of.
pub fn vocab_bytes(fp: &Footprint, placement: VocabPlacement) -> u64 {
    match placement {
        VocabPlacement::Held => fp.embed_bytes.saturating_add(fp.head_bytes).min(fp.resident_bytes),
        VocabPlacement::Read => {
            let row = embedding_row_bytes(fp);
            let row_window = exact_slot(row).unwrap_or(u64::MAX);
            EMBEDDING_CACHE_ROWS
                .saturating_mul(row)
                .saturating_add(row_window)
                .saturating_add(head_chunk_buffer_bytes(fp).saturating_mul(2))
        }
    }
}

/// RAM of every model-level tensor (embeddings, head, final norms) under `placement`: the
/// footprint's resident bytes with the embeddings and head counted as `placement` holds them.
pub fn model_level_bytes(fp: &Footprint, placement: VocabPlacement) -> u64 {
    fp.resident_bytes.saturating_sub(vocab_bytes(fp, VocabPlacement::Held)).saturating_add(vocab_bytes(fp, placement))
}

/// What every plan holds besides trunk and cache: the model-level tensors (the embeddings
/// and head as `vocab` places them), recurrent state, KV cache for `context_length`
/// positions, scratch (saturating).
pub fn fixed_bytes_with(fp: &Footprint, context_length: u64, vocab: VocabPlacement) -> u64 {
    model_level_bytes(fp, vocab)
        .saturating_add(fp.state_bytes)
        .saturating_add(fp.kv_bytes(context_length))
        .saturating_add(fp.scratch_bytes)
}

/// [`fixed_bytes_with`] with the embeddings and head held (the most a plan fixes).
pub fn fixed_bytes(fp: &Footprint, context_length: u64) -> u64 {
    fixed_bytes_with(fp, context_length, VocabPlacement::Held)
}
