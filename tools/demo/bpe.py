"""Byte-level BPE for the demo model, in the released `tiktoken.model` format.

The same rules as `tools/tokenizer/train_bpe.py` (which trains the fixtures' 512 ranks):
text pre-split with the Kimi pattern, pairs counted within pieces weighted by piece
frequency, the most frequent pair merged (ties: the lexicographically smallest
(left bytes, right bytes)), ranks 0..255 the single bytes, rank 256+k merge k. That
script recounts every pair after every merge, fine for 256 merges; for the demo's few
thousand this one keeps pair counts and, per pair, the pieces holding it, and updates
only the pieces a merge touches (a heap with lazy deletion picks the best pair).

    train(text, n_ranks) -> {token bytes: rank}
    encoding(ranks)      -> a tiktoken.Encoding with the 256 added tokens after the ranks
"""
import collections
import heapq
import os
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tokenizer"))
from kimi_pattern import PAT_STR, compile_py  # noqa: E402
from added_tokens import special_tokens  # noqa: E402
from train_bpe import replace_pair, tiktoken_model_text  # noqa: E402,F401 (export.py uses the latter)


def _pairs(word):
    return zip(word, word[1:])


def train(text, n_ranks):
    pieces = collections.Counter(compile_py().findall(text))
    words = [[bytes([b]) for b in p.encode("utf-8")] for p in pieces]
    weights = list(pieces.values())
    counts = collections.Counter()
    where = collections.defaultdict(set)
    for i, (w, n) in enumerate(zip(words, weights)):
        for pair in _pairs(w):
            counts[pair] += n
            where[pair].add(i)
    heap = [(-c, a, b) for (a, b), c in counts.items()]
    heapq.heapify(heap)
    ranks = {bytes([i]): i for i in range(256)}
    while len(ranks) < n_ranks:
        if not heap:
            raise SystemExit(f"training text exhausted at {len(ranks)} ranks")
        neg, a, b = heapq.heappop(heap)
        if counts.get((a, b), 0) != -neg or neg == 0:
            continue  # stale entry
        new = a + b
        if new not in ranks:
            ranks[new] = len(ranks)
        for i in list(where.pop((a, b))):
            _merge_word(words, weights[i], i, (a, b), new, counts, where, heap)
        counts.pop((a, b), None)
    return ranks


def _merge_word(words, n, i, pair, new, counts, where, heap):
    """Replaces every (a, b) in word i by `new`, updating the pair counts and index."""
    old = words[i]
    for p in _pairs(old):
        counts[p] -= n
    out = replace_pair(old, pair, new)
    words[i] = out
    touched = set()
    for p in _pairs(out):
        counts[p] += n
        where[p].add(i)
        touched.add(p)
    for p in set(_pairs(old)) | touched:
        if p == pair:
            continue
        if p not in touched:
            where[p].discard(i)
        if counts[p] > 0:
            heapq.heappush(heap, (-counts[p], p[0], p[1]))


def encoding(ranks):
    import tiktoken

    return tiktoken.Encoding("k3-demo", pat_str=PAT_STR, mergeable_ranks=ranks,
                             special_tokens=special_tokens(len(ranks)))
