//! The sizes of one model as the planner sees them ([`Footprint`]), where a trunk layer
//! lives ([`LayerResidency`]), and the slot, scratch and prefill-chunk sizes derived from
//! them. A leaf below the plan (`memory`), the `auto` rule, the vocabulary placement and
//! the piece ring, so none of them imports another for these.
//!
//! Owns: [`Footprint`], [`LayerResidency`], the prefill and context limits, slot sizes.
//! Arithmetic: sizes derived from a footprint saturate (a saturated size fits no budget);
//! `exact_slot` (in `size`) is the checked twin the plan's own figures use.

use crate::pieces::LayerPieces;
use crate::presets::Budget;
pub use crate::size::align_4096;

/// Tokens per forward chunk of teacher forcing, and the fewest a prefill chunk holds (the
/// footprint's `scratch_bytes` are sized for this many).
pub const PREFILL_CHUNK: usize = 64;

/// The most tokens one prefill chunk holds: each chunk reads every streamed trunk layer
/// and each expert it routes to once, so longer chunks read less per prompt token.
pub const MAX_PREFILL_CHUNK: usize = 512;

/// The most RAM a plan gives prefill activations, and the share of its budgets
/// (trunk + cache) they may take: a sixteenth, so a small plan keeps 64-token chunks.
const PREFILL_ACTIVATIONS_CAP: u64 = 512 << 20;
const PREFILL_ACTIVATIONS_SHARE: u64 = 16;

/// The longest context a plan may reserve KV cache for (the engine refuses more): K3's
/// advertised window of 1 M positions.
pub const MAX_CONTEXT: u64 = 1 << 20;

/// The most concurrent expert reads a plan may provide buffers for.
pub const MAX_IO_THREADS: u64 = 256;

/// Live work buffers of the widest activation per chunk token (a dozen covers the
/// forward pass's named buffers and the kernels' widened copies).
const SCRATCH_BUFFERS: u64 = 12;
/// Vocabulary-wide buffers per chunk token: the logits a pass returns and one copy of
/// them (the head itself is multiplied a bounded chunk of rows at a time).
const LOGIT_BUFFERS: u64 = 2;
/// f32 words per latent query element: the absorbed query as f64 (two) and the head's
/// softmax-weighted mix (one).
const LATENT_QUERY_WORDS: u64 = 3;

/// Sizes of one model, measured from its config and tensor index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Footprint {
    /// Bytes of each decoder layer's trunk (everything but its routed experts).
    pub layer_trunk_bytes: Vec<u64>,
    /// Bytes of one routed expert (the largest, if they differ).
    pub expert_bytes: u64,
    /// Routed experts in the whole model (all MoE layers).
    pub n_experts_total: u64,
    /// Experts one token uses per MoE layer.
    pub top_k: u64,
    /// Layers with routed experts (`n_experts_total / moe_layers` experts each).
    pub moe_layers: u64,
    /// Model-level tensors: embeddings, head, final norms (the embeddings and head only
    /// while they are held: [`crate::VocabPlacement`]).
    pub resident_bytes: u64,
    /// Of `resident_bytes`, the output head (`lm_head`), multiplied in full every token.
    pub head_bytes: u64,
    /// Of `resident_bytes`, the embedding table (`embed_tokens`).
    pub embed_bytes: u64,
    /// Rows of the embedding table and of the head (the vocabulary).
    pub vocab_rows: u64,
    /// Recurrent state of one sequence (KDA state + conv histories).
    pub state_bytes: u64,
    /// MLA cache bytes per position of one sequence.
    pub kv_bytes_per_position: u64,
    /// Work buffers of one forward chunk of [`PREFILL_CHUNK`] tokens ([`scratch_bytes_for`]);
    /// a plan's prefill chunk holds [`crate::memory::MemoryPlan::scratch_bytes`].
    pub scratch_bytes: u64,
    /// How each layer streams through a slot smaller than itself, indexed like
    /// `layer_trunk_bytes`; empty when no layer can (the trunk then streams whole layers).
    pub layer_pieces: Vec<LayerPieces>,
}

impl Footprint {
    /// Every layer's trunk bytes (saturating).
    pub fn trunk_total_bytes(&self) -> u64 {
        self.layer_trunk_bytes.iter().fold(0u64, |a, &b| a.saturating_add(b))
    }

    /// MLA cache bytes of one sequence of `positions` positions (saturating).
    pub fn kv_bytes(&self, positions: u64) -> u64 {
        self.kv_bytes_per_position.saturating_mul(positions)
    }

    /// Routed experts in one MoE layer.
    pub fn experts_per_layer(&self) -> u64 {
        self.n_experts_total.checked_div(self.moe_layers).unwrap_or(0)
    }

    /// The footprint of `n` sequence states held at once (the conversation being answered
    /// and those kept for reuse, or a batch): each has its own recurrent state and KV cache,
    /// so both scale by `n`; the weights do not (saturating, as every derived size here).
    pub fn for_sequences(&self, n: u64) -> Footprint {
        Footprint {
            state_bytes: self.state_bytes.saturating_mul(n),
            kv_bytes_per_position: self.kv_bytes_per_position.saturating_mul(n),
            ..self.clone()
        }
    }

    /// Routed-expert requests of one decoded token: top-k in every MoE layer.
    pub fn expert_requests_per_token(&self) -> u64 {
        self.moe_layers.saturating_mul(self.top_k)
    }
}

/// Scratch for one forward chunk of [`PREFILL_CHUNK`] tokens whose widest activation
/// inside the layers has `widest_elems` f32 values, whose MLA queries in latent space have
/// `latent_query_elems` values (heads × (kv_lora + rope), held as f64 with each head's
/// f32 mix beside them: three f32 words each), over a vocabulary of `vocab` logits.
/// Measured on k3-mid, a 512-token chunk held 0.98 MB per token more than a 64-token one;
/// this gives it 1.26 MB.
pub fn scratch_bytes_for(widest_elems: u64, latent_query_elems: u64, vocab: u64) -> u64 {
    let per_token = SCRATCH_BUFFERS
        .saturating_mul(widest_elems)
        .saturating_add(LATENT_QUERY_WORDS.saturating_mul(latent_query_elems))
        .saturating_add(LOGIT_BUFFERS.saturating_mul(vocab));
    (PREFILL_CHUNK as u64 * 4).saturating_mul(per_token)
}

/// Tokens per prefill chunk for budgets `budget`: the most (a multiple of
/// [`PREFILL_CHUNK`], at most [`MAX_PREFILL_CHUNK`]) whose activations — the footprint's
/// per-token scratch — stay within a sixteenth of the budgets and 512 MiB; never fewer
/// than [`PREFILL_CHUNK`].
pub fn prefill_chunk(fp: &Footprint, budget: Budget) -> u64 {
    let per_token = fp.scratch_bytes.div_ceil(PREFILL_CHUNK as u64).max(1);
    let allowance = (budget.trunk_bytes.saturating_add(budget.cache_bytes) / PREFILL_ACTIVATIONS_SHARE)
        .min(PREFILL_ACTIVATIONS_CAP);
    let fits = allowance / per_token / PREFILL_CHUNK as u64 * PREFILL_CHUNK as u64;
    fits.clamp(PREFILL_CHUNK as u64, MAX_PREFILL_CHUNK as u64)
}

/// Scratch of a prefill chunk of `chunk` tokens: the footprint's (sized for
/// [`PREFILL_CHUNK`] tokens) scaled to it, `⌊scratch · chunk / 64⌋`, exactly; `None` past
/// 64 bits.
pub fn chunk_scratch_bytes(fp: &Footprint, chunk: u64) -> Option<u64> {
    u64::try_from(u128::from(fp.scratch_bytes) * u128::from(chunk) / PREFILL_CHUNK as u128).ok()
}

/// Bytes of one expert-cache slot: the expert's read window widened outward to 4096
/// boundaries (one extra page for an unaligned start).
pub fn expert_slot_bytes(expert_bytes: u64) -> u64 {
    align_4096(expert_bytes.max(1)).saturating_add(4096)
}

/// Bytes of one ring slot for a layer of `layer_bytes` (the same widening).
pub fn ring_slot_bytes_for(layer_bytes: u64) -> u64 {
    align_4096(layer_bytes).saturating_add(4096)
}

/// Where one trunk layer's weights live between tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LayerResidency {
    /// In RAM as the shards hold it (bf16), computed from in place.
    Pinned,
    /// In RAM as `k3 pack --codec huffman` stored it (~0.67 × raw), decoded into a ring
    /// slot every token (only for a layer a coded trunk stores coded).
    PinnedCoded,
    /// Read from `trunk.bin` into a ring slot every token (its coded bytes on a coded
    /// trunk, decoded as they arrive).
    Streamed,
}

impl LayerResidency {
    /// The prefix rule's residency: layers `0..pinned` pinned, the rest of `n` streamed.
    pub fn prefix(n: usize, pinned: usize) -> Vec<LayerResidency> {
        (0..n).map(|l| if l < pinned { LayerResidency::Pinned } else { LayerResidency::Streamed }).collect()
    }

    /// True for the two residencies held in RAM across tokens.
    pub fn in_ram(self) -> bool {
        !matches!(self, LayerResidency::Streamed)
    }
}
