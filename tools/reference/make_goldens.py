"""Golden outputs of the float64 reference for each tiny checkpoint.

    python3 tools/reference/make_goldens.py [--fixtures fixtures] [--only NAME]

For fixtures/<name>/ writes golden/golden.json, golden/tf_logits.f64,
golden/taps.f64, golden/final_hidden.f64 and golden/sensitivity.json (see
tools/reference/README.md for the formats).
"""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # keep the machine load light
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import json

import numpy as np

import k3_reference as R
from make_checkpoints import CHECKPOINTS, SPECIAL_EXPERT, SPECIAL_LAYER

# Checkpoints written elsewhere that get goldens too: name -> routed-expert dtype and the
# English texts whose first PROMPT_LEN tokens are tried as prompts, in order. A trained
# model is asked about text because random ids hide what training gave it (real attention
# patterns, peaked routing); there are no planted scale bytes in these.
TRAINED = {
    "k3-demo": {  # tools/demo/train.py
        "experts": "mxfp4",
        "texts": [
            "It was a fine morning in the country, and Elizabeth walked out to meet her sister",
            "\"I cannot think what you mean,\" said Mrs. Bennet to her husband, with some surprise",
            "Mr. Knightley came to the house that evening, and found Emma alone in the drawing-room",
            "Anne had been sitting with her father for an hour, when a letter was brought in",
        ],
        # Variants that cannot move this model's outputs beyond rounding, and why; they
        # are still run and recorded, but not required to be detected.
        "equivalent": {
            "no_renormalize": "the aggregate RMSNorm after the combine (latent_moe_use_norm) "
                              "removes any common scale of the top-k weights; only its eps "
                              "term sees the difference",
        },
    },
}

PROMPT_LEN = 12
GEN = 20
MIN_GAP = 0.002
MIN_DISTINCT = 8
MIN_ROUTER_MARGIN = 1e-4   # keep top-k decisions clear of f32 rounding
PROMPT_SEED_BASE = 1000   # prompt seed s -> default_rng(s).integers(0, vocab, 12)


def dump_json(obj, path):
    """JSON with one key per line and every list of scalars kept on one line."""
    def enc(o, ind):
        pad = " " * ind
        if isinstance(o, dict):
            items = [f'{pad} {json.dumps(k)}: {enc(v, ind + 1)}' for k, v in o.items()]
            return "{\n" + ",\n".join(items) + "\n" + pad + "}"
        if isinstance(o, list) and any(isinstance(v, (dict, list)) for v in o) and \
                not all(isinstance(v, list) and not any(isinstance(w, (dict, list)) for w in v) for v in o):
            return "[\n" + ",\n".join(pad + " " + enc(v, ind + 1) for v in o) + "\n" + pad + "]"
        return json.dumps(o, separators=(", ", ": "))
    with open(path, "w") as f:
        f.write(enc(obj, 0) + "\n")


def top2_gap(logits):
    s = np.sort(logits, axis=-1)
    return s[..., -1] - s[..., -2]


def experts_of(name):
    return TRAINED[name]["experts"] if name in TRAINED else CHECKPOINTS[name]["experts"]


def random_prompts(vocab, max_tries=200):
    for k in range(max_tries):
        seed = PROMPT_SEED_BASE + k
        yield seed, [int(i) for i in np.random.default_rng(seed).integers(0, vocab, PROMPT_LEN)]


def text_prompts(folder, texts):
    """The first PROMPT_LEN tiktoken ids of each text, with the folder's own tokenizer."""
    import base64
    import sys

    import tiktoken

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tokenizer"))
    from kimi_pattern import PAT_STR

    ranks = {}
    with open(os.path.join(folder, "tiktoken.model")) as f:
        for line in f:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    enc = tiktoken.Encoding("golden", pat_str=PAT_STR, mergeable_ranks=ranks, special_tokens={})
    for k, text in enumerate(texts):
        ids = enc.encode_ordinary(text)
        assert len(ids) >= PROMPT_LEN, f"prompt text {k} has only {len(ids)} tokens"
        yield k, ids[:PROMPT_LEN]


def choose_prompt(model, candidates):
    """The first candidate prompt whose teacher-forced top-1/top-2 gaps at positions
    0..30 are all >= MIN_GAP, whose greedy continuation has >= MIN_DISTINCT distinct
    ids and whose router top-k margins are all >= MIN_ROUTER_MARGIN."""
    for seed, prompt in candidates:
        gen = model.greedy(prompt, GEN)
        full = prompt + gen
        routes = []
        lg = model.forward(full, route_log=routes)
        gaps = top2_gap(lg[: len(full) - 1])
        distinct = len(set(gen))
        margin = min(r[4] for r in routes)
        print(f"  prompt seed {seed}: min gap {gaps.min():.5f} at {int(gaps.argmin())}, "
              f"{distinct} distinct generated ids, min router margin {margin:.2e}")
        if gaps.min() >= MIN_GAP and distinct >= MIN_DISTINCT and margin >= MIN_ROUTER_MARGIN:
            return seed, prompt, gen, full, lg
    raise RuntimeError("no prompt satisfied the gap/diversity requirements")


def noise_floor(folder, full, ref_logits, rel=2.0 ** -24, trials=3):
    """Rough f32-rounding proxy: multiply every weight by (1 + rel*N(0,1)), rel = 2^-24
    (half an f32 ulp), and record how far the float64 logits move.  Tells how tight an
    engine-vs-reference logit tolerance can be; it is not a bound."""
    worst, changed, flips = 0.0, 0, 0
    ref_routes = []
    R.K3Reference(folder).forward(full, route_log=ref_routes)
    for trial in range(trials):
        m = R.K3Reference(folder)
        rng = np.random.default_rng(7000 + trial)
        for k in sorted(m.w):
            m.w[k] = m.w[k] * (1.0 + rel * rng.standard_normal(m.w[k].shape))
        routes = []
        lg = m.forward(full, route_log=routes)
        flips = max(flips, sum(a[2] != b[2] for a, b in zip(routes, ref_routes)))
        worst = max(worst, float(np.max(np.abs(lg - ref_logits))))
        changed = max(changed, int(np.sum(lg.argmax(-1) != ref_logits.argmax(-1))))
    return {"relative_weight_noise": rel, "trials": trials, "max_abs_logit_change": worst,
            "max_argmax_changed": changed, "max_routing_changes": int(flips),
            "note": "every weight x (1 + 2^-24 N(0,1)), seeds 7000..; a proxy for f32 rounding"}


def applicable_variants(name, cfg):
    out = []
    for v in R.WRONG_VARIANTS:
        if v == "mxfp4_reversed_nibbles" and experts_of(name) != "mxfp4":
            continue
        if v == "no_renormalize" and not cfg["moe_renormalize"]:
            continue
        if v == "spurious_renormalize" and cfg["moe_renormalize"]:
            continue
        if v == "per_expert_norm" and not cfg["latent_moe_use_norm"]:
            continue
        out.append(v)
    return out


def sensitivity(folder, name, cfg, full, ref_logits):
    ref_arg = ref_logits.argmax(axis=-1)
    table = {}
    for v in applicable_variants(name, cfg):
        lg = R.K3Reference(folder, wrong=v).forward(full)
        changed = int(np.sum(lg.argmax(axis=-1) != ref_arg))
        diff = float(np.max(np.abs(lg - ref_logits)))
        ok = changed >= 1 or diff > 1e-2
        table[v] = {"argmax_changed": changed, "max_abs_logit_diff": diff, "detected": ok}
        print(f"  {v:28s} argmax changed {changed:2d}/32   max|dlogit| {diff:.4g}"
              + ("" if ok else "   <-- NOT DETECTED"))
    return table


def run(name, fixtures):
    folder = os.path.join(fixtures, name)
    gdir = os.path.join(folder, "golden")
    os.makedirs(gdir, exist_ok=True)
    model = R.K3Reference(folder)
    cfg = model.cfg
    print(f"{name}: choosing prompt")
    if name in TRAINED:
        candidates = text_prompts(folder, TRAINED[name]["texts"])
        rule = (f"the first {PROMPT_LEN} ids of TRAINED[{name!r}]['texts'][prompt_seed] in "
                f"tools/reference/make_goldens.py, the first text with")
    else:
        candidates = random_prompts(cfg["vocab_size"])
        rule = (f"numpy.random.default_rng(prompt_seed).integers(0, {cfg['vocab_size']}, "
                f"{PROMPT_LEN}); first seed from {PROMPT_SEED_BASE} upward with")
    seed, prompt, gen, full, lg = choose_prompt(model, candidates)
    taps, routes = {}, []
    lg2 = model.forward(full, taps=taps, route_log=routes)
    assert np.array_equal(lg, lg2)
    tf_arg = [int(i) for i in lg.argmax(axis=-1)]
    assert tf_arg[PROMPT_LEN - 1: len(full) - 1] == gen, "teacher forcing disagrees with greedy"
    gaps = top2_gap(lg[: len(full) - 1])
    T, E, n = len(full), cfg["hidden_size"], cfg["num_hidden_layers"]

    lg.astype("<f8").tofile(os.path.join(gdir, "tf_logits.f64"))
    tap_arr = np.stack([np.stack([taps["attn_out"][l], taps["mlp_out"][l], taps["prefix_after"][l]])
                        for l in range(n)])                        # [n, 3, T, E]
    assert tap_arr.shape == (n, 3, T, E)
    tap_arr.astype("<f8").tofile(os.path.join(gdir, "taps.f64"))
    taps["final_hidden"].astype("<f8").tofile(os.path.join(gdir, "final_hidden.f64"))

    golden = {
        "prompt_ids": prompt, "full_ids": full, "greedy_ids": gen, "tf_argmax": tf_arg,
        "min_top2_gap": float(gaps.min()), "min_top2_gap_position": int(gaps.argmin()),
        "top2_gap_last_position": float(top2_gap(lg[-1])),
        "prompt_seed": seed,
        "prompt_rule": f"{rule} every teacher-forced top-2 gap at positions 0..{T - 2} >= {MIN_GAP}, >= "
                       f"{MIN_DISTINCT} distinct greedy ids and every router top-k margin >= "
                       f"{MIN_ROUTER_MARGIN}",
        "greedy_distinct_ids": len(set(gen)),
        "vocab_size": cfg["vocab_size"], "hidden_size": E, "n_layers": n, "positions": T,
        "files": {
            "tf_logits.f64": f"[{T}][{cfg['vocab_size']}] float64 LE, teacher-forced over full_ids",
            "taps.f64": f"[{n} layers][3: attn_out, mlp_out, prefix_after][{T}][{E}] float64 LE",
            "final_hidden.f64": f"[{T}][{E}] float64 LE, RMSNorm'd input to lm_head",
        },
        "routing_note": "routing[layerL][t] = selected experts at position t, selection order",
        "routing": {f"layer{l}": [r[2] for r in routes if r[0] == l]
                    for l in range(cfg["first_k_dense_replace"], n)},
        "experts_used_per_layer": [len({e for r in routes if r[0] == l for e in r[2]})
                                   for l in range(cfg["first_k_dense_replace"], n)],
        "min_router_margin": min(r[4] for r in routes),
        "min_router_margin_note": "smallest (k-th minus (k+1)-th) biased router score over all "
                                  "MoE layers and positions of the teacher-forced pass",
        "reference": "tools/reference/k3_reference.py float64",
    }
    if name not in TRAINED and CHECKPOINTS[name]["experts"] == "mxfp4":
        pos = [r[1] for r in routes if r[0] == SPECIAL_LAYER and SPECIAL_EXPERT in r[2]]
        golden["special_scale_expert"] = {
            "layer": SPECIAL_LAYER, "expert": SPECIAL_EXPERT,
            "selected_at_positions": pos,
            "note": "w1 row 0 group 0 has scale byte 255 (group contributes 0); "
                    "w3 row 1 group 1 has scale byte 0 (2^-127)",
        }
        assert pos, "the special-scale expert is never selected; pick another SPECIAL_EXPERT"
    golden["noise_floor"] = noise_floor(folder, full, lg)
    dump_json(golden, os.path.join(gdir, "golden.json"))
    print(f"  prompt {prompt}\n  greedy {gen}\n  distinct {len(set(gen))}, "
          f"min gap {gaps.min():.5f} at {int(gaps.argmin())}; noise floor "
          f"{golden['noise_floor']['max_abs_logit_change']:.2e}")

    print(f"{name}: sensitivity")
    table = sensitivity(folder, name, cfg, full, lg)
    record = {"full_ids": full, "positions": T,
               "criterion": "a variant is detected if it changes >= 1 teacher-forced argmax "
                            "or moves some logit by > 1e-2",
               "variant_definitions": "see WRONG_VARIANTS in tools/reference/k3_reference.py",
               "not_applicable": sorted(set(R.WRONG_VARIANTS) - set(table)) + ["a_log_per_channel"],
               "variants": table}
    if name in TRAINED:
        record["equivalent_here"] = TRAINED[name]["equivalent"]
    dump_json(record, os.path.join(gdir, "sensitivity.json"))
    equivalent = TRAINED.get(name, {}).get("equivalent", {})
    return all(v["detected"] or k in equivalent for k, v in table.items())


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--fixtures", default=os.path.join(here, "..", "..", "fixtures"))
    ap.add_argument("--only", default=None)
    args = ap.parse_args()
    ok = True
    for name in list(CHECKPOINTS) + list(TRAINED):
        if args.only and name != args.only:
            continue
        ok &= run(name, os.path.abspath(args.fixtures))
    if not ok:
        raise SystemExit("some wrong variant was not detected; adjust the generator gains")


if __name__ == "__main__":
    main()
