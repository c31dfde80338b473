#!/usr/bin/env python3
"""Held-out loss of released-layout checkpoints on the held-out novel ("Persuasion").

    python3 tools/demo/evaluate.py fixtures/k3-demo fixtures/tiny-mxfp4 [--untrained]

Each checkpoint is scored with its own tokenizer (its `tiktoken.model`), so the figure
that compares them is bits per UTF-8 byte of the text, not nats per token. The windows
are the ones train.py scores (256-token contexts, each from a fresh state). --untrained
also scores the demo's configuration as train.py initialises it before step 0: the
random-weight baseline with the demo's own tokenizer.
"""
import argparse
import base64
import json
import math
import os
import sys

import torch

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import corpus  # noqa: E402
import data  # noqa: E402
import k3_torch  # noqa: E402
import train  # noqa: E402
import weights  # noqa: E402


def ranks_of(folder):
    ranks = {}
    with open(os.path.join(folder, "tiktoken.model")) as f:
        for line in f:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def score(model, ranks, held, context):
    windows, held_bytes = data.held_out_windows(data.Tokens(ranks), held, context)
    nats = train.held_out_loss(model, windows)
    tokens = windows[:, 1:].numel()
    return dict(nats_per_token=nats, bits_per_byte=nats * tokens / held_bytes / math.log(2),
                tokens=tokens, bytes=held_bytes)


def released(folder):
    from k3_reference import load_checkpoint

    cfg, _ = load_checkpoint(folder)
    model = k3_torch.K3(cfg)
    weights.load_released(model, folder)
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folders", nargs="*")
    ap.add_argument("--untrained", action="store_true")
    ap.add_argument("--context", type=int, default=256)
    ap.add_argument("--work", default="/tmp/k3-demo-work")
    args = ap.parse_args()
    torch.set_num_threads(1)
    _, held = corpus.split(corpus.novels(args.work))
    out = {}
    for folder in args.folders:
        out[folder] = score(released(folder), ranks_of(folder), held, args.context)
        print(json.dumps({folder: out[folder]}), flush=True)
    if args.untrained:
        demo = os.path.join(HERE, "..", "..", "fixtures", "k3-demo")
        ranks = ranks_of(demo)
        model = k3_torch.K3(dict(train.CONFIG, vocab_size=len(ranks) + 256))
        torch.manual_seed(train.SEED)
        k3_torch.initialise(model, train.SEED)
        out["untrained"] = score(model, ranks, held, args.context)
        print(json.dumps({"untrained": out["untrained"]}), flush=True)


if __name__ == "__main__":
    main()
