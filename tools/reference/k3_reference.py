"""Independent float64 NumPy reference of the Kimi K3 forward pass.

Written from /work/shared/docs/K3-MODEL-SPEC.md alone (sections 2, 3, 4, 6, 7, 13),
independently of the Rust engine and of any other implementation.  Every op is one
function named as in the spec, with the section it implements.

Everything is computed in float64: the checkpoint's stored values (F32, BF16 or
MXFP4) are widened/dequantised exactly and all arithmetic is f64.  The engine
computes in f32 with f64 accumulation, so it is compared against these outputs
with a tolerance (logits) or on arg-max (tokens).

Usage:
    m = K3Reference("fixtures/tiny-mxfp4")
    logits = m.forward(ids)                  # [T, vocab]
    taps = {}; m.forward(ids, taps=taps)     # per-layer taps, see forward()
    m.greedy(prompt_ids, 20)                 # full recompute every step

`wrong` (constructor argument) selects ONE deliberately wrong variant from the
spec's §4.9 checklist; it exists only for the sensitivity check in
make_goldens.py.  The reference itself always runs with wrong=None, and every
branch that tests `self.wrong` is marked "WRONG VARIANT".
"""
import glob
import json
import os

import numpy as np

from safetensors_io import read_safetensors

PREFIX = "language_model.model."
LM_HEAD = "language_model.lm_head.weight"

# Deliberately wrong variants (spec §4.9) understood by this module.
WRONG_VARIANTS = (
    "l2norm_mean",               # L2Norm with a mean instead of a sum
    "q_not_prescaled",           # KDA q not scaled by D^-1/2
    "mla_scale_nope",            # MLA score scale 1/sqrt(nope) instead of 1/sqrt(nope+rope)
    "mla_rope_dropped",          # MLA rope slots left out of the score (scale unchanged)
    "kda_read_pre_update",       # KDA output read from the state before this step's update
    "kda_gate_before_norm",      # KDA: RMSNorm(o * sigmoid(Wg x)) instead of RMSNorm(o) * sigmoid(.)
    "router_biased_weights",     # combine weights taken from the biased scores
    "no_renormalize",            # top-k weights not renormalised although moe_renormalize
    "spurious_renormalize",      # top-k weights renormalised although moe_renormalize is false
    "per_expert_norm",           # RMSNorm applied to each expert output instead of the aggregate
    "shared_expert_weighted",    # shared-expert output multiplied by the top-1 routing weight
    "situ_sigmoid_capped",       # SiTU sigmoid fed the capped gate beta1*tanh(g/beta1)
    "attnres_values_normalised", # AttnRes mixes the RMS-normalised sources, not the raw ones
    "no_model_attnres",          # model-level AttnRes missing (final norm sees prefix)
    "prefix_kept_at_boundary",   # prefix not cleared at a block boundary
    "mxfp4_reversed_nibbles",    # MXFP4 element 2j read from the HIGH nibble
    "conv_no_silu",              # ShortConv without the SiLU
    "v_normalised",              # KDA v L2-normalised like q and k
)


# =========================================================================== #
# Config (spec §2)
# =========================================================================== #
# (field, alias or None, kind, default-or-REQUIRED); kind in int/num/bool/intlist
REQUIRED = object()
CONFIG_FIELDS = [
    ("hidden_size", None, "int", REQUIRED),
    ("num_hidden_layers", None, "int", REQUIRED),
    ("vocab_size", None, "int", REQUIRED),
    ("rms_norm_eps", None, "num", REQUIRED),
    ("num_heads", "kda_num_heads", "int", REQUIRED),
    ("head_dim", "kda_head_dim", "int", REQUIRED),
    ("short_conv_kernel_size", None, "int", REQUIRED),
    ("gate_lower_bound", None, "num", REQUIRED),
    ("num_attention_heads", None, "int", REQUIRED),
    ("q_lora_rank", None, "int", REQUIRED),
    ("kv_lora_rank", None, "int", REQUIRED),
    ("qk_nope_head_dim", None, "int", REQUIRED),
    ("qk_rope_head_dim", None, "int", REQUIRED),
    ("v_head_dim", None, "int", REQUIRED),
    ("mla_use_output_gate", None, "bool", True),
    ("num_experts", None, "int", REQUIRED),
    ("num_experts_per_token", None, "int", REQUIRED),
    ("num_shared_experts", None, "int", REQUIRED),
    ("routed_expert_hidden_size", None, "int", REQUIRED),
    ("moe_intermediate_size", None, "int", REQUIRED),
    ("routed_scaling_factor", None, "num", REQUIRED),
    ("moe_renormalize", None, "bool", True),
    ("latent_moe_use_norm", None, "bool", True),
    ("first_k_dense_replace", None, "int", REQUIRED),
    ("intermediate_size", None, "int", REQUIRED),
    ("attn_res_block_size", None, "int", REQUIRED),
    ("activation_situ_beta", "situ_beta", "num", REQUIRED),
    ("activation_situ_linear_beta", "situ_linear_beta", "num", REQUIRED),
    ("full_attn_layers", None, "intlist", REQUIRED),
]

# KDA fields are looked up in linear_attn_config first (spec §2.1 recommendation),
# so a head_dim that might sit in text_config can never shadow the KDA one.
KDA_FIRST = {"num_heads", "head_dim", "short_conv_kernel_size", "gate_lower_bound",
             "full_attn_layers"}


def _type_ok(kind, v):
    if kind == "int":
        return isinstance(v, int) and not isinstance(v, bool)
    if kind == "num":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if kind == "bool":
        return isinstance(v, bool)
    if kind == "intlist":
        return isinstance(v, list) and len(v) > 0 and all(
            isinstance(e, int) and not isinstance(e, bool) for e in v)
    raise ValueError(kind)


def parse_config(raw):
    """Spec §2.1 lookup rule; returns a flat dict with the primary field names."""
    root = raw["config"] if isinstance(raw.get("config"), dict) else raw
    text = root.get("text_config") if isinstance(root.get("text_config"), dict) else {}
    lin = text.get("linear_attn_config")
    if not isinstance(lin, dict):
        lin = root.get("linear_attn_config") if isinstance(root.get("linear_attn_config"), dict) else {}
    cfg, problems = {}, []
    for name, alias, kind, default in CONFIG_FIELDS:
        order = [lin, text, root] if name in KDA_FIRST else [text, lin, root]
        found = None
        for obj in order:
            for key in (name, alias):
                if key is not None and key in obj:
                    found = (key, obj[key])
                    break
            if found:
                break
        if found is None:
            if default is REQUIRED:
                problems.append(f"missing {name}")
            else:
                cfg[name] = default
            continue
        if not _type_ok(kind, found[1]):
            problems.append(f"wrong type for {found[0]}: {found[1]!r}")
            continue
        cfg[name] = found[1]
    if problems:
        raise ValueError("config refused: " + "; ".join(problems))
    # §2.3 validation
    n = cfg["num_hidden_layers"]
    fal = cfg["full_attn_layers"]
    if n <= 0 or cfg["hidden_size"] <= 0 or cfg["vocab_size"] <= 0:
        raise ValueError("non-positive size")
    if len(fal) >= n or any(not (1 <= e <= n) for e in fal):
        raise ValueError("full_attn_layers must be one-based, inside 1..num_hidden_layers, "
                         "and leave at least one KDA layer")
    if cfg["num_experts_per_token"] > min(64, cfg["num_experts"]):
        raise ValueError("top-k too large")
    if cfg["attn_res_block_size"] <= 0 or cfg["short_conv_kernel_size"] < 1:
        raise ValueError("bad attn_res_block_size or short_conv_kernel_size")
    kda_layers = lin.get("kda_layers")
    if kda_layers is not None:
        if sorted(kda_layers) != [i for i in range(1, n + 1) if i not in fal]:
            raise ValueError("kda_layers is not the complement of full_attn_layers")
    if lin.get("use_full_rank_gate") is False:
        raise ValueError("use_full_rank_gate false is not supported")
    tie = text.get("tie_word_embeddings", root.get("tie_word_embeddings", False))
    if tie:
        raise ValueError("tie_word_embeddings true is not supported")
    return cfg


def is_mla_layer(cfg, layer):
    """Spec §2.4: MLA iff (layer_idx + 1) is in the ONE-BASED full_attn_layers."""
    return (layer + 1) in cfg["full_attn_layers"]


# =========================================================================== #
# Weights (spec §6.4, §7)
# =========================================================================== #
E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
                 -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0], dtype=np.float64)


def mxfp4_dequantize(packed, scale, reversed_nibbles=False):
    """Spec §7: exact MXFP4 -> float64.

    packed [rows, in/2] U8: byte j holds element 2j in its LOW nibble and element
    2j+1 in its HIGH nibble.  scale [rows, in/32] U8 (E8M0): value 2^(byte-127);
    byte 255 makes its 32-element group contribute 0.
    """
    rows, half = packed.shape
    lo = packed & 0x0F
    hi = packed >> 4
    if reversed_nibbles:  # WRONG VARIANT
        lo, hi = hi, lo
    codes = np.empty((rows, 2 * half), dtype=np.uint8)
    codes[:, 0::2] = lo
    codes[:, 1::2] = hi
    vals = E2M1[codes]
    s = scale.astype(np.int64)
    if s.shape != (rows, 2 * half // 32) or (2 * half) % 32:
        raise ValueError("MXFP4 scale/packed shape mismatch")
    mult = np.where(s == 255, 0.0, np.ldexp(1.0, s - 127))  # 2^-127 is exact in f64
    return vals * np.repeat(mult, 32, axis=1)


def load_checkpoint(folder, reversed_nibbles=False):
    """Read config.json and every *.safetensors shard; return (cfg, {name: f64 array}).

    MXFP4 expert pairs (`weight_packed`, `weight_scale`) are dequantised into a
    single float64 `...wN.weight`; unquantised experts are used as stored.
    """
    with open(os.path.join(folder, "config.json")) as f:
        cfg = parse_config(json.load(f))
    raw = {}
    for path in sorted(glob.glob(os.path.join(folder, "*.safetensors"))):
        for name, entry in read_safetensors(path).items():
            if name in raw:
                raise ValueError(f"duplicate tensor {name} in {path}")
            raw[name] = entry
    w = {}
    for name, (dtype, shape, arr) in raw.items():
        if name.endswith(".weight_scale"):
            continue
        if name.endswith(".weight_packed"):
            base = name[: -len("_packed")]
            sdt, _, sarr = raw[base + "_scale"]
            if dtype != "U8" or sdt != "U8":
                raise ValueError(f"{name}: MXFP4 pair must be U8")
            w[base] = mxfp4_dequantize(arr, sarr, reversed_nibbles)
        else:
            if dtype == "U8":
                raise ValueError(f"unexpected U8 tensor {name}")
            w[name] = arr
    return cfg, w


# =========================================================================== #
# Primitive ops (spec §3)
# =========================================================================== #
def sigmoid(z):
    """σ(z) = 1/(1+e^-z), evaluated without overflow."""
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(-np.abs(z))
    return np.where(z >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def silu(z):
    """SiLU(z) = z·σ(z)  (§3)."""
    return z * sigmoid(z)


def rms_norm(x, w, eps):
    """§3 RMSNorm over the last axis: y = w · (x / sqrt(mean(x²) + eps))."""
    r = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    return w * (x * r)


def l2_norm(x, wrong=None):
    """§3 L2Norm over the last axis: y = x / sqrt(Σ x² + 1e-6)  (sum, constant eps)."""
    if wrong == "l2norm_mean":  # WRONG VARIANT
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + 1e-6)
    return x / np.sqrt(np.sum(x * x, axis=-1, keepdims=True) + 1e-6)


def situ_glu(g, u, beta1, beta2, wrong=None):
    """§3 SiTU-GLU: β1·tanh(g/β1)·σ(g)  ×  β2·tanh(u/β2); σ sees the UNCAPPED g."""
    capped = beta1 * np.tanh(g / beta1)
    if wrong == "situ_sigmoid_capped":  # WRONG VARIANT
        a = capped * sigmoid(capped)
    else:
        a = capped * sigmoid(g)
    b = beta2 * np.tanh(u / beta2)
    return a * b


def linear(W, x):
    """§3 Linear: y[o] = Σ_i W[o][i] x[i], W stored [out, in]; x may be [T, in]."""
    return x @ W.T


def short_conv(x, weight, state=None, silu_after=True):
    """§3 ShortConv + SiLU, causal depthwise, over a sequence.

    x [T, C]; weight [C, 1, K]; state [C, K-1] (previous raw inputs, oldest first)
    or None (zeros at sequence start).  Tap K-1 multiplies the current input, tap j
    the input K-1-j steps back.  Returns (SiLU(pre) [T, C], new state [C, K-1]).
    """
    T, C = x.shape
    K = weight.shape[-1]
    w = weight.reshape(C, K)
    if state is None:
        state = np.zeros((C, K - 1))
    padded = np.concatenate([state.T, x], axis=0)          # [K-1+T, C]
    pre = np.zeros((T, C))
    for j in range(K):
        pre += w[:, j] * padded[j: j + T]
    new_state = padded[T:].T.copy()                         # last K-1 raw inputs
    return (silu(pre) if silu_after else pre), new_state


def attn_res(sources, norm_w, proj_w, eps, wrong=None):
    """§4.2 AttnRes over sources (list of [T, E] arrays), folded f = norm_w ⊙ proj_w.

    r_k = 1/sqrt(mean(s_k²)+eps); score_k = Σ (s_k·r_k)·f; p = softmax(score);
    out = Σ_k p_k · s_k with the RAW sources.
    """
    f = norm_w * proj_w.reshape(-1)
    S = np.stack(sources, axis=0)                           # [n, T, E]
    r = 1.0 / np.sqrt(np.mean(S * S, axis=-1, keepdims=True) + eps)
    score = np.sum((S * r) * f, axis=-1)                    # [n, T]
    score = score - score.max(axis=0, keepdims=True)
    p = np.exp(score)
    p = p / p.sum(axis=0, keepdims=True)
    values = S * r if wrong == "attnres_values_normalised" else S   # WRONG VARIANT
    return np.sum(p[:, :, None] * values, axis=0)


# =========================================================================== #
# Modules (spec §4)
# =========================================================================== #
MLA_FORMS = ("expanded", "absorbed")


class K3Reference:
    def __init__(self, folder, wrong=None, mla_form="expanded"):
        """mla_form: "expanded" (per-head k_nope and v from kv_b, spec §4.4 steps 3-5) or
        "absorbed" (scores and values in latent space: q̃_h = W_UK_hᵀ q_nope_h,
        o_h = W_UV_h Σ p·latent, the engine's form); equal in exact arithmetic."""
        if wrong is not None and wrong not in WRONG_VARIANTS:
            raise ValueError(f"unknown variant {wrong}")
        if mla_form not in MLA_FORMS:
            raise ValueError(f"unknown MLA form {mla_form}")
        self.wrong = wrong
        self.mla_form = mla_form
        self.cfg, self.w = load_checkpoint(
            folder, reversed_nibbles=(wrong == "mxfp4_reversed_nibbles"))
        c = self.cfg
        self.E = c["hidden_size"]
        self.n_layers = c["num_hidden_layers"]
        self.eps = c["rms_norm_eps"]
        self.beta1 = c["activation_situ_beta"]
        self.beta2 = c["activation_situ_linear_beta"]
        self._check_shapes()

    # ---- helpers --------------------------------------------------------- #
    def p(self, name):
        return self.w[PREFIX + name]

    def _check_shapes(self):
        c, E = self.cfg, self.E
        want = {"embed_tokens.weight": (c["vocab_size"], E), "norm.weight": (E,),
                "output_attn_res_norm.weight": (E,)}
        for k, s in want.items():
            if self.p(k).shape != s:
                raise ValueError(f"{k}: shape {self.p(k).shape} != {s}")
        if self.w[LM_HEAD].shape != (c["vocab_size"], E):
            raise ValueError("lm_head shape")
        if self.p("output_attn_res_proj.weight").shape not in ((1, E), (E,)):
            raise ValueError("output_attn_res_proj shape")

    def situ(self, g, u):
        return situ_glu(g, u, self.beta1, self.beta2, self.wrong)

    # ---- §4.3 KDA -------------------------------------------------------- #
    def kda(self, layer, x):
        """§4.3 Kimi Delta Attention over a sequence x [T, E] (fresh state)."""
        c = self.cfg
        H, D = c["num_heads"], c["head_dim"]
        T = x.shape[0]
        a = f"layers.{layer}.self_attn."
        # 1. projections
        q = linear(self.p(a + "q_proj.weight"), x)
        k = linear(self.p(a + "k_proj.weight"), x)
        v = linear(self.p(a + "v_proj.weight"), x)
        beta_raw = linear(self.p(a + "b_proj.weight"), x)                  # [T, H]
        z = linear(self.p(a + "f_b_proj.weight"), linear(self.p(a + "f_a_proj.weight"), x))
        # 2. ShortConv + SiLU, three separate weights/states
        act = self.wrong != "conv_no_silu"                                 # (WRONG VARIANT drops SiLU)
        q, _ = short_conv(q, self.p(a + "q_conv1d.weight"), silu_after=act)
        k, _ = short_conv(k, self.p(a + "k_conv1d.weight"), silu_after=act)
        v, _ = short_conv(v, self.p(a + "v_conv1d.weight"), silu_after=act)
        q, k, v = (t.reshape(T, H, D) for t in (q, k, v))
        # 3. L2Norm per head on q and k (v is not normalised)
        q = l2_norm(q, self.wrong)
        k = l2_norm(k, self.wrong)
        if self.wrong == "v_normalised":  # WRONG VARIANT
            v = l2_norm(v)
        # 4. β per head
        beta = sigmoid(beta_raw)                                           # [T, H]
        # 5. decay: A_log indexed by head (first H entries), dt_bias per channel
        A = self.p(a + "A_log").reshape(-1)[:H]
        u = np.exp(A)[None, :, None] * (z + self.p(a + "dt_bias")).reshape(T, H, D)
        g = c["gate_lower_bound"] * sigmoid(u)
        alpha = np.exp(g)                                                  # [T, H, D]
        # 6. scale q by D^-1/2 after the L2Norm
        if self.wrong != "q_not_prescaled":  # (WRONG VARIANT skips this)
            q = q * D ** -0.5
        # 7. recurrence, per head, tokens in order; S[h] is [D_k, D_v]
        o = kda_recurrence(q, k, v, alpha, beta, pre_update=(self.wrong == "kda_read_pre_update"))
        # 8./9. head-wise RMSNorm (shared o_norm [D]), then gate, then Wo
        gate = sigmoid(linear(self.p(a + "g_proj.weight"), x)).reshape(T, H, D)
        onw = self.p(a + "o_norm.weight")
        if self.wrong == "kda_gate_before_norm":  # WRONG VARIANT
            y = rms_norm(o * gate, onw, self.eps)
        else:
            y = rms_norm(o, onw, self.eps) * gate
        return linear(self.p(a + "o_proj.weight"), y.reshape(T, H * D))

    # ---- §4.4 gated MLA -------------------------------------------------- #
    def mla(self, layer, x):
        """§4.4 gated MLA (NoPE: nothing rotated) over a sequence x [T, E], causal."""
        c = self.cfg
        H = c["num_attention_heads"]
        nope, rope, vd = c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"]
        kvl = c["kv_lora_rank"]
        T = x.shape[0]
        a = f"layers.{layer}.self_attn."
        # 1. query through the normalised q latent
        qa = rms_norm(linear(self.p(a + "q_a_proj.weight"), x), self.p(a + "q_a_layernorm.weight"), self.eps)
        q = linear(self.p(a + "q_b_proj.weight"), qa).reshape(T, H, nope + rope)
        q_nope, q_rope = q[..., :nope], q[..., nope:]
        # 2. KV latent (normalised) and the shared, un-normalised, un-rotated k_rope
        ckv = linear(self.p(a + "kv_a_proj_with_mqa.weight"), x)           # [T, kvl+rope]
        latent = rms_norm(ckv[:, :kvl], self.p(a + "kv_a_layernorm.weight"), self.eps)
        k_rope = ckv[:, kvl:]                                              # [T, rope]
        if self.wrong == "mla_scale_nope":  # WRONG VARIANT
            scale = 1.0 / np.sqrt(nope)
        else:
            scale = 1.0 / np.sqrt(nope + rope)
        W_kvb = self.p(a + "kv_b_proj.weight").reshape(H, nope + vd, kvl)
        if self.mla_form == "absorbed":
            # 3'. absorb W_UK_h into the query; 4'. score against the latent itself
            q_lat = np.einsum("phd,hdl->phl", q_nope, W_kvb[:, :nope, :])
            score = np.einsum("phl,sl->hps", q_lat, latent)
        else:
            # 3. expand per head; 4. scores [H, Tq, Tk]
            kv = np.einsum("hdl,sl->shd", W_kvb, latent)
            k_nope, v = kv[..., :nope], kv[..., nope:]
            score = np.einsum("phd,shd->hps", q_nope, k_nope)
        if self.wrong != "mla_rope_dropped":  # (WRONG VARIANT skips the rope term)
            score = score + np.einsum("phd,sd->hps", q_rope, k_rope)
        score = score * scale
        mask = np.triu(np.ones((T, T), dtype=bool), k=1)                  # s > p masked
        score = np.where(mask[None], -np.inf, score)
        # 5. softmax over keys, weighted values
        score = score - score.max(axis=-1, keepdims=True)
        pr = np.exp(score)
        pr = pr / pr.sum(axis=-1, keepdims=True)
        if self.mla_form == "absorbed":
            # 5'. mix the latents, then W_UV_h per head
            mix = np.einsum("hps,sl->phl", pr, latent)
            o = np.einsum("phl,hvl->phv", mix, W_kvb[:, nope:, :]).reshape(T, H * vd)
        else:
            o = np.einsum("hps,shd->phd", pr, v).reshape(T, H * vd)
        # 6. gate (if present), then project; no norm
        if c["mla_use_output_gate"]:
            o = o * sigmoid(linear(self.p(a + "g_proj.weight"), x))
        return linear(self.p(a + "o_proj.weight"), o)

    # ---- §4.5 dense FFN -------------------------------------------------- #
    def dense_ffn(self, layer, x):
        """§4.5 y = W_down · SiTU-GLU(W_gate x, W_up x)."""
        a = f"layers.{layer}.mlp."
        h = self.situ(linear(self.p(a + "gate_proj.weight"), x), linear(self.p(a + "up_proj.weight"), x))
        return linear(self.p(a + "down_proj.weight"), h)

    # ---- §4.6 Stable LatentMoE ------------------------------------------- #
    def route(self, layer, xt):
        """§4.6 steps 1-3 for one token: returns (expert ids, combine weights, margin),
        margin = k-th minus (k+1)-th largest biased score (diagnostic only)."""
        c = self.cfg
        a = f"layers.{layer}.block_sparse_moe.gate."
        s = sigmoid(self.p(a + "weight") @ xt)                             # unbiased scores
        cb = s + self.p(a + "e_score_correction_bias")                     # biased: selection only
        ids = router_topk(cb, c["num_experts_per_token"])
        wts = (cb if self.wrong == "router_biased_weights" else s)[ids]    # WRONG VARIANT / correct
        renorm = c["moe_renormalize"]
        if self.wrong == "no_renormalize":        # WRONG VARIANT
            renorm = False
        if self.wrong == "spurious_renormalize":  # WRONG VARIANT
            renorm = True
        if renorm:
            wts = wts / (np.sum(wts) + 1e-20)
        srt = np.sort(cb)[::-1]
        k = c["num_experts_per_token"]
        margin = float(srt[k - 1] - srt[k]) if k < len(srt) else float("inf")
        return ids, wts * c["routed_scaling_factor"], margin

    def latent_moe(self, layer, x, route_log=None):
        """§4.6 Stable LatentMoE over x [T, E] (token by token)."""
        c = self.cfg
        a = f"layers.{layer}.block_sparse_moe."
        out = np.zeros_like(x)
        z_all = linear(self.p(a + "routed_expert_down_proj.weight"), x)   # 4. latent [T, L]
        norm_w = self.p(a + "routed_expert_norm.weight") if c["latent_moe_use_norm"] else None
        for t in range(x.shape[0]):
            ids, wts, margin = self.route(layer, x[t])
            if route_log is not None:
                route_log.append((layer, t, [int(i) for i in ids], [float(v) for v in wts], margin))
            acc = np.zeros(c["routed_expert_hidden_size"])
            for e, wj in zip(ids, wts):                                    # 5. selection order
                ex = f"{a}experts.{e}."
                h = self.situ(self.w[PREFIX + ex + "w1.weight"] @ z_all[t],
                              self.w[PREFIX + ex + "w3.weight"] @ z_all[t])
                ej = self.w[PREFIX + ex + "w2.weight"] @ h
                if self.wrong == "per_expert_norm" and norm_w is not None:  # WRONG VARIANT
                    ej = rms_norm(ej, norm_w, self.eps)
                acc = acc + wj * ej
            if norm_w is not None and self.wrong != "per_expert_norm":     # 6. aggregate norm
                acc = rms_norm(acc, norm_w, self.eps)
            out[t] = self.p(a + "routed_expert_up_proj.weight") @ acc      # 7. up-project
        # 8. shared experts on the full-width x, unweighted
        sh = a + "shared_experts."
        shared = linear(self.p(sh + "down_proj.weight"),
                        self.situ(linear(self.p(sh + "gate_proj.weight"), x),
                                  linear(self.p(sh + "up_proj.weight"), x)))
        if self.wrong == "shared_expert_weighted":  # WRONG VARIANT: × top-1 weight per token
            tw = np.array([self.route(layer, x[t])[1][0] for t in range(x.shape[0])])
            shared = shared * tw[:, None]
        return out + shared

    # ---- §4.2 decoder layer with Attention Residuals --------------------- #
    def layer(self, l, prefix, blocks, route_log=None):
        """§4.2 one decoder layer for all positions; returns (prefix, blocks, a, m)."""
        c = self.cfg
        L = f"layers.{l}."
        h = prefix
        if blocks:                                                         # skipped at layer 0
            h = attn_res(blocks + [prefix], self.p(L + "self_attention_res_norm.weight"),
                         self.p(L + "self_attention_res_proj.weight"), self.eps, self.wrong)
        if l % c["attn_res_block_size"] == 0:                              # block boundary
            blocks = blocks + [prefix]                                     # snapshot ...
            if self.wrong != "prefix_kept_at_boundary":                    # (WRONG VARIANT keeps it)
                prefix = None                                              # ... and clear
        x = rms_norm(h, self.p(L + "input_layernorm.weight"), self.eps)
        a = self.mla(l, x) if is_mla_layer(c, l) else self.kda(l, x)
        prefix = a if prefix is None else prefix + a
        h = attn_res(blocks + [prefix], self.p(L + "mlp_res_norm.weight"),
                     self.p(L + "mlp_res_proj.weight"), self.eps, self.wrong)
        x = rms_norm(h, self.p(L + "post_attention_layernorm.weight"), self.eps)
        if l < c["first_k_dense_replace"]:
            m = self.dense_ffn(l, x)
        else:
            m = self.latent_moe(l, x, route_log)
        prefix = prefix + m
        return prefix, blocks, a, m

    # ---- §4.1 + §4.7 full model ------------------------------------------ #
    def forward(self, ids, taps=None, route_log=None):
        """One teacher-forced pass over `ids`; returns logits [T, vocab] (float64).

        Causal: position t only sees positions <= t (KDA runs its recurrence in
        token order from a zero state, MLA is masked, everything else is
        per-token).  If `taps` is a dict it receives
            taps["attn_out"][ℓ]     [T, E]  the attention module output a
            taps["mlp_out"][ℓ]      [T, E]  the MLP / MoE output m
            taps["prefix_after"][ℓ] [T, E]  the prefix returned by layer ℓ
            taps["final_hidden"]    [T, E]  RMSNorm'd input to lm_head
        """
        ids = np.asarray(ids, dtype=np.int64)
        prefix = self.p("embed_tokens.weight")[ids]                       # §4.1, no scaling
        blocks = []
        if taps is not None:
            taps.update(attn_out=[], mlp_out=[], prefix_after=[])
        for l in range(self.n_layers):
            prefix, blocks, a, m = self.layer(l, prefix, blocks, route_log)
            if taps is not None:
                taps["attn_out"].append(a)
                taps["mlp_out"].append(m)
                taps["prefix_after"].append(prefix)
        # §4.7 model-level AttnRes, final norm, lm_head
        if self.wrong == "no_model_attnres":  # WRONG VARIANT
            h = prefix
        else:
            h = attn_res(blocks + [prefix], self.p("output_attn_res_norm.weight"),
                         self.p("output_attn_res_proj.weight"), self.eps, self.wrong)
        hn = rms_norm(h, self.p("norm.weight"), self.eps)
        if taps is not None:
            taps["final_hidden"] = hn
        return linear(self.w[LM_HEAD], hn)

    def greedy(self, prompt_ids, n):
        """Greedy generation by full recompute at every step (arg-max, lowest id on ties)."""
        ids = [int(i) for i in prompt_ids]
        out = []
        for _ in range(n):
            logits = self.forward(ids)[-1]
            nxt = int(np.argmax(logits))   # np.argmax returns the first (lowest) maximum
            out.append(nxt)
            ids.append(nxt)
        return out


def kda_recurrence(q, k, v, alpha, beta, state=None, pre_update=False):
    """§4.3 step 7, the naive sequential delta-rule recurrence.

    q, k, v, alpha: [T, H, D]; beta: [T, H]; state: [H, D_k, D_v] or None (zeros).
    Per head and token, in this order:
        S[i][j] <- alpha_i S[i][j]                  1. decay rows
        u_j     <- Σ_i k_i S[i][j]                  2. read with the decayed S
        S[i][j] <- S[i][j] + k_i β (v_j - u_j)      3. delta write
        o_j     <- Σ_i q_i S[i][j]                  4. read with the UPDATED S
    Returns (o [T, H, D_v]) or, via kda_recurrence_with_state, also the state.
    """
    return kda_recurrence_with_state(q, k, v, alpha, beta, state, pre_update)[0]


def kda_recurrence_with_state(q, k, v, alpha, beta, state=None, pre_update=False):
    T, H, D = q.shape
    S = np.zeros((H, D, v.shape[-1])) if state is None else state.copy()
    o = np.zeros((T, H, v.shape[-1]))
    for t in range(T):
        S_prev = S
        S = alpha[t][:, :, None] * S                                        # 1.
        u = np.einsum("hi,hij->hj", k[t], S)                                 # 2.
        S = S + (k[t] * beta[t][:, None])[:, :, None] * (v[t] - u)[:, None, :]  # 3.
        read = S_prev if pre_update else S     # WRONG VARIANT reads the pre-update state
        o[t] = np.einsum("hi,hij->hj", q[t], read)                          # 4.
    return o, S


def router_topk(c, k):
    """§4.6 step 2: k largest biased scores by repeated arg-max with strict '>'
    (lowest index wins ties); result in descending order."""
    taken = np.zeros(len(c), dtype=bool)
    ids = []
    for _ in range(k):
        best = -1
        for e in range(len(c)):
            if not taken[e] and (best < 0 or c[e] > c[best]):
                best = e
        taken[best] = True
        ids.append(best)
    return np.array(ids, dtype=np.int64)


if __name__ == "__main__":
    import sys
    m = K3Reference(sys.argv[1])
    ids = [int(s) for s in sys.argv[2].split(",")] if len(sys.argv) > 2 else [1, 2, 3]
    lg = m.forward(ids)
    print("argmax per position:", lg.argmax(axis=-1).tolist())
