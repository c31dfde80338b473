"""Per-op fixtures: fixtures/ops/*.json with float64 expected outputs.

    python3 tools/reference/make_op_fixtures.py [--out fixtures/ops]

Inputs are drawn with numpy default_rng (seed per file, listed in SEEDS), rounded
to float32 and then widened, so every input is exactly representable in f32 (the
engine computes in f32 with f64 accumulation).  Expected values come from the
float64 ops of k3_reference.py (matvecs: exactly rounded math.fsum of exact
products).  Tolerance: see MANIFEST.json.
"""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import math

import numpy as np

import k3_reference as R
from safetensors_io import bf16_bits_to_f64, f32_to_bf16_bits

SEEDS = {"rmsnorm": 501, "l2norm": 502, "situ_glu": 503, "shortconv": 504,
         "kda_recurrence": 505, "attn_res": 506, "router": 507, "matvec_bf16": 508,
         "matvec_mxfp4": 509}


def f32(a):
    """Round to float32, return float64 array (exactly f32-representable)."""
    return np.asarray(a, dtype=np.float64).astype(np.float32).astype(np.float64)


def L(a):
    return [float(v) for v in np.asarray(a, dtype=np.float64).reshape(-1)]


# --------------------------------------------------------------------------- #
def make_rmsnorm(rng):
    cases = []
    eps = 1e-5
    specs = [(1, 1.0), (7, 1.0), (33, 1.0), (100, 1.0), (128, 1.0), (7168, 1.0),
             (33, 1e4), (100, 1e-4), (64, 1e-3), (7, 1e6), (128, "outlier"), (16, "zero")]
    for n, sc in specs:
        if sc == "zero":
            x = np.zeros(n)
        elif sc == "outlier":
            x = rng.standard_normal(n)
            x[17] = 3.0e5
        else:
            x = rng.standard_normal(n) * sc
        x = f32(x)
        w = f32(1.0 + 0.5 * rng.standard_normal(n))
        cases.append({"x": L(x), "w": L(w), "eps": eps, "expected": L(R.rms_norm(x, w, eps))})
    return {"op": "rmsnorm", "formula": "y_i = w_i * (x_i / sqrt(mean(x^2) + eps))", "cases": cases}


def make_l2norm(rng):
    cases = []
    for n, sc in [(1, 1.0), (7, 1.0), (16, 1.0), (33, 1.0), (100, 3.0), (128, 1.0),
                  (128, 1e-4), (16, 1e-3), (64, 1e5), (16, "zero"), (1, "zero")]:
        x = np.zeros(n) if sc == "zero" else rng.standard_normal(n) * sc
        x = f32(x)
        cases.append({"x": L(x), "expected": L(R.l2_norm(x))})
    return {"op": "l2norm", "formula": "y = x / sqrt(sum(x^2) + 1e-6)", "cases": cases}


def make_situ(rng):
    cases = []
    for n, sc in [(1, 1.0), (7, 2.0), (33, 5.0), (100, 20.0), (128, 200.0), (256, 60.0)]:
        g = f32(np.clip(rng.standard_normal(n) * sc, -200, 200))
        u = f32(np.clip(rng.standard_normal(n) * sc, -200, 200))
        cases.append({"gate": L(g), "up": L(u), "beta1": 4.0, "beta2": 25.0,
                      "expected": L(R.situ_glu(g, u, 4.0, 25.0))})
    # explicit extremes: signs, zeros, ±200 pairs
    g = f32([0.0, -0.0, 200.0, -200.0, 200.0, -200.0, 4.0, -4.0, 1e-3, -87.5, 88.0, 30.0, -30.0])
    u = f32([5.0, 5.0, 200.0, 200.0, -200.0, -200.0, 25.0, -25.0, 1e-3, 3.0, 3.0, 100.0, 100.0])
    cases.append({"gate": L(g), "up": L(u), "beta1": 4.0, "beta2": 25.0,
                  "expected": L(R.situ_glu(g, u, 4.0, 25.0))})
    return {"op": "situ_glu",
            "formula": "beta1*tanh(g/beta1)*sigmoid(g) * beta2*tanh(u/beta2) (sigmoid of the uncapped g)",
            "cases": cases}


def make_shortconv(rng):
    cases = []
    for C, K, T, zero_state, sc in [(7, 4, 5, False, 1.0), (33, 4, 1, True, 1.0), (1, 1, 7, True, 1.0),
                                    (5, 1, 3, False, 2.0), (64, 3, 10, False, 1.0),
                                    (100, 4, 33, False, 1.0), (16, 4, 6, False, 40.0),
                                    (3, 2, 4, True, 1.0)]:
        w = f32(0.5 * rng.standard_normal((C, 1, K)))
        st = np.zeros((C, K - 1)) if zero_state else f32(rng.standard_normal((C, K - 1)) * sc)
        x = f32(rng.standard_normal((T, C)) * sc)
        y, st_out = R.short_conv(x, w, st)
        cases.append({"channels": C, "kernel": K, "weight": L(w), "state_in": L(st),
                      "inputs": [L(r) for r in x], "expected": [L(r) for r in y],
                      "state_out": L(st_out)})
    return {"op": "shortconv",
            "layout": "weight [C,1,K] flattened (c*K + j; tap K-1 multiplies the current input); "
                      "state [C][K-1] oldest first; output SiLU(conv)",
            "cases": cases}


def make_kda(rng):
    cases = []
    for D, T, zero_state in [(1, 7, True), (7, 5, False), (16, 33, False), (16, 4, True),
                             (64, 4, False), (128, 2, False)]:
        st = np.zeros((D, D)) if zero_state else f32(0.3 * rng.standard_normal((D, D)))
        steps = []
        for t in range(T):
            q = f32(R.l2_norm(rng.standard_normal(D)) / math.sqrt(D))
            k = f32(R.l2_norm(rng.standard_normal(D)))
            v = f32(rng.standard_normal(D))
            alpha = f32(np.exp(-5.0 * R.sigmoid(2.0 * rng.standard_normal(D))))
            if t == 0 and D > 2:
                alpha[0] = 1.0                      # sigma underflow case: alpha exactly 1
                alpha[1] = np.float32(math.exp(-5.0))
            beta = float(f32(R.sigmoid(rng.standard_normal())))
            steps.append((q, k, v, alpha, beta))
        qa, ka, va, aa = (np.stack([s[i] for s in steps])[:, None, :] for i in range(4))
        ba = np.array([[s[4]] for s in steps])
        o, S = R.kda_recurrence_with_state(qa, ka, va, aa, ba, st[None])
        cases.append({"d": D, "state_in": L(st),
                      "steps": [{"q": L(s[0]), "k": L(s[1]), "v": L(s[2]), "alpha": L(s[3]),
                                 "beta": s[4]} for s in steps],
                      "expected": [L(o[t, 0]) for t in range(T)], "state_out": L(S[0])})
    return {"op": "kda_recurrence",
            "layout": "state [D][D], row = key channel i, col = value channel j; q used as given",
            "order": "S=diag(alpha)S; u=k^T S; S+=k*beta*(v-u)^T; o=q^T S (updated S)",
            "cases": cases}


def make_attn_res(rng):
    cases = []
    eps = 1e-5
    for n in range(1, 10):
        E = [1, 7, 33, 128, 100, 128, 64, 128, 7][n - 1]
        scales = np.exp(rng.uniform(-3, 3, n)) if n > 2 else np.ones(n)
        src = [f32(rng.standard_normal(E) * s) for s in scales]
        nw = f32(1.0 + 0.5 * rng.standard_normal(E))
        pw = f32(rng.standard_normal(E) * (0.1 if n % 2 else 1.0))
        cases.append({"sources": [L(s) for s in src], "norm_w": L(nw), "proj_w": L(pw), "eps": eps,
                      "expected": L(R.attn_res([s[None] for s in src], nw, pw, eps)[0])})
    # extremes: saturated softmax (scores in the hundreds) and a zero source
    E = 128
    src = [f32(rng.standard_normal(E) * s) for s in (1.0, 1e3, 1e-3, 0.0, 5.0)]
    nw = f32(1.0 + 0.5 * rng.standard_normal(E))
    pw = f32(rng.standard_normal(E) * 8.0)
    cases.append({"sources": [L(s) for s in src], "norm_w": L(nw), "proj_w": L(pw), "eps": eps,
                  "expected": L(R.attn_res([s[None] for s in src], nw, pw, eps)[0])})
    return {"op": "attn_res",
            "formula": "f = norm_w*proj_w; score_k = sum((s_k/sqrt(mean(s_k^2)+eps))*f); "
                       "p = softmax(score); out = sum_k p_k s_k (raw sources)",
            "cases": cases}


def router_case(x, W, bias, k, renorm, scaling):
    s = R.sigmoid(W @ x)
    c = s + bias
    ids = R.router_topk(c, k)
    w = s[ids]
    if renorm:
        w = w / (np.sum(w) + 1e-20)
    w = w * scaling
    return {"x": L(x), "weight": [L(r) for r in W], "bias": L(bias), "top_k": int(k),
            "renormalize": bool(renorm), "scaling": float(scaling),
            "expected_ids": [int(i) for i in ids], "expected_weights": L(w)}


def make_router(rng):
    cases = []
    for E, N, k, renorm, scaling in [(7, 8, 2, True, 1.0), (33, 8, 1, True, 1.0),
                                     (128, 64, 16, True, 1.0), (100, 16, 4, False, 2.5),
                                     (16, 5, 5, True, 1.0), (128, 8, 2, False, 1.0)]:
        x = f32(rng.standard_normal(E))
        W = f32(rng.standard_normal((N, E)) / math.sqrt(E) * 1.5)
        bias = f32(0.5 * rng.standard_normal(N))
        cases.append(router_case(x, W, bias, k, renorm, scaling))
    # the bias changes the selection (weights still from the unbiased scores)
    for attempt in range(1000):
        x = f32(rng.standard_normal(32))
        W = f32(rng.standard_normal((8, 32)) / math.sqrt(32) * 1.5)
        bias = f32(0.8 * rng.standard_normal(8))
        s = R.sigmoid(W @ x)
        if set(R.router_topk(s, 2).tolist()) != set(R.router_topk(s + bias, 2).tolist()):
            case = router_case(x, W, bias, 2, True, 1.0)
            case["note"] = ("bias changes the selection: unbiased top-2 would be "
                            f"{[int(i) for i in R.router_topk(s, 2)]}")
            cases.append(case)
            break
    # exact ties: rows 2 and 6 identical with identical, dominant bias
    x = f32(rng.standard_normal(16))
    W = f32(rng.standard_normal((8, 16)) / 4.0)
    W[6] = W[2]
    bias = f32(0.1 * rng.standard_normal(8))
    bias[2] = bias[6] = np.float32(3.0)
    for k in (1, 2):
        case = router_case(x, W, bias, k, True, 1.0)
        case["note"] = "experts 2 and 6 tie exactly; lowest index wins / comes first"
        assert case["expected_ids"][:k] == [2, 6][:k]
        cases.append(case)
    return {"op": "router",
            "formula": "s = sigmoid(W x); select top_k of s + bias (descending, ties -> lowest "
                       "index); w = s[ids]; if renormalize: w /= (sum(w) + 1e-20); w *= scaling",
            "cases": cases}


def make_matvec_bf16(rng):
    cases = []
    for r, c, wsc, xsc in [(1, 1, 1.0, 1.0), (3, 15, 1.0, 1.0), (7, 16, 1.0, 1.0), (5, 17, 1.0, 1.0),
                           (7, 33, 1.0, 1.0), (33, 100, 0.1, 1.0), (16, 128, 1.0, 1.0),
                           (3, 7173, 0.05, 1.0), (4, 64, 1e3, 1e2), (4, 64, 1e-3, 1e-3)]:
        bits = f32_to_bf16_bits(rng.standard_normal((r, c)) * wsc)
        if r * c >= 8:
            flat = bits.reshape(-1)
            flat[:6] = [0x0000, 0x8000, 0x3F80, 0xBF80, 0x4780, 0x3380]  # 0,-0,1,-1,65536,2^-24
        x = f32(rng.standard_normal(c) * xsc)
        W = bf16_bits_to_f64(bits)
        exp = [math.fsum((W[i] * x).tolist()) for i in range(r)]
        cases.append({"rows": r, "cols": c, "w_bits": [int(b) for b in bits.reshape(-1)],
                      "x": L(x), "expected": exp})
    return {"op": "matvec_bf16",
            "layout": "w_bits row-major [rows][cols] BF16 bit patterns (uint16); y = W x",
            "cases": cases}


def make_matvec_mxfp4(rng):
    cases = []
    for r, c, kind in [(1, 32, "typ"), (7, 64, "typ"), (16, 128, "typ"), (3, 3584, "typ"),
                       (4, 96, "special"), (5, 64, "large"), (2, 32, "zero_scale")]:
        packed = rng.integers(0, 256, (r, c // 2), dtype=np.uint8)
        scales = rng.integers(115, 128, (r, c // 32)).astype(np.uint8)
        if kind == "special":
            scales[0, 0] = 255
            scales[1, 1] = 0
            scales[2, 2] = 255
            scales[3, :] = [0, 255, 140]
        elif kind == "large":
            scales[:] = rng.integers(140, 181, scales.shape).astype(np.uint8)
        elif kind == "zero_scale":
            scales[:] = [[0], [255]]
        x = f32(rng.standard_normal(c))
        W = R.mxfp4_dequantize(packed, scales)
        exp = [math.fsum((W[i] * x).tolist()) for i in range(r)]
        cases.append({"rows": r, "cols": c, "packed": [int(b) for b in packed.reshape(-1)],
                      "scales": [int(b) for b in scales.reshape(-1)], "x": L(x), "expected": exp})
    return {"op": "matvec_mxfp4",
            "layout": "packed [rows][cols/2] (element 2j low nibble, 2j+1 high nibble of byte j); "
                      "scales [rows][cols/32] E8M0, 2^(s-127), 255 -> group contributes 0; y = W x",
            "cases": cases}


MAKERS = {"rmsnorm": (make_rmsnorm, "RMSNorm, eps inside sqrt, weight after normalisation"),
          "l2norm": (make_l2norm, "L2Norm over a sum, eps 1e-6 (KDA q/k); includes all-zero vectors"),
          "situ_glu": (make_situ, "SiTU-GLU, beta 4/25, |inputs| up to 200"),
          "shortconv": (make_shortconv, "depthwise causal ShortConv + SiLU with carried state, incl. K=1 and zero state"),
          "kda_recurrence": (make_kda, "single-head KDA delta-rule recurrence, q pre-normalised/scaled"),
          "attn_res": (make_attn_res, "Attention Residual aggregation over 1..9 sources (+ saturated case)"),
          "router": (make_router, "sigmoid router top-k with bias-selects-only, ties, renorm, scaling"),
          "matvec_bf16": (make_matvec_bf16, "BF16 matrix x f32 vector, exact f64 expected"),
          "matvec_mxfp4": (make_matvec_mxfp4, "MXFP4 matrix x f32 vector incl. scale bytes 0, 255, large")}


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.join(here, "..", "..", "fixtures", "ops"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    files = {}
    for name, (fn, desc) in MAKERS.items():
        data = fn(np.random.default_rng(SEEDS[name]))
        data.setdefault("op", name)
        data["seed"] = SEEDS[name]
        with open(os.path.join(args.out, name + ".json"), "w") as f:
            json.dump(data, f, separators=(",", ":"))
            f.write("\n")
        files[name + ".json"] = desc
        print(f"{name}: {len(data['cases'])} cases")
    manifest = {"tolerance": {"default": {"atol": 1e-5, "rtol": 1e-4}},
                "rule": "pass iff |got - want| <= atol + rtol*|want| elementwise; router: compare "
                        "expected_ids (as an ordered list) first, then weights",
                "generator": "tools/reference/make_op_fixtures.py (float64 NumPy reference)",
                "files": files}
    with open(os.path.join(args.out, "MANIFEST.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
