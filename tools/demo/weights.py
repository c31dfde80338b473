"""Moving weights between the torch model and released-layout checkpoints.

    load_released(model, folder)  the float64 values `k3_reference.load_checkpoint` reads
                                  (BF16 widened, MXFP4 dequantised) into the torch model
    released_tensors(model)       [(released name, float64 array)] of the model, experts
                                  split per expert, ready for the writer in export.py
"""
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
from k3_reference import LM_HEAD, PREFIX, load_checkpoint  # noqa: E402


def released_name(name):
    return LM_HEAD if name == "lm_head.weight" else PREFIX + name


def load_released(model, folder):
    cfg, w = load_checkpoint(folder)
    n = cfg["num_experts"]
    with torch.no_grad():
        for name, t in model.named_tensors():
            if ".experts.w" in name:
                base, mat = name.rsplit(".experts.", 1)
                parts = [w[f"{PREFIX}{base}.experts.{e}.{mat}.weight"] for e in range(n)]
                value = np.stack(parts)
            else:
                value = w[released_name(name)]
                if name.endswith("A_log"):
                    value = value.reshape(-1)[: t.shape[0]]
            t.copy_(torch.from_numpy(np.asarray(value).reshape(t.shape)))
    return cfg


def released_tensors(model):
    out = []
    for name, t in model.named_tensors():
        arr = t.detach().to(torch.float64).numpy()
        if ".experts.w" in name:
            base, mat = name.rsplit(".experts.", 1)
            for e in range(arr.shape[0]):
                out.append((f"{PREFIX}{base}.experts.{e}.{mat}.weight", arr[e]))
        else:
            out.append((released_name(name), arr))
    return out
