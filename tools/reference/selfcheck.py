"""Self-check of the reference (not needed to regenerate fixtures).

    python3 tools/reference/selfcheck.py [fixtures/tiny-mxfp4 ...]

1. Unit facts from the spec: BF16 round-to-nearest-even, the §7 MXFP4 worked
   example, safetensors write/read round trip with and without header padding.
2. A SECOND, deliberately naive implementation of the forward pass that runs
   token by token with carried state (KDA S + conv histories, MLA latent cache),
   written with explicit loops, compared against k3_reference.forward() on the
   golden full_ids (logits and every tap), and an incremental greedy run compared
   against golden greedy_ids.  Both share only the checkpoint loader.
"""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import json
import math
import sys
import tempfile

import numpy as np

import k3_reference as R
from safetensors_io import (bf16_bits_to_f64, encode, f32_to_bf16_bits, read_safetensors,
                            write_safetensors)


def unit_checks():
    # BF16 RNE: 1+2^-8 is a tie -> even (1.0); 1+3*2^-8 is a tie -> even (1+2^-6)
    vals = np.array([1.0, 1 + 2 ** -8, 1 + 3 * 2 ** -8, -2.5, 1 + 2 ** -8 + 2 ** -20], dtype=np.float32)
    bits = f32_to_bf16_bits(vals)
    assert bits.tolist() == [0x3F80, 0x3F80, 0x3F82, 0xC020, 0x3F81], [hex(b) for b in bits]
    assert bf16_bits_to_f64(np.array([0x3F81], dtype=np.uint16))[0] == 1 + 2 ** -7
    # §7 worked example: scale 121, bytes 0x16 0xB9 -> 4/64, 0.5/64, -0.5/64, -1.5/64
    packed = np.zeros((1, 16), dtype=np.uint8)
    packed[0, :2] = [0x16, 0xB9]
    w = R.mxfp4_dequantize(packed, np.array([[121]], dtype=np.uint8))
    assert w[0, :4].tolist() == [0.0625, 0.0078125, -0.0078125, -0.0234375]
    w = R.mxfp4_dequantize(packed, np.array([[121]], dtype=np.uint8), reversed_nibbles=True)
    assert w[0, :4].tolist() == [0.0078125, 0.0625, -0.0234375, -0.0078125]
    assert not R.mxfp4_dequantize(packed, np.array([[255]], dtype=np.uint8)).any()
    assert R.mxfp4_dequantize(packed, np.array([[0]], dtype=np.uint8))[0, 0] == 4.0 * 2.0 ** -127
    # safetensors round trip, padded and unpadded
    with tempfile.TemporaryDirectory() as d:
        for pad in (True, False):
            p = os.path.join(d, "t.safetensors")
            a = np.arange(6, dtype=np.float64).reshape(2, 3) / 7
            n, _ = write_safetensors(p, [("a.b", "F32", [2, 3], encode("F32", a)),
                                         ("c", "BF16", [3], encode("BF16", a[0])),
                                         ("u", "U8", [2], encode("U8", np.array([0, 255], np.uint8)))],
                                     pad_header_to_8=pad)
            assert ((8 + n) % 8 == 0) or not pad
            t = read_safetensors(p)
            assert np.array_equal(t["a.b"][2], a.astype(np.float32).astype(np.float64))
            assert t["u"][2].tolist() == [0, 255] and t["c"][1] == [3]
    print("unit checks: ok")


# --------------------------------------------------------------------------- #
# naive token-by-token implementation
# --------------------------------------------------------------------------- #
def sig(z):
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


def rms(x, w, eps):
    r = 1.0 / math.sqrt(sum(v * v for v in x) / len(x) + eps)
    return np.array([w[i] * (x[i] * r) for i in range(len(x))])


def situ(g, u, b1, b2):
    return np.array([b1 * math.tanh(g[i] / b1) * sig(g[i]) * b2 * math.tanh(u[i] / b2)
                     for i in range(len(g))])


class Naive:
    def __init__(self, model):
        self.m = model
        self.c = model.cfg
        self.reset()

    def reset(self):
        self.state = {}

    def mv(self, name, x):
        W = self.m.w[name]
        return np.array([float(np.dot(W[o], x)) for o in range(W.shape[0])])

    def attnres(self, sources, nw, pw):
        f = nw * pw.reshape(-1)
        scores = []
        for s in sources:
            r = 1.0 / math.sqrt(sum(v * v for v in s) / len(s) + self.c["rms_norm_eps"])
            scores.append(sum(s[i] * r * f[i] for i in range(len(s))))
        mx = max(scores)
        e = [math.exp(s - mx) for s in scores]
        tot = sum(e)
        return sum((e[k] / tot) * sources[k] for k in range(len(sources)))

    def kda(self, l, x):
        c, P = self.c, R.PREFIX + f"layers.{l}.self_attn."
        H, D, K = c["num_heads"], c["head_dim"], c["short_conv_kernel_size"]
        st = self.state.setdefault(l, {"S": np.zeros((H, D, D)),
                                       "hist": {n: np.zeros((H * D, K - 1)) for n in "qkv"}})
        proj = {}
        for n in "qkv":
            raw = self.mv(P + f"{n}_proj.weight", x)
            W = self.m.w[P + f"{n}_conv1d.weight"]
            hist = st["hist"][n]
            out = np.zeros(H * D)
            for ch in range(H * D):
                window = list(hist[ch]) + [raw[ch]]         # oldest .. current
                pre = sum(W[ch, 0, j] * window[j] for j in range(K))
                out[ch] = pre * sig(pre)
                hist[ch] = window[1:]
            proj[n] = out
        braw = self.mv(P + "b_proj.weight", x)
        z = self.mv(P + "f_b_proj.weight", self.mv(P + "f_a_proj.weight", x))
        gate = self.mv(P + "g_proj.weight", x)
        A = self.m.w[P + "A_log"].reshape(-1)
        dt = self.m.w[P + "dt_bias"]
        onw = self.m.w[P + "o_norm.weight"]
        y = np.zeros(H * D)
        for h in range(H):
            sl = slice(h * D, (h + 1) * D)
            q, k, v = proj["q"][sl], proj["k"][sl], proj["v"][sl]
            q = q / math.sqrt(sum(t * t for t in q) + 1e-6) / math.sqrt(D)
            k = k / math.sqrt(sum(t * t for t in k) + 1e-6)
            beta = sig(braw[h])
            alpha = [math.exp(c["gate_lower_bound"] * sig(math.exp(A[h]) * (z[h * D + d] + dt[h * D + d])))
                     for d in range(D)]
            S = st["S"][h]
            for i in range(D):
                for j in range(D):
                    S[i][j] = alpha[i] * S[i][j]
            u = [sum(k[i] * S[i][j] for i in range(D)) for j in range(D)]
            for i in range(D):
                for j in range(D):
                    S[i][j] = S[i][j] + (k[i] * beta) * (v[j] - u[j])
            o = [sum(q[i] * S[i][j] for i in range(D)) for j in range(D)]
            on = rms(o, onw, c["rms_norm_eps"])
            for d in range(D):
                y[h * D + d] = on[d] * sig(gate[h * D + d])
        return self.mv(P + "o_proj.weight", y)

    def mla(self, l, x):
        c, P = self.c, R.PREFIX + f"layers.{l}.self_attn."
        H, nope, rope, vd, kvl = (c["num_attention_heads"], c["qk_nope_head_dim"],
                                  c["qk_rope_head_dim"], c["v_head_dim"], c["kv_lora_rank"])
        eps = c["rms_norm_eps"]
        cache = self.state.setdefault(l, [])
        q = self.mv(P + "q_b_proj.weight", rms(self.mv(P + "q_a_proj.weight", x),
                                                self.m.w[P + "q_a_layernorm.weight"], eps))
        ckv = self.mv(P + "kv_a_proj_with_mqa.weight", x)
        cache.append((rms(ckv[:kvl], self.m.w[P + "kv_a_layernorm.weight"], eps), ckv[kvl:]))
        kvs = [self.mv(P + "kv_b_proj.weight", lat) for lat, _ in cache]
        o = np.zeros(H * vd)
        for h in range(H):
            qh = q[h * (nope + rope):(h + 1) * (nope + rope)]
            scores = []
            for s, (lat, kr) in enumerate(cache):
                kv = kvs[s][h * (nope + vd):(h + 1) * (nope + vd)]
                dot = sum(qh[i] * kv[i] for i in range(nope)) + sum(qh[nope + i] * kr[i] for i in range(rope))
                scores.append(dot / math.sqrt(nope + rope))
            mx = max(scores)
            e = [math.exp(s - mx) for s in scores]
            tot = sum(e)
            for s in range(len(cache)):
                o[h * vd:(h + 1) * vd] += (e[s] / tot) * kvs[s][h * (nope + vd) + nope:(h + 1) * (nope + vd)]
        if c["mla_use_output_gate"]:
            g = self.mv(P + "g_proj.weight", x)
            o = np.array([o[i] * sig(g[i]) for i in range(len(o))])
        return self.mv(P + "o_proj.weight", o)

    def mlp(self, l, x):
        c = self.c
        b1, b2 = c["activation_situ_beta"], c["activation_situ_linear_beta"]
        if l < c["first_k_dense_replace"]:
            P = R.PREFIX + f"layers.{l}.mlp."
            return self.mv(P + "down_proj.weight", situ(self.mv(P + "gate_proj.weight", x),
                                                        self.mv(P + "up_proj.weight", x), b1, b2))
        P = R.PREFIX + f"layers.{l}.block_sparse_moe."
        s = [sig(v) for v in self.mv(P + "gate.weight", x)]
        bias = self.m.w[P + "gate.e_score_correction_bias"]
        order = sorted(range(len(s)), key=lambda e: (-(s[e] + bias[e]), e))
        ids = order[: c["num_experts_per_token"]]
        w = [s[e] for e in ids]
        if c["moe_renormalize"]:
            tot = sum(w) + 1e-20
            w = [v / tot for v in w]
        w = [v * c["routed_scaling_factor"] for v in w]
        z = self.mv(P + "routed_expert_down_proj.weight", x)
        acc = np.zeros(c["routed_expert_hidden_size"])
        for e, we in zip(ids, w):
            ex = P + f"experts.{e}."
            a = situ(self.mv(ex + "w1.weight", z), self.mv(ex + "w3.weight", z), b1, b2)
            acc = acc + we * self.mv(ex + "w2.weight", a)
        if c["latent_moe_use_norm"]:
            acc = rms(acc, self.m.w[P + "routed_expert_norm.weight"], c["rms_norm_eps"])
        y = self.mv(P + "routed_expert_up_proj.weight", acc)
        sh = P + "shared_experts."
        return y + self.mv(sh + "down_proj.weight", situ(self.mv(sh + "gate_proj.weight", x),
                                                         self.mv(sh + "up_proj.weight", x), b1, b2))

    def step(self, tok):
        """One token through the model with carried state; returns (logits, taps)."""
        c, W = self.c, self.m.w
        eps, B = c["rms_norm_eps"], c["attn_res_block_size"]
        prefix = W[R.PREFIX + "embed_tokens.weight"][tok].copy()
        blocks, taps = [], []
        for l in range(c["num_hidden_layers"]):
            L = R.PREFIX + f"layers.{l}."
            h = prefix
            if blocks:
                h = self.attnres(blocks + [prefix], W[L + "self_attention_res_norm.weight"],
                                 W[L + "self_attention_res_proj.weight"])
            if l % B == 0:
                blocks.append(prefix)
                prefix = None
            x = rms(h, W[L + "input_layernorm.weight"], eps)
            a = self.mla(l, x) if (l + 1) in c["full_attn_layers"] else self.kda(l, x)
            prefix = a if prefix is None else prefix + a
            h = self.attnres(blocks + [prefix], W[L + "mlp_res_norm.weight"], W[L + "mlp_res_proj.weight"])
            m = self.mlp(l, rms(h, W[L + "post_attention_layernorm.weight"], eps))
            prefix = prefix + m
            taps.append((a, m, prefix))
        h = self.attnres(blocks + [prefix], W[R.PREFIX + "output_attn_res_norm.weight"],
                         W[R.PREFIX + "output_attn_res_proj.weight"])
        hn = rms(h, W[R.PREFIX + "norm.weight"], eps)
        return self.mv(R.LM_HEAD, hn), taps, hn


def model_check(folder):
    with open(os.path.join(folder, "golden", "golden.json")) as f:
        g = json.load(f)
    m = R.K3Reference(folder)
    taps = {}
    ref = m.forward(g["full_ids"], taps=taps)
    naive = Naive(m)
    worst_logit, worst_tap = 0.0, 0.0
    for t, tok in enumerate(g["full_ids"]):
        lg, tp, hn = naive.step(tok)
        worst_logit = max(worst_logit, float(np.max(np.abs(lg - ref[t]))))
        for l, (a, mm, p) in enumerate(tp):
            for got, key in ((a, "attn_out"), (mm, "mlp_out"), (p, "prefix_after")):
                worst_tap = max(worst_tap, float(np.max(np.abs(got - taps[key][l][t]))))
        worst_tap = max(worst_tap, float(np.max(np.abs(hn - taps["final_hidden"][t]))))
    # incremental greedy: prefill the prompt, then one token per step
    naive.reset()
    for tok in g["prompt_ids"]:
        lg, _, _ = naive.step(tok)
    gen = []
    for _ in range(len(g["greedy_ids"])):
        nxt = int(np.argmax(lg))
        gen.append(nxt)
        lg, _, _ = naive.step(nxt)
    # golden files agree with a fresh reference run
    stored = np.fromfile(os.path.join(folder, "golden", "tf_logits.f64"), dtype="<f8").reshape(ref.shape)
    # the absorbed MLA form (the engine's) gives the same logits in float64
    absorbed = R.K3Reference(folder, mla_form="absorbed").forward(g["full_ids"])
    worst_form = float(np.max(np.abs(absorbed - ref)))
    print(f"{folder}: naive vs vectorised max|dlogit| {worst_logit:.2e}, max|dtap| {worst_tap:.2e}; "
          f"incremental greedy {'matches' if gen == g['greedy_ids'] else 'DIFFERS'}; "
          f"stored logits max|d| {np.max(np.abs(stored - ref)):.2e}; "
          f"absorbed vs expanded MLA max|dlogit| {worst_form:.2e}")
    return worst_logit < 1e-9 and worst_tap < 1e-9 and gen == g["greedy_ids"] and worst_form < 1e-9


if __name__ == "__main__":
    unit_checks()
    here = os.path.dirname(os.path.abspath(__file__))
    folders = sys.argv[1:] or [os.path.join(here, "..", "..", "fixtures", n)
                               for n in ("tiny-mxfp4", "tiny-f32", "tiny-bf16-nonorm", "k3-demo")]
    ok = all([model_check(os.path.normpath(f)) for f in folders])
    print("selfcheck", "PASSED" if ok else "FAILED")
    sys.exit(0 if ok else 1)
