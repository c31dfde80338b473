//! The released Kimi K3 checkpoint's footprint, derived from the tensor catalogue of spec
//! §6.4 (shapes and dtypes) and the layer map of §2.4, so the planner and the forecast can
//! speak about the real model before a byte of it is on this machine.
//!
//! Owns: the catalogue as data ([`Entry`] tables: per-layer vectors, KDA, MLA, the dense
//! FFN of layer 0, the MoE trunk, one routed expert, the model-level tensors), the sizes
//! derived from it ([`layer_trunk_bytes`], [`expert_bytes`], [`released_footprint`]), and
//! the published totals it cannot derive ([`RELEASED_CHECKPOINT_BYTES`]).
//! Must not: write down a size the catalogue can give: sizes are computed from shapes, and
//! the planner's own functions size slots ([`crate::expert_slot_bytes`],
//! [`crate::ring_slot_bytes_for`]).
//! Easy to break (where our figures differ from the spec's published ones, on purpose):
//! * recurrent state: 464,633,856 B for the 69 KDA layers, where spec §1 quotes
//!   626,245,632 B because the C engine reserves a slot for all 93 layers;
//! * expert slot: the planner's 17,551,360 B (payload rounded up to 4096, plus one page for
//!   an unaligned start), where the C engine's is 17,555,456 B (two extra pages);
//! * ring slot: 2,341,220,352 B for layer 0, where the C engine printed 2.37 GB (spec §15:
//!   older binder sizing).

use crate::memory::{align_4096, ring_slot_bytes_for, scratch_bytes_for, Footprint};
use crate::pieces::{is_piece_shape, LayerPieces};
use crate::sequence::{kv_bytes_per_position, recurrent_state_bytes, MlaCacheShape};
use Dtype::{Bf16, F32, U8};

/// Bytes of the whole released checkpoint, 96 shards (spec §1, `EXPECT_BYTES`); includes
/// shard headers and the vision tower, which the catalogue does not size.
pub const RELEASED_CHECKPOINT_BYTES: u64 = 1_560_936_091_448;
/// Bytes of `trunk.bin` packed from the release: every layer's trunk run rounded up to
/// 4096 (spec §8 [derived]; a test checks it against the catalogue).
pub const RELEASED_PACKED_TRUNK_BYTES: u64 = 108_811_952_128;
/// Bytes of the two vision shards (95 and 96), not used by the text path (spec §6.2).
pub const RELEASED_VISION_SHARD_BYTES: u64 = 92_289_328 + 802_448_352;

/// Decoder layers.
pub const LAYERS: usize = 93;
/// Hidden size.
pub const HIDDEN: u64 = 7168;
const VOCAB: u64 = 163_840;
/// KDA heads.
pub const KDA_HEADS: u64 = 96;
/// Width of a KDA head.
pub const KDA_HEAD_DIM: u64 = 128;
const KDA_WIDTH: u64 = KDA_HEADS * KDA_HEAD_DIM;
const CONV_KERNEL: u64 = 4;
const A_LOG_LEN: u64 = 128;
/// MLA heads.
pub const MLA_HEADS: u64 = 96;
/// MLA query low-rank width.
pub const Q_LORA: u64 = 1536;
/// MLA key-value latent width.
pub const KV_LORA: u64 = 512;
/// MLA query/key width without rotary position.
pub const QK_NOPE: u64 = 128;
/// MLA query/key rotary width.
pub const QK_ROPE: u64 = 64;
/// MLA value head width.
pub const V_HEAD: u64 = 128;
const DENSE_INTER: u64 = 33_792;
/// Routed experts per MoE layer.
pub const EXPERTS_PER_LAYER: u64 = 896;
/// Experts per token in each MoE layer.
pub const TOP_K: u64 = 16;
/// Routed experts' input width (the latent the router projects to).
pub const LATENT: u64 = 3584;
/// Routed experts' intermediate width.
pub const EXPERT_INTER: u64 = 3072;
const SHARED_WIDTH: u64 = 6144;
/// Layers `< FIRST_DENSE` use the dense FFN; the rest are MoE.
const FIRST_DENSE: usize = 1;

/// Storage type of a catalogue tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    Bf16,
    F32,
    U8,
}

impl Dtype {
    pub fn size(self) -> u64 {
        match self {
            Dtype::Bf16 => 2,
            Dtype::F32 => 4,
            Dtype::U8 => 1,
        }
    }
}

/// One tensor of the catalogue: its name (suffix), shape and dtype.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub name: &'static str,
    pub shape: &'static [u64],
    pub dtype: Dtype,
}

const fn e(name: &'static str, shape: &'static [u64], dtype: Dtype) -> Entry {
    Entry { name, shape, dtype }
}

/// Every layer (`layers.ℓ.`).
pub const LAYER_VECTORS: &[Entry] = &[
    e("input_layernorm.weight", &[HIDDEN], Bf16),
    e("post_attention_layernorm.weight", &[HIDDEN], Bf16),
    e("self_attention_res_norm.weight", &[HIDDEN], Bf16),
    e("self_attention_res_proj.weight", &[1, HIDDEN], Bf16),
    e("mlp_res_norm.weight", &[HIDDEN], Bf16),
    e("mlp_res_proj.weight", &[1, HIDDEN], Bf16),
];

/// KDA layers (`layers.ℓ.self_attn.`).
pub const KDA: &[Entry] = &[
    e("q_proj.weight", &[KDA_WIDTH, HIDDEN], Bf16),
    e("k_proj.weight", &[KDA_WIDTH, HIDDEN], Bf16),
    e("v_proj.weight", &[KDA_WIDTH, HIDDEN], Bf16),
    e("g_proj.weight", &[KDA_WIDTH, HIDDEN], Bf16),
    e("o_proj.weight", &[HIDDEN, KDA_WIDTH], Bf16),
    e("q_conv1d.weight", &[KDA_WIDTH, 1, CONV_KERNEL], F32),
    e("k_conv1d.weight", &[KDA_WIDTH, 1, CONV_KERNEL], F32),
    e("v_conv1d.weight", &[KDA_WIDTH, 1, CONV_KERNEL], F32),
    e("f_a_proj.weight", &[KDA_HEAD_DIM, HIDDEN], Bf16),
    e("f_b_proj.weight", &[KDA_WIDTH, KDA_HEAD_DIM], Bf16),
    e("b_proj.weight", &[KDA_HEADS, HIDDEN], Bf16),
    e("A_log", &[A_LOG_LEN], F32),
    e("dt_bias", &[KDA_WIDTH], F32),
    e("o_norm.weight", &[KDA_HEAD_DIM], F32),
];

/// Gated MLA layers (`layers.ℓ.self_attn.`).
pub const MLA: &[Entry] = &[
    e("q_a_proj.weight", &[Q_LORA, HIDDEN], Bf16),
    e("q_a_layernorm.weight", &[Q_LORA], Bf16),
    e("q_b_proj.weight", &[MLA_HEADS * (QK_NOPE + QK_ROPE), Q_LORA], Bf16),
    e("kv_a_proj_with_mqa.weight", &[KV_LORA + QK_ROPE, HIDDEN], Bf16),
    e("kv_a_layernorm.weight", &[KV_LORA], Bf16),
    e("kv_b_proj.weight", &[MLA_HEADS * (QK_NOPE + V_HEAD), KV_LORA], Bf16),
    e("o_proj.weight", &[HIDDEN, MLA_HEADS * V_HEAD], Bf16),
    e("g_proj.weight", &[MLA_HEADS * V_HEAD, HIDDEN], Bf16),
];

/// Layer 0's dense FFN (`layers.0.mlp.`).
pub const DENSE_FFN: &[Entry] = &[
    e("gate_proj.weight", &[DENSE_INTER, HIDDEN], Bf16),
    e("up_proj.weight", &[DENSE_INTER, HIDDEN], Bf16),
    e("down_proj.weight", &[HIDDEN, DENSE_INTER], Bf16),
];

/// The trunk part of an MoE layer (`layers.ℓ.block_sparse_moe.`): router, latent
/// projections and norm, the fused shared experts.
pub const MOE_TRUNK: &[Entry] = &[
    e("gate.weight", &[EXPERTS_PER_LAYER, HIDDEN], Bf16),
    e("gate.e_score_correction_bias", &[EXPERTS_PER_LAYER], F32),
    e("routed_expert_down_proj.weight", &[LATENT, HIDDEN], Bf16),
    e("routed_expert_up_proj.weight", &[HIDDEN, LATENT], Bf16),
    e("routed_expert_norm.weight", &[LATENT], Bf16),
    e("shared_experts.gate_proj.weight", &[SHARED_WIDTH, HIDDEN], Bf16),
    e("shared_experts.up_proj.weight", &[SHARED_WIDTH, HIDDEN], Bf16),
    e("shared_experts.down_proj.weight", &[HIDDEN, SHARED_WIDTH], Bf16),
];

/// One routed expert (`experts.E.`), MXFP4: packed nibbles and one scale per 32.
pub const EXPERT: &[Entry] = &[
    e("w1.weight_packed", &[EXPERT_INTER, LATENT / 2], U8),
    e("w1.weight_scale", &[EXPERT_INTER, LATENT / 32], U8),
    e("w2.weight_packed", &[LATENT, EXPERT_INTER / 2], U8),
    e("w2.weight_scale", &[LATENT, EXPERT_INTER / 32], U8),
    e("w3.weight_packed", &[EXPERT_INTER, LATENT / 2], U8),
    e("w3.weight_scale", &[EXPERT_INTER, LATENT / 32], U8),
];

/// The output head, computed in full every token.
pub const LM_HEAD: Entry = e("language_model.lm_head.weight", &[VOCAB, HIDDEN], Bf16);

/// Model-level tensors, always resident.
pub const MODEL_LEVEL: &[Entry] = &[
    e("embed_tokens.weight", &[VOCAB, HIDDEN], Bf16),
    e("norm.weight", &[HIDDEN], Bf16),
    e("output_attn_res_norm.weight", &[HIDDEN], Bf16),
    e("output_attn_res_proj.weight", &[1, HIDDEN], Bf16),
    LM_HEAD,
];

/// Bytes of one tensor.
pub fn entry_bytes(t: &Entry) -> u64 {
    t.shape.iter().product::<u64>() * t.dtype.size()
}

/// Bytes of a table of tensors.
pub fn table_bytes(table: &[Entry]) -> u64 {
    table.iter().map(entry_bytes).sum()
}

/// Spec §2.4: layer `layer` (zero-based) is MLA iff `layer + 1` is in `full_attn_layers`,
/// which for K3 holds every multiple of 4 up to 92, plus 93.
pub fn is_mla(layer: usize) -> bool {
    let one_based = layer + 1;
    one_based.is_multiple_of(4) || one_based == LAYERS
}

/// Spec §2.4: layers below `first_k_dense_replace` (1) use the dense FFN.
pub fn is_dense(layer: usize) -> bool {
    layer < FIRST_DENSE
}

/// The catalogue tables of layer `layer`'s trunk.
fn layer_tables(layer: usize) -> [&'static [Entry]; 3] {
    let mixer = if is_mla(layer) { MLA } else { KDA };
    let ffn = if is_dense(layer) { DENSE_FFN } else { MOE_TRUNK };
    [LAYER_VECTORS, mixer, ffn]
}

/// Bytes of layer `layer`'s trunk: everything but its routed experts.
pub fn layer_trunk_bytes(layer: usize) -> u64 {
    layer_tables(layer).iter().map(|t| table_bytes(t)).sum()
}

/// How layer `layer` streams through a slot smaller than itself: its largest matrix, and
/// its other tensors' buffers (as `engine::stream::footprint` measures them).
pub fn layer_pieces(layer: usize) -> LayerPieces {
    let tensors = || layer_tables(layer).into_iter().flatten();
    LayerPieces {
        largest_piece: tensors().filter(|t| is_piece_shape(t.shape)).map(entry_bytes).max().unwrap_or(0),
        eager_bytes: tensors().filter(|t| !is_piece_shape(t.shape)).map(|t| ring_slot_bytes_for(entry_bytes(t))).sum(),
    }
}

/// Bytes of one routed expert on disk (its six tensors, contiguous).
pub fn expert_bytes() -> u64 {
    table_bytes(EXPERT)
}

/// Layers with routed experts.
pub fn moe_layers() -> u64 {
    (0..LAYERS).filter(|&l| !is_dense(l)).count() as u64
}

/// The released checkpoint's footprint, as `engine::stream::footprint` would measure it
/// from the real shards' headers.
pub fn released_footprint() -> Footprint {
    let kda_layers = (0..LAYERS).filter(|&l| !is_mla(l)).count() as u64;
    let mla_layers = LAYERS as u64 - kda_layers;
    let mla = MlaCacheShape { kv_lora_rank: KV_LORA, qk_rope_head_dim: QK_ROPE };
    // The widest activation of one token inside the layers, as the engine's footprint takes it.
    let widest = [KDA_WIDTH, HIDDEN, MLA_HEADS * (QK_NOPE + QK_ROPE), DENSE_INTER, EXPERTS_PER_LAYER]
        .into_iter()
        .max()
        .unwrap_or(0);
    Footprint {
        layer_trunk_bytes: (0..LAYERS).map(layer_trunk_bytes).collect(),
        expert_bytes: expert_bytes(),
        n_experts_total: moe_layers() * EXPERTS_PER_LAYER,
        top_k: TOP_K,
        moe_layers: moe_layers(),
        resident_bytes: table_bytes(MODEL_LEVEL),
        head_bytes: entry_bytes(&LM_HEAD),
        embed_bytes: entry_bytes(&MODEL_LEVEL[0]),
        vocab_rows: VOCAB,
        state_bytes: recurrent_state_bytes(kda_layers, KDA_HEADS, KDA_HEAD_DIM, CONV_KERNEL),
        kv_bytes_per_position: kv_bytes_per_position(mla_layers, mla),
        scratch_bytes: scratch_bytes_for(widest, MLA_HEADS * (KV_LORA + QK_ROPE), VOCAB),
        layer_pieces: (0..LAYERS).map(layer_pieces).collect(),
    }
}

/// Bytes of `trunk.bin` for a footprint: every layer's run rounded up to 4096.
pub fn packed_trunk_bytes(fp: &Footprint) -> u64 {
    fp.layer_trunk_bytes.iter().map(|&b| align_4096(b)).sum()
}
