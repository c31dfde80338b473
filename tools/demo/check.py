"""Proofs that the training graph is the spec's graph (run before training, and on the
exported demo checkpoint after it).

    python3 tools/demo/check.py fixtures/tiny-mxfp4     # torch (float64) vs k3_reference
    python3 tools/demo/check.py --mxfp4                 # fake quantiser vs make_checkpoints'

The first loads a released-layout checkpoint into both the torch model and the
independent float64 NumPy reference and compares the teacher-forced logits over a
prompt of every kind of id; the worst absolute difference is printed and must stay
under 1e-9 (both are float64; only the order of summation differs).
"""
import argparse
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
sys.dont_write_bytecode = True
import k3_torch  # noqa: E402
import weights  # noqa: E402
from k3_reference import K3Reference  # noqa: E402
from make_checkpoints import mxfp4_quantize  # noqa: E402
from k3_reference import mxfp4_dequantize  # noqa: E402


def same_function(folder, n_tokens=24, seed=5):
    torch.set_default_dtype(torch.float64)
    ref = K3Reference(folder)
    model = k3_torch.K3(ref.cfg)
    weights.load_released(model, folder)
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, ref.cfg["vocab_size"], n_tokens)
    want = ref.forward(ids)
    with torch.no_grad():
        got = model(torch.from_numpy(ids).unsqueeze(0))[0].numpy()
    err = float(np.abs(got - want).max())
    scale = float(np.abs(want).max())
    print(f"{folder}: {n_tokens} positions, worst |torch - reference| {err:.3e} (logits up to {scale:.2f})")
    torch.set_default_dtype(torch.float32)
    return err


def same_quantiser(seed=7):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((64, 256)) * np.exp(rng.uniform(-8, 3, (64, 1)))
    w[3, :32] = 0.0
    w[5, 40] = 6.0 * 2.0 ** -3  # a group max exactly on a power of two
    packed, scale = mxfp4_quantize(w)
    want = mxfp4_dequantize(packed, scale)
    got = k3_torch.mxfp4_round(torch.from_numpy(w)).numpy()
    bad = int((got != want).sum())
    print(f"MXFP4: torch rounding vs make_checkpoints.mxfp4_quantize: {bad} of {w.size} values differ")
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folder", nargs="?")
    ap.add_argument("--mxfp4", action="store_true")
    args = ap.parse_args()
    failed = False
    if args.mxfp4:
        failed |= same_quantiser() != 0
    if args.folder:
        failed |= not same_function(args.folder) < 1e-9
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
