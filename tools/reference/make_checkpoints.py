"""Generate the three tiny same-graph K3 checkpoints under fixtures/.

    python3 tools/reference/make_checkpoints.py [--out fixtures] [--only NAME]

Writes fixtures/tiny-mxfp4, fixtures/tiny-f32, fixtures/tiny-bf16-nonorm, each with
config.json, 14 shards model-000NN-of-000014.safetensors (one per decoder layer +
one for the model-level tensors), model.safetensors.index.json and README.md.
Output is reproducible byte for byte: every tensor is drawn from its own
numpy default_rng seeded with (checkpoint seed, crc32(tensor name)).

Graph and conventions follow /work/shared/docs/K3-MODEL-SPEC.md §2, §6.4, §7, §13.
"""
import argparse
import json
import os
import zlib

import numpy as np

from safetensors_io import encode, write_safetensors

PREFIX = "language_model.model."
LM_HEAD = "language_model.lm_head.weight"

# --------------------------------------------------------------------------- #
# Dimensions (spec §13, with the vocabulary enlarged to 768)
# --------------------------------------------------------------------------- #
COMMON = dict(
    hidden_size=128, num_hidden_layers=13, vocab_size=768, rms_norm_eps=1e-5,
    kda_num_heads=4, kda_head_dim=16, short_conv_kernel_size=4, gate_lower_bound=-5.0,
    num_attention_heads=4, q_lora_rank=64, kv_lora_rank=32, qk_nope_head_dim=24,
    qk_rope_head_dim=8, v_head_dim=16, num_experts=8, num_experts_per_token=2,
    num_shared_experts=2, routed_expert_hidden_size=64, intermediate_size=96,
    first_k_dense_replace=1, attn_res_block_size=3, full_attn_layers=[4, 8, 12, 13],
    situ_beta=4.0, situ_linear_beta=25.0,
)

CHECKPOINTS = {
    "tiny-mxfp4": dict(
        seed=31001, moe_intermediate_size=64, config_form="nested", storage="release",
        experts="mxfp4", a_log_len=8, attnres_proj_2d=True, pad_header=True,
        latent_moe_use_norm=True, moe_renormalize=True, routed_scaling_factor=1.0,
        mla_use_output_gate=True),
    "tiny-f32": dict(
        seed=31002, moe_intermediate_size=48, config_form="flat", storage="f32",
        experts="F32", a_log_len=4, attnres_proj_2d=False, pad_header=False,
        latent_moe_use_norm=True, moe_renormalize=True, routed_scaling_factor=1.0,
        mla_use_output_gate=True),
    "tiny-bf16-nonorm": dict(
        seed=31003, moe_intermediate_size=64, config_form="nested", storage="release",
        experts="BF16", a_log_len=8, attnres_proj_2d=True, pad_header=True,
        latent_moe_use_norm=False, moe_renormalize=False, routed_scaling_factor=2.5,
        mla_use_output_gate=True),
}

# Special MXFP4 scale bytes planted in tiny-mxfp4 (the engine must treat 255 as a
# zero group; 0 means 2^-127), all in expert SPECIAL_EXPERT of layer SPECIAL_LAYER:
# (matrix, row, group, byte)
SPECIAL_LAYER = 1
SPECIAL_EXPERT = 5   # layer 1 routes to it in the golden sequence (checked by make_goldens)
SPECIAL_SCALES = [("w1", 0, 0, 255), ("w3", 1, 1, 0)]

# Per-kind gains: matrices are N(0, 1/sqrt(fan_in)) * gain (see README).
GAINS = {
    "kda.q_proj": 1.0, "kda.k_proj": 1.0, "kda.v_proj": 1.0, "kda.g_proj": 1.5,
    "kda.b_proj": 1.0, "kda.f_a_proj": 1.0, "kda.f_b_proj": 1.0, "kda.o_proj": 1.0,
    "mla.q_a_proj": 1.0, "mla.q_b_proj": 2.0, "mla.kv_a_proj_with_mqa": 1.5,
    "mla.kv_b_proj": 1.5, "mla.g_proj": 1.5, "mla.o_proj": 3.0,
    "dense.gate_proj": 1.0, "dense.up_proj": 1.0, "dense.down_proj": 1.0,
    "moe.gate": 3.0, "moe.routed_expert_down_proj": 1.0, "moe.routed_expert_up_proj": 1.0,
    "moe.shared.gate_proj": 1.0, "moe.shared.up_proj": 1.0, "moe.shared.down_proj": 0.7,
    "moe.expert.w1": 1.5, "moe.expert.w3": 1.5, "moe.expert.w2": 1.0,
    "lm_head": 2.5, "attnres_proj": 0.1,
}
# Sensitivity tweak (see README): in the MoE layers listed in QUIET_EXPERT_LAYERS
# the expert w2 matrices are scaled by QUIET_W2, so the aggregate latent is small
# and the epsilon of the aggregate RMSNorm matters; otherwise that RMSNorm cancels
# the common factor of a missing top-k renormalisation and the bug is invisible.
QUIET_EXPERT_LAYERS = (2, 5, 9)
QUIET_W2 = 0.01

F32_KINDS = ("conv1d.weight", "A_log", "dt_bias", "o_norm.weight", "e_score_correction_bias")


def rng_for(seed, name):
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


# --------------------------------------------------------------------------- #
# MXFP4 quantisation (spec §7)
# --------------------------------------------------------------------------- #
E2M1_MAG = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


def mxfp4_quantize(w):
    """w [rows, cols] (cols % 32 == 0) -> (packed U8 [rows, cols/2], scale U8 [rows, cols/32]).

    Per row and 32-group: s = 127 + ceil(log2(max|w| / 6)) clamped to 0..254 (computed
    exactly with frexp); nibble = nearest E2M1 magnitude of |w|/2^(s-127) (ties to
    the smaller magnitude), sign in bit 3.  Element 2j -> low nibble of byte j.
    """
    rows, cols = w.shape
    assert cols % 32 == 0
    g = w.reshape(rows, cols // 32, 32)
    amax = np.abs(g).max(axis=-1) / 6.0
    m, e = np.frexp(amax)                         # amax = m * 2^e, m in [0.5, 1)
    ce = np.where(m == 0.5, e - 1, e)             # ceil(log2(amax)) exactly
    s = np.where(amax == 0, 127, np.clip(127 + ce, 0, 254)).astype(np.int64)
    scaled = g / np.ldexp(1.0, s - 127)[..., None]
    mag = np.argmin(np.abs(np.abs(scaled)[..., None] - E2M1_MAG), axis=-1)
    codes = (mag | np.where(scaled < 0, 8, 0)).astype(np.uint8).reshape(rows, cols)
    packed = (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8)
    return packed, s.astype(np.uint8)


# --------------------------------------------------------------------------- #
# Tensor catalogue (spec §6.4) with generation recipes
# --------------------------------------------------------------------------- #
def layer_tensors(cfg, spec, l):
    """List of (name without PREFIX, shape, recipe) for layer l, trunk only."""
    E = COMMON["hidden_size"]
    H, D, K = COMMON["kda_num_heads"], COMMON["kda_head_dim"], COMMON["short_conv_kernel_size"]
    P = H * D
    mh = COMMON["num_attention_heads"]
    ql, kvl = COMMON["q_lora_rank"], COMMON["kv_lora_rank"]
    nope, rope, vd = COMMON["qk_nope_head_dim"], COMMON["qk_rope_head_dim"], COMMON["v_head_dim"]
    N, L = COMMON["num_experts"], COMMON["routed_expert_hidden_size"]
    I = spec["moe_intermediate_size"]
    SI = I * COMMON["num_shared_experts"]
    F = COMMON["intermediate_size"]
    pre = f"layers.{l}."
    projshape = [1, E] if spec["attnres_proj_2d"] else [E]
    t = [
        (pre + "input_layernorm.weight", [E], ("norm",)),
        (pre + "post_attention_layernorm.weight", [E], ("norm",)),
        (pre + "self_attention_res_norm.weight", [E], ("norm",)),
        (pre + "self_attention_res_proj.weight", projshape, ("attnres_proj",)),
        (pre + "mlp_res_norm.weight", [E], ("norm",)),
        (pre + "mlp_res_proj.weight", projshape, ("attnres_proj",)),
    ]
    a = pre + "self_attn."
    if (l + 1) in COMMON["full_attn_layers"]:
        t += [
            (a + "q_a_proj.weight", [ql, E], ("mat", "mla.q_a_proj")),
            (a + "q_a_layernorm.weight", [ql], ("norm",)),
            (a + "q_b_proj.weight", [mh * (nope + rope), ql], ("mat", "mla.q_b_proj")),
            (a + "kv_a_proj_with_mqa.weight", [kvl + rope, E], ("mat", "mla.kv_a_proj_with_mqa")),
            (a + "kv_a_layernorm.weight", [kvl], ("norm",)),
            (a + "kv_b_proj.weight", [mh * (nope + vd), kvl], ("mat", "mla.kv_b_proj")),
            (a + "o_proj.weight", [E, mh * vd], ("mat", "mla.o_proj")),
        ]
        if spec["mla_use_output_gate"]:
            t.append((a + "g_proj.weight", [mh * vd, E], ("mat", "mla.g_proj")))
    else:
        t += [
            (a + "q_proj.weight", [P, E], ("mat", "kda.q_proj")),
            (a + "k_proj.weight", [P, E], ("mat", "kda.k_proj")),
            (a + "v_proj.weight", [P, E], ("mat", "kda.v_proj")),
            (a + "g_proj.weight", [P, E], ("mat", "kda.g_proj")),
            (a + "o_proj.weight", [E, P], ("mat", "kda.o_proj")),
            (a + "q_conv1d.weight", [P, 1, K], ("normal", 0.5)),
            (a + "k_conv1d.weight", [P, 1, K], ("normal", 0.5)),
            (a + "v_conv1d.weight", [P, 1, K], ("normal", 0.5)),
            (a + "f_a_proj.weight", [D, E], ("mat", "kda.f_a_proj")),
            (a + "f_b_proj.weight", [P, D], ("mat", "kda.f_b_proj")),
            (a + "b_proj.weight", [H, E], ("mat", "kda.b_proj")),
            (a + "A_log", [spec["a_log_len"]], ("a_log", H)),
            (a + "dt_bias", [P], ("normal", 1.0)),
            (a + "o_norm.weight", [D], ("norm",)),
        ]
    if l < COMMON["first_k_dense_replace"]:
        m = pre + "mlp."
        t += [
            (m + "gate_proj.weight", [F, E], ("mat", "dense.gate_proj")),
            (m + "up_proj.weight", [F, E], ("mat", "dense.up_proj")),
            (m + "down_proj.weight", [E, F], ("mat", "dense.down_proj")),
        ]
    else:
        m = pre + "block_sparse_moe."
        t += [
            (m + "gate.weight", [N, E], ("mat", "moe.gate")),
            (m + "gate.e_score_correction_bias", [N], ("normal", 0.3)),
            (m + "routed_expert_down_proj.weight", [L, E], ("mat", "moe.routed_expert_down_proj")),
            (m + "routed_expert_up_proj.weight", [E, L], ("mat", "moe.routed_expert_up_proj")),
            (m + "routed_expert_norm.weight", [L], ("norm",)),
            (m + "shared_experts.gate_proj.weight", [SI, E], ("mat", "moe.shared.gate_proj")),
            (m + "shared_experts.up_proj.weight", [SI, E], ("mat", "moe.shared.up_proj")),
            (m + "shared_experts.down_proj.weight", [E, SI], ("mat", "moe.shared.down_proj")),
        ]
    return t


def expert_tensors(spec, l):
    """Logical expert matrices of MoE layer l: (name without PREFIX, shape, recipe)."""
    if l < COMMON["first_k_dense_replace"]:
        return []
    L, I = COMMON["routed_expert_hidden_size"], spec["moe_intermediate_size"]
    out = []
    for e in range(COMMON["num_experts"]):
        b = f"layers.{l}.block_sparse_moe.experts.{e}."
        quiet = spec["latent_moe_use_norm"] and l in QUIET_EXPERT_LAYERS
        w2gain = QUIET_W2 if quiet else 1.0
        out += [(b + "w1.weight", [I, L], ("mat", "moe.expert.w1")),
                (b + "w2.weight", [L, I], ("mat", "moe.expert.w2", w2gain)),
                (b + "w3.weight", [I, L], ("mat", "moe.expert.w3"))]
    return out


def model_tensors(spec):
    E, V = COMMON["hidden_size"], COMMON["vocab_size"]
    projshape = [1, E] if spec["attnres_proj_2d"] else [E]
    return [
        ("embed_tokens.weight", [V, E], ("normal", 1.0)),
        ("norm.weight", [E], ("norm",)),
        ("output_attn_res_norm.weight", [E], ("norm",)),
        ("output_attn_res_proj.weight", projshape, ("attnres_proj",)),
        ("@lm_head", [V, E], ("mat", "lm_head")),
    ]


def generate(seed, name, shape, recipe):
    """Draw one tensor in float64 according to its recipe."""
    rng = rng_for(seed, name)
    kind = recipe[0]
    if kind == "norm":                      # gains away from 1 (spec end of §13)
        return 1.0 + 0.5 * rng.standard_normal(shape)
    if kind == "normal":
        return recipe[1] * rng.standard_normal(shape)
    if kind == "attnres_proj":
        return GAINS["attnres_proj"] * rng.standard_normal(shape)
    if kind == "a_log":                     # first H entries N(0, 0.5), padding exactly 0
        v = np.zeros(shape)
        v[: recipe[1]] = 0.5 * rng.standard_normal(recipe[1])
        return v
    if kind == "mat":
        extra = recipe[2] if len(recipe) > 2 else 1.0
        return rng.standard_normal(shape) / np.sqrt(shape[-1]) * GAINS[recipe[1]] * extra
    raise ValueError(kind)


def storage_dtype(spec, name):
    if spec["storage"] == "f32":
        return "F32"
    return "F32" if any(name.endswith(k) for k in F32_KINDS) else "BF16"


# --------------------------------------------------------------------------- #
# config.json
# --------------------------------------------------------------------------- #
def make_config(spec):
    c = COMMON
    n = c["num_hidden_layers"]
    fal = list(c["full_attn_layers"])
    moe = dict(
        num_experts=c["num_experts"], num_experts_per_token=c["num_experts_per_token"],
        num_shared_experts=c["num_shared_experts"],
        routed_expert_hidden_size=c["routed_expert_hidden_size"],
        moe_intermediate_size=spec["moe_intermediate_size"],
        routed_scaling_factor=float(spec["routed_scaling_factor"]),
        moe_renormalize=spec["moe_renormalize"], latent_moe_use_norm=spec["latent_moe_use_norm"],
        first_k_dense_replace=c["first_k_dense_replace"], intermediate_size=c["intermediate_size"],
    )
    base = dict(
        hidden_size=c["hidden_size"], num_hidden_layers=n, vocab_size=c["vocab_size"],
        rms_norm_eps=c["rms_norm_eps"], num_attention_heads=c["num_attention_heads"],
        q_lora_rank=c["q_lora_rank"], kv_lora_rank=c["kv_lora_rank"],
        qk_nope_head_dim=c["qk_nope_head_dim"], qk_rope_head_dim=c["qk_rope_head_dim"],
        v_head_dim=c["v_head_dim"], mla_use_output_gate=spec["mla_use_output_gate"],
        **moe, attn_res_block_size=c["attn_res_block_size"],
    )
    if spec["config_form"] == "flat":
        return dict(
            model_type="kimi_k3", **base,
            kda_num_heads=c["kda_num_heads"], kda_head_dim=c["kda_head_dim"],
            short_conv_kernel_size=c["short_conv_kernel_size"],
            gate_lower_bound=c["gate_lower_bound"],
            situ_beta=c["situ_beta"], situ_linear_beta=c["situ_linear_beta"],
            full_attn_layers=fal, tie_word_embeddings=False,
        )
    text = dict(
        model_type="kimi_k3_text", architectures=["KimiK3ForCausalLM"], **base,
        activation_situ_beta=c["situ_beta"], activation_situ_linear_beta=c["situ_linear_beta"],
        hidden_act="situ", num_nextn_predict_layers=0, tie_word_embeddings=False,
        torch_dtype="bfloat16",
        linear_attn_config=dict(
            num_heads=c["kda_num_heads"], head_dim=c["kda_head_dim"],
            short_conv_kernel_size=c["short_conv_kernel_size"],
            gate_lower_bound=c["gate_lower_bound"], use_full_rank_gate=True,
            full_attn_layers=fal, kda_layers=[i for i in range(1, n + 1) if i not in fal],
        ),
    )
    cfg = dict(architectures=["KimiK3ForConditionalGeneration"], model_type="kimi_k3",
               text_config=text, tie_word_embeddings=False, torch_dtype="bfloat16")
    if spec["experts"] == "mxfp4":
        cfg["quantization_config"] = dict(
            quant_method="mxfp4", format="mxfp4", group_size=32, weight_dtype="e2m1",
            scale_dtype="e8m0", modules=["experts"])
    return cfg


# --------------------------------------------------------------------------- #
# Writing
# --------------------------------------------------------------------------- #
def build_checkpoint(name, spec, out_root):
    out = os.path.join(out_root, name)
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        if f.endswith(".safetensors"):
            os.remove(os.path.join(out, f))
    seed = spec["seed"]
    n = COMMON["num_hidden_layers"]
    nshards = n + 1
    weight_map, total = {}, 0
    specials = []
    shard_info = []

    def shard_name(i):
        return f"model-{i:05d}-of-{nshards:06d}.safetensors"

    for l in range(n + 1):
        if l < n:
            trunk = [(PREFIX + nm, shp, rec) for nm, shp, rec in layer_tensors(None, spec, l)]
            experts = [(PREFIX + nm, shp, rec) for nm, shp, rec in expert_tensors(spec, l)]
        else:
            trunk = [((LM_HEAD if nm == "@lm_head" else PREFIX + nm), shp, rec)
                     for nm, shp, rec in model_tensors(spec)]
            experts = []
        entries = []
        # trunk: F32 group then BF16 group, each sorted by name
        trunk_enc = []
        for full, shp, rec in trunk:
            dt = storage_dtype(spec, full)
            trunk_enc.append((full, dt, shp, encode(dt, generate(seed, full, shp, rec))))
        for grp in ("F32", "BF16"):
            entries += sorted([e for e in trunk_enc if e[1] == grp], key=lambda e: e[0])
        # routed experts sorted by name
        exp_enc = []
        for full, shp, rec in experts:
            w = generate(seed, full, shp, rec)
            if spec["experts"] == "mxfp4":
                packed, scale = mxfp4_quantize(w)
                base = full[: -len(".weight")]
                for (mat, row, grp, byte) in SPECIAL_SCALES:
                    if l == SPECIAL_LAYER and base.endswith(f"experts.{SPECIAL_EXPERT}.{mat}"):
                        scale[row, grp] = byte
                        specials.append(dict(tensor=base + ".weight_scale", row=row, group=grp,
                                             byte=byte))
                exp_enc.append((base + ".weight_packed", "U8", list(packed.shape), encode("U8", packed)))
                exp_enc.append((base + ".weight_scale", "U8", list(scale.shape), encode("U8", scale)))
            else:
                exp_enc.append((full, spec["experts"], shp, encode(spec["experts"], w)))
        entries += sorted(exp_enc, key=lambda e: e[0])
        fname = shard_name(l + 1)
        hlen, nbytes = write_safetensors(os.path.join(out, fname), entries,
                                         pad_header_to_8=spec["pad_header"])
        shard_info.append((fname, 8 + hlen, nbytes, len(entries)))
        total += nbytes
        for e in entries:
            weight_map[e[0]] = fname

    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total},
                   "weight_map": dict(sorted(weight_map.items()))}, f, indent=1)
        f.write("\n")
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(make_config(spec), f, indent=2)
        f.write("\n")
    write_readme(out, name, spec, shard_info, total, specials)
    return shard_info, specials


def write_readme(out, name, spec, shard_info, total, specials):
    odd = [s[0] for s in shard_info if s[1] % 2 == 1]
    lines = [
        f"# {name}",
        "",
        "Tiny synthetic Kimi K3 checkpoint with the released tensor graph "
        "(`/work/shared/docs/K3-MODEL-SPEC.md` §6.4, §13), generated by "
        "`tools/reference/make_checkpoints.py`; golden outputs in `golden/` come from "
        "`tools/reference/make_goldens.py` (float64 NumPy reference "
        "`tools/reference/k3_reference.py`).",
        "",
        "## What is special here",
        "",
        f"* config: {spec['config_form']} form; moe_intermediate_size "
        f"{spec['moe_intermediate_size']}; latent_moe_use_norm {str(spec['latent_moe_use_norm']).lower()}; "
        f"moe_renormalize {str(spec['moe_renormalize']).lower()}; routed_scaling_factor "
        f"{spec['routed_scaling_factor']}; mla_use_output_gate {str(spec['mla_use_output_gate']).lower()}.",
    ]
    if spec["storage"] == "f32":
        lines.append("* every tensor F32 (reference-model storage); routed experts unquantised "
                     "`experts.E.w{1,2,3}.weight` F32.")
    else:
        lines.append("* release dtypes: big matrices and norm/AttnRes vectors BF16 (round-to-nearest-even "
                     "from the f64 draw); conv weights, `A_log`, `dt_bias`, `o_norm.weight`, "
                     "`e_score_correction_bias` F32.")
        if spec["experts"] == "mxfp4":
            lines.append("* routed experts MXFP4 (`weight_packed` U8 [rows, in/2], `weight_scale` U8 "
                         "[rows, in/32]); quantised per row and 32-group with scale "
                         "`127 + ceil(log2(max|w|/6))` and nearest-E2M1 nibbles.")
        else:
            lines.append("* routed experts unquantised `experts.E.w{1,2,3}.weight` BF16.")
    lines.append(f"* `A_log` shape [{spec['a_log_len']}] (first 4 = heads"
                 + (", padding exactly 0" if spec["a_log_len"] > 4 else "") + "); AttnRes projections "
                 + ("[1, 128]" if spec["attnres_proj_2d"] else "[128] (1-D)") + ".")
    lines.append("* safetensors headers " + ("padded to 8 bytes." if spec["pad_header"] else
                 "NOT padded; data sections start at odd offsets in: " + (", ".join(odd) or "none") + "."))
    for s in specials:
        lines.append(f"* planted MXFP4 scale byte {s['byte']} in `{s['tensor']}` row {s['row']} "
                     f"group {s['group']}" + (" (255 = this group contributes 0)" if s['byte'] == 255
                                               else " (0 = 2^-127)") + ".")
    lines += [
        f"* 14 shards: `model-00001-of-000014.safetensors` .. `model-00013-of-000014` = decoder "
        "layers 0..12 (trunk tensors: F32 group then BF16 group, each sorted by name; then the "
        "routed-expert tensors sorted by name), `model-00014-of-000014` = embed_tokens, "
        f"lm_head, norm, output_attn_res_norm, output_attn_res_proj. Data bytes total {total}. "
        "`model.safetensors.index.json` maps every tensor to its shard.",
        "",
        "## Goldens (`golden/`, written by make_goldens.py)",
        "",
        "* `golden.json`: prompt_ids (12), full_ids (32 = prompt + 20 greedy), greedy_ids, tf_argmax "
        "(arg-max of the teacher-forced logits at all 32 positions), min top-1/top-2 gap over "
        "positions 0..30, the prompt seed, per-layer routing, a noise-floor estimate.",
        "* `tf_logits.f64`: [32][768] float64 LE, teacher-forced logits over full_ids.",
        "* `taps.f64`: [13 layers][3: attn_out, mlp_out, prefix_after][32 positions][128] float64 LE.",
        "* `final_hidden.f64`: [32][128] float64 LE, the RMSNorm'd input of lm_head.",
        "* `sensitivity.json`: how much each deliberately wrong variant (spec §4.9) moves the outputs.",
        "",
        "## Weights",
        "",
        f"Seed {spec['seed']}: each tensor is drawn from `numpy.random.default_rng([{spec['seed']}, "
        "crc32(full tensor name)])` in float64, then stored (rounded) in its dtype; the reference "
        "reads the stored values back. Norm gains (all kinds) 1 + 0.5·N(0,1); matrices "
        "N(0,1)/sqrt(fan_in)·gain (per-kind gains in `GAINS` in the generator); embeddings N(0,1); "
        f"AttnRes projections {GAINS['attnres_proj']}·N(0,1); A_log N(0,0.5); dt_bias N(0,1); "
        "conv weights N(0,0.5); router bias N(0,0.3) (with router gain 3 the bias changes about a "
        "third of the top-2 selections while nearly all 8 experts of a layer get used).",
        (f"Sensitivity tweak: expert `w2` × {QUIET_W2} in MoE layers {list(QUIET_EXPERT_LAYERS)}, so "
         "the routed aggregate is small, the epsilon of its RMSNorm matters and a missing top-k "
         "renormalisation shows." if spec["latent_moe_use_norm"] else
         "No quiet-expert tweak (there is no aggregate RMSNorm to hide a wrong weighting)."),
        "",
        "## Regenerate",
        "",
        "```",
        "pip install numpy",
        f"python3 tools/reference/make_checkpoints.py --only {name}",
        f"python3 tools/reference/make_goldens.py --only {name}",
        "```",
        "",
    ]
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write("\n".join(lines))


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.join(here, "..", "..", "fixtures"))
    ap.add_argument("--only", default=None)
    args = ap.parse_args()
    for name, spec in CHECKPOINTS.items():
        if args.only and name != args.only:
            continue
        info, specials = build_checkpoint(name, spec, os.path.abspath(args.out))
        print(f"{name}: {len(info)} shards, data starts " +
              ",".join(str(s[1]) for s in info) + (f"; specials {specials}" if specials else ""))


if __name__ == "__main__":
    main()
