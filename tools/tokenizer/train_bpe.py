#!/usr/bin/env python3
"""Train the tiny byte-level BPE vocabulary and write the tiny checkpoints' tokenizer files.

Rank-based, tiktoken style: the 256 single bytes get ranks 0..255 in byte order, then each
merge gets the next rank; a merged token's bytes are the concatenation of its two parts.
Training text: Debian's /usr/share/common-licenses/GPL-3 (package base-files), pre-split
with the Kimi pattern (Python `regex` emulation, VERSION1), pair counts taken within
pieces weighted by piece frequency, 256 merges -> exactly 512 ranks. Deterministic: the
most frequent pair wins, ties broken by the lexicographically smallest byte pair
(compared as (left bytes, right bytes)).

If a winning pair's concatenation were already a token (reachable by another merge path),
the pieces are merged into that existing token without spending a rank; this does not
happen for the pinned input but keeps the byte strings unique if it ever did.

Writes, identically, into each of fixtures/tiny-mxfp4, tiny-f32, tiny-bf16-nonorm:
  tiktoken.model          512 lines "<base64 bytes> <rank>", rank order, "\n", trailing newline
  tokenizer_config.json   256 added tokens at ids 512..767 (see added_tokens.py)

Usage (from the repo root):  python3 tools/tokenizer/train_bpe.py
"""

import argparse
import base64
import collections
import hashlib
import json
import os
import sys

sys.dont_write_bytecode = True  # keep tools/tokenizer free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kimi_pattern import compile_py  # noqa: E402
from added_tokens import tokenizer_config  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DEFAULT_SOURCE = "/usr/share/common-licenses/GPL-3"
# base-files 12.4+deb12u11 (Debian 12); the file is the unchanged FSF GPLv3 text.
EXPECTED_SHA256 = "3972dc9744f6499f0f9b2dbf76696f2ae7ad8af9b23dde66d6af86c9dfb36986"
N_MERGES = 256
CHECKPOINTS = ["tiny-mxfp4", "tiny-f32", "tiny-bf16-nonorm"]
ADDED_BASE = 512


def train(text, n_merges):
    pat = compile_py()
    piece_counts = collections.Counter(pat.findall(text))
    # Each piece is a list of token byte strings; work on distinct pieces with weights.
    words = [[bytes([b]) for b in p.encode("utf-8")] for p in piece_counts]
    weights = list(piece_counts.values())
    ranks = {bytes([i]): i for i in range(256)}
    merges = []  # (left, right) in rank order (for the log)
    while len(ranks) < 256 + n_merges:
        pairs = collections.Counter()
        for w, n in zip(words, weights):
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] += n
        if not pairs:
            raise SystemExit("training text exhausted before %d merges" % n_merges)
        best_count = max(pairs.values())
        best = min(p for p, c in pairs.items() if c == best_count)
        new = best[0] + best[1]
        if new not in ranks:
            ranks[new] = len(ranks)
            merges.append((best, best_count))
        else:
            print("note: %r already a token; merging without a new rank" % new, file=sys.stderr)
        for i, w in enumerate(words):
            if len(w) >= 2:
                words[i] = replace_pair(w, best, new)
    return ranks, merges


def replace_pair(word, pair, new):
    """`word` with every non-overlapping (a, b) == `pair`, left to right, replaced by `new`."""
    out, j = [], 0
    while j < len(word):
        if j + 1 < len(word) and (word[j], word[j + 1]) == pair:
            out.append(new)
            j += 2
        else:
            out.append(word[j])
            j += 1
    return out


def tiktoken_model_text(ranks):
    items = sorted(ranks.items(), key=lambda kv: kv[1])
    assert [r for _, r in items] == list(range(len(items)))
    return "".join("%s %d\n" % (base64.b64encode(tok).decode("ascii"), r) for tok, r in items)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", default=DEFAULT_SOURCE)
    ap.add_argument("--allow-other-source", action="store_true",
                    help="do not insist on the pinned sha256 of the training text")
    ap.add_argument("--dry-run", action="store_true", help="train and print, write nothing")
    args = ap.parse_args()

    raw = open(args.source, "rb").read()
    sha = hashlib.sha256(raw).hexdigest()
    if sha != EXPECTED_SHA256 and not args.allow_other_source:
        raise SystemExit("%s: sha256 %s != pinned %s" % (args.source, sha, EXPECTED_SHA256))
    text = raw.decode("utf-8")

    ranks, merges = train(text, N_MERGES)
    assert len(ranks) == 512
    model = tiktoken_model_text(ranks)
    config = json.dumps(tokenizer_config(ADDED_BASE), indent=2, ensure_ascii=False) + "\n"

    print("source %s (%d bytes, sha256 %s)" % (args.source, len(raw), sha))
    for (a, b), c in merges[:12]:
        print("  merge %-12r + %-12r -> rank %d (count %d)" % (a, b, ranks[a + b], c))
    print("  ... last: %r rank %d" % (max(ranks, key=ranks.get), max(ranks.values())))
    print("tiktoken.model sha256 %s" % hashlib.sha256(model.encode()).hexdigest())
    print("tokenizer_config.json sha256 %s" % hashlib.sha256(config.encode()).hexdigest())
    if args.dry_run:
        return
    for ck in CHECKPOINTS:
        d = os.path.join(REPO, "fixtures", ck)
        if not os.path.isdir(d):
            raise SystemExit("missing checkpoint folder %s" % d)
        with open(os.path.join(d, "tiktoken.model"), "w", encoding="ascii", newline="\n") as f:
            f.write(model)
        with open(os.path.join(d, "tokenizer_config.json"), "w", encoding="utf-8", newline="\n") as f:
            f.write(config)
        print("wrote %s/{tiktoken.model,tokenizer_config.json}" % d)


if __name__ == "__main__":
    main()
