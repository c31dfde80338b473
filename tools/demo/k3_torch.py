"""The Kimi K3 graph in PyTorch, batched and differentiable, for training the demo model.

Written from /work/shared/docs/K3-MODEL-SPEC.md §3–§4 (the same sections the float64
reference `tools/reference/k3_reference.py` implements op by op); `check.py` proves the
two compute the same function on the fixtures' weights. Parameters carry the released
tensor names (without the `language_model.model.` prefix; `lm_head.weight` for the head),
so exporting is writing `named_tensors()` in the released layout. Routed experts of a
layer are one [experts, out, in] parameter per matrix (w1, w2, w3), split per expert on
export.

Training differs from inference only where the spec leaves no choice to make:
* KDA's recurrence runs chunk by chunk (`kda_chunked`, the same function as the plain
  token-by-token `kda_recurrence`), routed experts run per expert over the tokens that
  chose it, summed in another order than the engine's selection order;
* `e_score_correction_bias` is a buffer moved by the auxiliary-loss-free rule (a fixed
  step towards the experts that got fewer tokens), never by the gradient;
* `mxfp4=True` fake-quantises the routed experts with the released MXFP4 rule (§7, the
  quantiser of `make_checkpoints.py`) and a straight-through gradient.
"""
import math

import torch
import torch.nn.functional as F
from torch import nn

E2M1 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
E2M1_MIDPOINTS = (E2M1[1:] + E2M1[:-1]) / 2


def rms_norm(x, w, eps):
    return w * (x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps))


def l2_norm(x):
    return x * torch.rsqrt((x * x).sum(-1, keepdim=True) + 1e-6)


def situ_glu(g, u, beta1, beta2):
    """SiTU-GLU: β1·tanh(g/β1)·σ(g) × β2·tanh(u/β2); σ sees the uncapped g."""
    return beta1 * torch.tanh(g / beta1) * torch.sigmoid(g) * (beta2 * torch.tanh(u / beta2))


def mxfp4_round(w):
    """The stored MXFP4 value of every element of w [..., in] (in % 32 == 0): per 32-group
    scale 2^ceil(log2(max|w|/6)) (exponent clamped to -127..127, a zero group keeps 2^0),
    nibble the nearest E2M1 magnitude, ties to the smaller."""
    shape = w.shape
    g = w.reshape(*shape[:-1], shape[-1] // 32, 32)
    amax = g.abs().amax(-1, keepdim=True) / 6.0
    m, e = torch.frexp(amax)
    ce = torch.where(m == 0.5, e - 1, e).clamp(-127, 127)
    ce = torch.where(amax == 0, torch.zeros_like(ce), ce)
    scale = torch.ldexp(torch.ones_like(amax), ce)
    scaled = g / scale
    idx = torch.bucketize(scaled.abs(), E2M1_MIDPOINTS.to(w.dtype), right=False)
    q = E2M1.to(w.dtype)[idx] * torch.sign(scaled) * scale
    return q.reshape(shape)


def fake_mxfp4(w):
    return w + (mxfp4_round(w.detach()) - w).detach()


def attn_res(sources, norm_w, proj_w, eps):
    """§4.2 AttnRes: softmax over sources of (RMS-normalised source · norm_w ⊙ proj_w),
    mixing the raw sources."""
    f = norm_w * proj_w.reshape(-1)
    s = torch.stack(sources, 0)
    r = torch.rsqrt((s * s).mean(-1, keepdim=True) + eps)
    p = torch.softmax(((s * r) * f).sum(-1), dim=0)
    return (p.unsqueeze(-1) * s).sum(0)


def causal_conv(x, weight):
    """§3 ShortConv (then SiLU): x [B, T, C], weight [C, 1, K], zero history."""
    k = weight.shape[-1]
    y = F.conv1d(F.pad(x.transpose(1, 2), (k - 1, 0)), weight, groups=x.shape[-1])
    return F.silu(y.transpose(1, 2))


def kda_chunked(q, k, v, log_alpha, beta, chunk=16):
    """§4.3 step 7 over [B, T, H, D] from a zero state, computed chunk by chunk: the same
    function as `kda_recurrence` (float64 agreement ~1e-13, `check.py --kda`), with the
    work inside a chunk done as small matrix products.

    Within a chunk, with Γ_t the product of the decays up to t, the state before step t's
    write is Γ_t S0 + Σ_{s<t} (Γ_t/Γ_s) k_s w_sᵀ, where w_s = β_s (v_s − that state's read
    at k_s). So the writes solve one unit lower-triangular system, (I + M) W = β (V − (Γ⊙K) S0)
    with M[t, s] = β_t (Γ_t⊙k_t)·(k_s/Γ_s) for s < t; the outputs are (Γ⊙Q) S0 + P W with
    P[t, s] = (Γ_t⊙q_t)·(k_s/Γ_s) for s ≤ t; and the next chunk starts from
    Γ_C S0 + (K/Γ · Γ_C)ᵀ W. A chunk of 16 keeps Γ ≥ e^-80 (decays ≥ e^-5): finite in f32.
    """
    b, t_len, h, d = q.shape
    pad = (-t_len) % chunk
    if pad:
        q, k, v, log_alpha = (F.pad(x, (0, 0, 0, 0, 0, pad)) for x in (q, k, v, log_alpha))
        beta = F.pad(beta, (0, 0, 0, pad))
    n = (t_len + pad) // chunk
    # [B, H, n, C, D]
    q, k, v, log_alpha = (x.reshape(b, n, chunk, h, x.shape[-1]).permute(0, 3, 1, 2, 4) for x in (q, k, v, log_alpha))
    beta = beta.reshape(b, n, chunk, h).permute(0, 3, 1, 2).unsqueeze(-1)
    log_gamma = log_alpha.cumsum(-2)
    gamma = torch.exp(log_gamma)
    k_dec, q_dec, k_inv = k * gamma, q * gamma, k * torch.exp(-log_gamma)
    strict = torch.ones(chunk, chunk, dtype=torch.bool).tril(-1)
    m = (beta * (k_dec @ k_inv.transpose(-1, -2))).masked_fill(~strict, 0.0)
    eye = torch.eye(chunk, dtype=q.dtype)
    solve = lambda r: torch.linalg.solve_triangular(eye + m, r, upper=False, unitriangular=True)  # noqa: E731
    u, wk = solve(beta * v), solve(beta * k_dec)
    p = (q_dec @ k_inv.transpose(-1, -2)).masked_fill(~(strict | torch.eye(chunk, dtype=torch.bool)), 0.0)
    gamma_end = gamma[..., -1:, :]
    k_carry = (k_inv * gamma_end).transpose(-1, -2)
    s = q.new_zeros(b, h, d, v.shape[-1])
    out = []
    for c in range(n):
        w = u[:, :, c] - wk[:, :, c] @ s
        out.append(q_dec[:, :, c] @ s + p[:, :, c] @ w)
        s = gamma_end[:, :, c].transpose(-1, -2) * s + k_carry[:, :, c] @ w
    o = torch.stack(out, 2).permute(0, 2, 3, 1, 4).reshape(b, n * chunk, h, v.shape[-1])
    return o[:, :t_len]


def kda_recurrence(q, k, v, alpha, beta):
    """§4.3 step 7 over [B, T, H, D] from a zero state: decay rows, read with the decayed
    state, delta write, read with the updated state (the plain twin of `kda_chunked`)."""
    b, t_len, h, d = q.shape
    s = q.new_zeros(b, h, d, v.shape[-1])
    out = []
    for t in range(t_len):
        s = alpha[:, t].unsqueeze(-1) * s
        u = torch.einsum("bhi,bhij->bhj", k[:, t], s)
        s = s + (k[:, t] * beta[:, t].unsqueeze(-1)).unsqueeze(-1) * (v[:, t] - u).unsqueeze(-2)
        out.append(torch.einsum("bhi,bhij->bhj", q[:, t], s))
    return torch.stack(out, 1)


class K3(nn.Module):
    def __init__(self, cfg):
        """cfg: the flat field dict of `k3_reference.parse_config`."""
        super().__init__()
        self.cfg = cfg
        self.names = []
        self.eps = cfg["rms_norm_eps"]
        self.beta1 = cfg["activation_situ_beta"]
        self.beta2 = cfg["activation_situ_linear_beta"]
        self.mxfp4 = False
        for name, shape, kind in tensor_catalogue(cfg):
            t = torch.zeros(shape)
            if kind == "bias":
                self.register_buffer(_key(name), t)
            else:
                self.register_parameter(_key(name), nn.Parameter(t))
            self.names.append(name)

    def w(self, name):
        return getattr(self, _key(name))

    def named_tensors(self):
        return [(n, self.w(n)) for n in self.names]

    def situ(self, g, u):
        return situ_glu(g, u, self.beta1, self.beta2)

    def kda(self, a, x):
        c = self.cfg
        h, d = c["num_heads"], c["head_dim"]
        b, t, _ = x.shape
        lin = lambda n, y: y @ self.w(a + n).T  # noqa: E731
        q = causal_conv(lin("q_proj.weight", x), self.w(a + "q_conv1d.weight"))
        k = causal_conv(lin("k_proj.weight", x), self.w(a + "k_conv1d.weight"))
        v = causal_conv(lin("v_proj.weight", x), self.w(a + "v_conv1d.weight"))
        q, k, v = (y.reshape(b, t, h, d) for y in (q, k, v))
        q, k = l2_norm(q) * d ** -0.5, l2_norm(k)
        beta = torch.sigmoid(lin("b_proj.weight", x))
        z = lin("f_b_proj.weight", lin("f_a_proj.weight", x)) + self.w(a + "dt_bias")
        decay = torch.exp(self.w(a + "A_log").reshape(-1)[:h]).reshape(1, 1, h, 1)
        log_alpha = c["gate_lower_bound"] * torch.sigmoid(decay * z.reshape(b, t, h, d))
        o = kda_chunked(q, k, v, log_alpha, beta)
        gate = torch.sigmoid(lin("g_proj.weight", x)).reshape(b, t, h, d)
        y = rms_norm(o, self.w(a + "o_norm.weight"), self.eps) * gate
        return lin("o_proj.weight", y.reshape(b, t, h * d))

    def mla(self, a, x):
        c = self.cfg
        h = c["num_attention_heads"]
        nope, rope, vd, kvl = c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"], c["kv_lora_rank"]
        b, t, _ = x.shape
        lin = lambda n, y: y @ self.w(a + n).T  # noqa: E731
        qa = rms_norm(lin("q_a_proj.weight", x), self.w(a + "q_a_layernorm.weight"), self.eps)
        q = lin("q_b_proj.weight", qa).reshape(b, t, h, nope + rope)
        ckv = lin("kv_a_proj_with_mqa.weight", x)
        latent = rms_norm(ckv[..., :kvl], self.w(a + "kv_a_layernorm.weight"), self.eps)
        k_rope = ckv[..., kvl:].unsqueeze(2).expand(b, t, h, rope)
        kv = lin("kv_b_proj.weight", latent).reshape(b, t, h, nope + vd)
        k = torch.cat([kv[..., :nope], k_rope], -1)
        o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                           kv[..., nope:].transpose(1, 2), is_causal=True,
                                           scale=1.0 / math.sqrt(nope + rope))
        o = o.transpose(1, 2).reshape(b, t, h * vd)
        if c["mla_use_output_gate"]:
            o = o * torch.sigmoid(lin("g_proj.weight", x))
        return lin("o_proj.weight", o)

    def dense_ffn(self, m, x):
        h = self.situ(x @ self.w(m + "gate_proj.weight").T, x @ self.w(m + "up_proj.weight").T)
        return h @ self.w(m + "down_proj.weight").T

    def latent_moe(self, m, x, loads):
        c = self.cfg
        k = c["num_experts_per_token"]
        s = torch.sigmoid(x @ self.w(m + "gate.weight").T)
        chosen = torch.topk(s.detach() + self.w(m + "gate.e_score_correction_bias"), k, dim=-1).indices
        wts = s.gather(-1, chosen)
        if c["moe_renormalize"]:
            wts = wts / (wts.sum(-1, keepdim=True) + 1e-20)
        if loads is not None:
            loads.append(torch.bincount(chosen.reshape(-1), minlength=s.shape[-1]))
        z = (x @ self.w(m + "routed_expert_down_proj.weight").T).reshape(-1, c["routed_expert_hidden_size"])
        w1, w2, w3 = (self.w(m + f"experts.{n}") for n in ("w1", "w2", "w3"))
        if self.mxfp4:
            w1, w2, w3 = fake_mxfp4(w1), fake_mxfp4(w2), fake_mxfp4(w3)
        flat_chosen, flat_wts = chosen.reshape(-1, k), wts.reshape(-1, k) * c["routed_scaling_factor"]
        acc = torch.zeros_like(z)
        for e in range(s.shape[-1]):
            token, slot = (flat_chosen == e).nonzero(as_tuple=True)
            if token.numel():
                ze = z[token]
                y = self.situ(ze @ w1[e].T, ze @ w3[e].T) @ w2[e].T
                acc = acc.index_add(0, token, y * flat_wts[token, slot].unsqueeze(-1))
        acc = acc.reshape(*x.shape[:-1], -1)
        if c["latent_moe_use_norm"]:
            acc = rms_norm(acc, self.w(m + "routed_expert_norm.weight"), self.eps)
        out = acc @ self.w(m + "routed_expert_up_proj.weight").T
        sh = m + "shared_experts."
        shared = self.dense_ffn(sh, x)
        return out + shared

    def forward(self, ids, loads=None):
        """ids [B, T] -> logits [B, T, vocab]; `loads`, if a list, gets each MoE layer's
        token count per expert."""
        c = self.cfg
        prefix = self.w("embed_tokens.weight")[ids]
        blocks = []
        for layer in range(c["num_hidden_layers"]):
            lp = f"layers.{layer}."
            h = prefix
            if blocks:
                h = attn_res(blocks + [prefix], self.w(lp + "self_attention_res_norm.weight"),
                             self.w(lp + "self_attention_res_proj.weight"), self.eps)
            if layer % c["attn_res_block_size"] == 0:
                blocks, prefix = blocks + [prefix], None
            x = rms_norm(h, self.w(lp + "input_layernorm.weight"), self.eps)
            a = self.mla(lp + "self_attn.", x) if (layer + 1) in c["full_attn_layers"] else self.kda(lp + "self_attn.", x)
            prefix = a if prefix is None else prefix + a
            h = attn_res(blocks + [prefix], self.w(lp + "mlp_res_norm.weight"),
                         self.w(lp + "mlp_res_proj.weight"), self.eps)
            x = rms_norm(h, self.w(lp + "post_attention_layernorm.weight"), self.eps)
            if layer < c["first_k_dense_replace"]:
                prefix = prefix + self.dense_ffn(lp + "mlp.", x)
            else:
                prefix = prefix + self.latent_moe(lp + "block_sparse_moe.", x, loads)
        h = attn_res(blocks + [prefix], self.w("output_attn_res_norm.weight"),
                     self.w("output_attn_res_proj.weight"), self.eps)
        return rms_norm(h, self.w("norm.weight"), self.eps) @ self.w("lm_head.weight").T


def _key(name):
    return name.replace(".", "__")


def tensor_catalogue(cfg):
    """(name, shape, kind) of every tensor, in the spec's §6.4 names; kind is one of
    norm, proj (AttnRes), mat, conv, a_log, dt_bias, bias (router), embed, experts."""
    e, v = cfg["hidden_size"], cfg["vocab_size"]
    h, d, kk = cfg["num_heads"], cfg["head_dim"], cfg["short_conv_kernel_size"]
    p = h * d
    mh, ql, kvl = cfg["num_attention_heads"], cfg["q_lora_rank"], cfg["kv_lora_rank"]
    nope, rope, vd = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
    n, lat, i = cfg["num_experts"], cfg["routed_expert_hidden_size"], cfg["moe_intermediate_size"]
    si, ff = i * cfg["num_shared_experts"], cfg["intermediate_size"]
    out = [("embed_tokens.weight", [v, e], "embed")]
    for layer in range(cfg["num_hidden_layers"]):
        lp = f"layers.{layer}."
        out += [(lp + n_, [e], "norm") for n_ in ("input_layernorm.weight", "post_attention_layernorm.weight",
                                                  "self_attention_res_norm.weight", "mlp_res_norm.weight")]
        out += [(lp + "self_attention_res_proj.weight", [1, e], "proj"),
                (lp + "mlp_res_proj.weight", [1, e], "proj")]
        a = lp + "self_attn."
        if (layer + 1) in cfg["full_attn_layers"]:
            out += [(a + "q_a_proj.weight", [ql, e], "mat"), (a + "q_a_layernorm.weight", [ql], "norm"),
                    (a + "q_b_proj.weight", [mh * (nope + rope), ql], "mat"),
                    (a + "kv_a_proj_with_mqa.weight", [kvl + rope, e], "mat"),
                    (a + "kv_a_layernorm.weight", [kvl], "norm"),
                    (a + "kv_b_proj.weight", [mh * (nope + vd), kvl], "mat"),
                    (a + "o_proj.weight", [e, mh * vd], "out"), (a + "g_proj.weight", [mh * vd, e], "mat")]
        else:
            out += [(a + f"{n_}_proj.weight", [p, e], "mat") for n_ in ("q", "k", "v", "g")]
            out += [(a + "o_proj.weight", [e, p], "out")]
            out += [(a + f"{n_}_conv1d.weight", [p, 1, kk], "conv") for n_ in ("q", "k", "v")]
            out += [(a + "f_a_proj.weight", [d, e], "mat"), (a + "f_b_proj.weight", [p, d], "mat"),
                    (a + "b_proj.weight", [h, e], "mat"), (a + "A_log", [h], "a_log"),
                    (a + "dt_bias", [p], "dt_bias"), (a + "o_norm.weight", [d], "norm")]
        if layer < cfg["first_k_dense_replace"]:
            m = lp + "mlp."
            out += [(m + "gate_proj.weight", [ff, e], "mat"), (m + "up_proj.weight", [ff, e], "mat"),
                    (m + "down_proj.weight", [e, ff], "out")]
        else:
            m = lp + "block_sparse_moe."
            out += [(m + "gate.weight", [n, e], "mat"), (m + "gate.e_score_correction_bias", [n], "bias"),
                    (m + "routed_expert_down_proj.weight", [lat, e], "mat"),
                    (m + "routed_expert_up_proj.weight", [e, lat], "out"),
                    (m + "routed_expert_norm.weight", [lat], "norm"),
                    (m + "shared_experts.gate_proj.weight", [si, e], "mat"),
                    (m + "shared_experts.up_proj.weight", [si, e], "mat"),
                    (m + "shared_experts.down_proj.weight", [e, si], "out"),
                    (m + "experts.w1", [n, i, lat], "experts"), (m + "experts.w3", [n, i, lat], "experts"),
                    (m + "experts.w2", [n, lat, i], "experts_out")]
    out += [("norm.weight", [e], "norm"), ("output_attn_res_norm.weight", [e], "norm"),
            ("output_attn_res_proj.weight", [1, e], "proj"), ("lm_head.weight", [v, e], "head")]
    return out


def initialise(model, seed):
    """Initial weights: matrices N(0, 1/fan_in) (output projections also / sqrt(2·layers)),
    norms 1, AttnRes projections 0 (uniform mixing at the start), conv taps a causal
    identity plus noise, A_log 0, dt_bias 0, router bias 0."""
    g = torch.Generator().manual_seed(seed)
    depth = math.sqrt(2 * model.cfg["num_hidden_layers"])
    with torch.no_grad():
        for name, shape, kind in tensor_catalogue(model.cfg):
            t = model.w(name)
            if kind in ("mat", "experts", "head"):
                t.copy_(torch.randn(shape, generator=g) / math.sqrt(shape[-1]))
            elif kind in ("out", "experts_out"):
                t.copy_(torch.randn(shape, generator=g) / math.sqrt(shape[-1]) / depth)
            elif kind == "embed":
                t.copy_(torch.randn(shape, generator=g))
            elif kind == "norm":
                t.fill_(1.0)
            elif kind == "conv":
                t.copy_(0.1 * torch.randn(shape, generator=g))
                t[..., -1] += 1.0
            else:  # proj, a_log, dt_bias, bias
                t.zero_()
