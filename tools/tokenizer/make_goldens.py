#!/usr/bin/env python3
"""Write the tokenizer fixtures: pattern, corpus, golden ids for both test vocabularies,
and the pre-tokenisation pieces, all from Python `tiktoken` (never downloads anything:
every Encoding is built here from ranks).

Outputs (fixtures/tokenizer/):
  pattern.txt         PAT_STR, one line, no trailing newline
  corpus.json         {"cases": [{"name", "text"}]}  (from corpus_cases.py)
  golden_tiny.json    ids for the tiny trained vocab (fixtures/tiny-mxfp4 tokenizer files)
  golden_o200k.json   ids for tiktoken-rs 0.12.1 o200k_base ranks + 256 added tokens at 199998
  golden_pieces.json  the pre-tokeniser's pieces per case, as tiktoken's Rust regex splits them

Usage (from the repo root, after train_bpe.py):  python3 tools/tokenizer/make_goldens.py
"""

import argparse
import base64
import hashlib
import json
import os
import sys

import tiktoken

sys.dont_write_bytecode = True  # keep tools/tokenizer free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kimi_pattern import PAT_STR, compile_py  # noqa: E402
from added_tokens import ADDED_TOKENS, special_tokens  # noqa: E402
from corpus_cases import all_cases  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
OUT = os.path.join(REPO, "fixtures", "tokenizer")
TINY_DIR = os.path.join(REPO, "fixtures", "tiny-mxfp4")
O200K_DEFAULT = os.path.expanduser(
    "~/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/tiktoken-rs-0.12.1/assets/o200k_base.tiktoken")
O200K_N_RANKS = 199998
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"


def sha256_file(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def load_ranks(path):
    """Parse a released-format ranks file ("<base64> <rank>" lines); check 0..n-1, unique."""
    ranks = {}
    with open(path, "rb") as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip(b"\r\n")
            if not line:
                continue
            tok, rank = line.split(b" ")
            tok = base64.b64decode(tok, validate=True)
            if tok in ranks:
                raise SystemExit("%s:%d duplicate token %r" % (path, lineno, tok))
            ranks[tok] = int(rank)
    if sorted(ranks.values()) != list(range(len(ranks))):
        raise SystemExit("%s: ranks are not exactly 0..%d" % (path, len(ranks) - 1))
    return ranks


def load_added(path):
    cfg = json.load(open(path, encoding="utf-8"))
    return {v["content"]: int(k) for k, v in cfg["added_tokens_decoder"].items()}


def build(name, ranks, specials):
    return tiktoken.Encoding(name=name, pat_str=PAT_STR, mergeable_ranks=ranks,
                             special_tokens=specials,
                             explicit_n_vocab=len(ranks) + len(specials))


def token_bytes(enc, t):
    return enc.decode_single_token_bytes(t)


def is_utf8(b):
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def decode_cases(enc, encoded, specials):
    """>= 10 id runs whose tokens are each invalid UTF-8 while the run is valid, plus
    invalid runs. Deterministic: corpus order, first occurrences."""
    special_ids = set(specials.values())
    windows = []  # (case, start, end) minimal windows
    for name, ids in encoded:
        if name == "long_mixed_document":
            continue
        i = 0
        while i < len(ids):
            t = ids[i]
            if t in special_ids or is_utf8(token_bytes(enc, t)):
                i += 1
                continue
            j, acc, ok = i, b"", False
            while j < len(ids) and ids[j] not in special_ids:
                tb = token_bytes(enc, ids[j])
                if is_utf8(tb):
                    break
                acc += tb
                j += 1
                if is_utf8(acc):
                    ok = True
                    break
            if ok:
                windows.append((name, i, j))
                i = j
            else:
                i += 1
    by_case = {}
    for w in windows:
        by_case.setdefault(w[0], []).append(w)
    ids_of = dict(encoded)
    chosen, seen = [], set()

    def add(ids, note):
        key = tuple(ids)
        if key in seen:
            return
        seen.add(key)
        b = enc.decode_bytes(ids)
        chosen.append({"ids": list(ids), "hex": b.hex(), "valid_utf8": is_utf8(b), "note": note})

    # one minimal window per case (first occurrence), in corpus order
    for name, ws in by_case.items():
        n, i, j = ws[0]
        add(ids_of[n][i:j], "%s: ids[%d:%d], one character or cluster" % (n, i, j))
    # longer runs: consecutive minimal windows glued together (several characters)
    for name in ["emoji_zwj_family", "emoji_flags", "chinese", "thai", "hangul", "devanagari"]:
        ws = by_case.get(name, [])
        for a in range(len(ws) - 1):
            if ws[a][2] == ws[a + 1][1]:
                b_end = a + 1
                while b_end + 1 < len(ws) and ws[b_end][2] == ws[b_end + 1][1]:
                    b_end += 1
                add(ids_of[name][ws[a][1]:ws[b_end][2]],
                    "%s: ids[%d:%d], several characters" % (name, ws[a][1], ws[b_end][2]))
                break
    n_valid = len(chosen)
    if n_valid < 10:
        raise SystemExit("only %d valid decode cases found" % n_valid)
    # invalid ones: a truncated 4-byte character; a special token inside a character;
    # a lone continuation byte.
    four = next(c for c in chosen if bytes.fromhex(c["hex"])[0] >= 0xF0 and len(c["ids"]) >= 2)
    add(four["ids"][:-1], "invalid: the same 4-byte character without its last token")
    bos = specials["[BOS]"]
    add(four["ids"][:1] + [bos] + four["ids"][1:], "invalid: [BOS] inside a 4-byte character")
    add([enc.encode_single_token(b"\x80")], "invalid: lone continuation byte 0x80")
    add([enc.encode_single_token(b"a"), enc.encode_single_token(b"\xff"), enc.encode_single_token(b"b")],
        "invalid: 0xFF between ASCII")
    # valid mixed with a special token
    add(four["ids"] + [bos], "valid: a 4-byte character's byte tokens then [BOS]")
    return chosen


def probe_pieces(text, max_len):
    """The exact pieces tiktoken's Rust regex produces: a vocab holding every char-boundary
    substring up to max_len bytes makes each piece a single token (tiktoken emits a piece
    whole when its bytes are a rank). Special tokens are NOT registered, so added-token
    strings are split like ordinary text here."""
    b = text.encode("utf-8")
    ranks = {bytes([i]): i for i in range(256)}
    bounds = [i for i in range(len(b) + 1) if i == len(b) or (b[i] & 0xC0) != 0x80]
    for a in range(len(bounds)):
        for c in range(a + 1, len(bounds)):
            s = b[bounds[a]:bounds[c]]
            if len(s) > max_len:
                break
            if s not in ranks:
                ranks[s] = len(ranks)
    enc = tiktoken.Encoding(name="probe", pat_str=PAT_STR, mergeable_ranks=ranks, special_tokens={})
    return [enc.decode_single_token_bytes(t).decode("utf-8") for t in enc.encode_ordinary(text)]


def dump_golden(path, header, ids, tail):
    """JSON with one case per line under "ids" (keeps diffs and files small)."""
    lines = ["{"]
    for k, v in header.items():
        lines.append("  %s: %s," % (json.dumps(k), json.dumps(v, ensure_ascii=False)))
    lines.append('  "ids": {')
    items = list(ids.items())
    for n, (k, v) in enumerate(items):
        lines.append("    %s: %s%s" % (json.dumps(k), json.dumps(v, separators=(",", ":")),
                                      "," if n + 1 < len(items) else ""))
    lines.append("  },")
    tk = list(tail.items())
    for n, (k, v) in enumerate(tk):
        if isinstance(v, list):
            body = ",\n".join("    " + json.dumps(x, ensure_ascii=False, separators=(", ", ": ")) for x in v)
            lines.append("  %s: [\n%s\n  ]%s" % (json.dumps(k), body, "," if n + 1 < len(tk) else ""))
        else:
            lines.append("  %s: %s%s" % (json.dumps(k), json.dumps(v, ensure_ascii=False),
                                         "," if n + 1 < len(tk) else ""))
    lines.append("}")
    text = "\n".join(lines) + "\n"
    json.loads(text)  # self-check
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


def goldens_for(enc, label, vocab_desc, vocab_sha, specials, cases, path):
    encoded = [(n, enc.encode(t, allowed_special="all")) for n, t in cases]
    failures = []
    for (n, t), (_, ids) in zip(cases, encoded):
        if enc.decode_bytes(ids) != t.encode("utf-8") or enc.decode(ids) != t:
            failures.append(n)
    header = {
        "vocab": vocab_desc,
        "vocab_sha256": vocab_sha,
        "n_vocab": enc.n_vocab,
        "added_token_base": min(specials.values()),
        "pattern": "fixtures/tokenizer/pattern.txt",
        "corpus": "fixtures/tokenizer/corpus.json",
        "tiktoken_version": tiktoken.__version__,
        "encode_call": 'encode(text, allowed_special="all")',
        "round_trip": {"checked": len(cases), "exact": len(cases) - len(failures), "failures": failures,
                       "check": "decode_bytes(ids) == text.encode('utf-8') and decode(ids) == text"},
    }
    dc = decode_cases(enc, encoded, specials)
    dump_golden(path, header, dict(encoded), {"decode_cases": dc})
    n_tok = sum(len(i) for _, i in encoded)
    print("%s: %d cases, %d tokens, round trip %d/%d exact, %d decode cases (%d invalid) -> %s (%d bytes)"
          % (label, len(cases), n_tok, len(cases) - len(failures), len(cases), len(dc),
             sum(not c["valid_utf8"] for c in dc), os.path.relpath(path, REPO), os.path.getsize(path)))
    if failures:
        print("  ROUND TRIP FAILURES:", failures)
    return dict(encoded)


def special_prefix_report(enc_tiny):
    """How tiktoken treats added tokens that are prefixes of each other (spec 12.3 says
    earliest position, longest first). Our 256 have no prefix pairs; probe with extra
    throw-away encodings, several insertion orders, in fresh processes' hash seeds."""
    pairs = [(a, b) for a in ADDED_TOKENS for b in ADDED_TOKENS if a != b and b.startswith(a)]
    print("added tokens that are a prefix of another:", pairs or "none")
    # overlapping specials, fed in both orders
    base = {bytes([i]): i for i in range(256)}
    results = set()
    for order in (["<|a|>", "<|a|>b", "<|a"], ["<|a", "<|a|>b", "<|a|>"], ["<|a|>b", "<|a|>", "<|a"]):
        sp = {s: 256 + ["<|a", "<|a|>", "<|a|>b"].index(s) for s in order}
        e = tiktoken.Encoding(name="ovl", pat_str=PAT_STR, mergeable_ranks=base, special_tokens=sp)
        results.add(tuple(e.encode("x<|a|>by", allowed_special="all")))
    print("overlap probe 'x<|a|>by' with specials <|a (256), <|a|> (257), <|a|>b (258):",
          sorted(results))
    return pairs, sorted(results)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--o200k", default=O200K_DEFAULT, help="path of tiktoken-rs's o200k_base.tiktoken")
    ap.add_argument("--skip-pieces", action="store_true", help="do not rewrite golden_pieces.json")
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)

    with open(os.path.join(OUT, "pattern.txt"), "w", encoding="utf-8", newline="") as f:
        f.write(PAT_STR)

    cases = all_cases()
    corpus = {"cases": [{"name": n, "text": t} for n, t in cases]}
    with open(os.path.join(OUT, "corpus.json"), "w", encoding="utf-8", newline="\n") as f:
        f.write(json.dumps(corpus, ensure_ascii=False, indent=1) + "\n")
    print("corpus: %d cases, %d UTF-8 bytes" % (len(cases), sum(len(t.encode()) for _, t in cases)))

    # tiny vocabulary, read back from the checkpoint files exactly as written
    tiny_model = os.path.join(TINY_DIR, "tiktoken.model")
    tiny_ranks = load_ranks(tiny_model)
    tiny_specials = load_added(os.path.join(TINY_DIR, "tokenizer_config.json"))
    assert len(tiny_ranks) == 512 and tiny_specials == special_tokens(512)
    enc_tiny = build("kimi_tiny_test", tiny_ranks, tiny_specials)
    goldens_for(enc_tiny, "tiny", "fixtures/tiny-mxfp4/tiktoken.model + tokenizer_config.json",
                sha256_file(tiny_model), tiny_specials, cases, os.path.join(OUT, "golden_tiny.json"))

    # o200k ranks from the tiktoken-rs crate (not copied into the repo)
    sha = sha256_file(args.o200k)
    if sha != O200K_SHA256:
        raise SystemExit("%s: sha256 %s != pinned %s" % (args.o200k, sha, O200K_SHA256))
    o_ranks = load_ranks(args.o200k)
    assert len(o_ranks) == O200K_N_RANKS, len(o_ranks)
    o_specials = special_tokens(O200K_N_RANKS)
    enc_o = build("kimi_o200k_test", o_ranks, o_specials)
    goldens_for(enc_o, "o200k", "tiktoken-rs 0.12.1 assets/o200k_base.tiktoken + 256 added tokens at 199998",
                sha, o_specials, cases, os.path.join(OUT, "golden_o200k.json"))

    # pre-tokeniser pieces through tiktoken's own (Rust) regex, vs the Python emulation
    if not args.skip_pieces:
        pat_py = compile_py()
        pieces, diffs = {}, []
        for n, t in cases:
            emulated = pat_py.findall(t)
            if n == "long_mixed_document":
                # too long for the substring probe: check the emulation instead by giving
                # tiktoken exactly the emulated pieces as ranks (a mismatch shows up)
                r = {bytes([i]): i for i in range(256)}
                for p in emulated:
                    r.setdefault(p.encode(), len(r))
                e = tiktoken.Encoding(name="chk", pat_str=PAT_STR, mergeable_ranks=r, special_tokens={})
                got = [e.decode_single_token_bytes(x) for x in e.encode_ordinary(t)]
                if got != [p.encode() for p in emulated]:
                    diffs.append(n)
                continue
            longest = max((len(p.encode()) for p in emulated), default=1)
            got = probe_pieces(t, min(len(t.encode()), max(64, 2 * longest + 16)))
            assert "".join(got) == t
            pieces[n] = got
            if got != emulated:
                diffs.append(n)
                print("  python-regex emulation differs on %s:" % n)
                for a, b in zip(got, emulated):
                    if a != b:
                        print("    tiktoken %r vs regex %r" % (a, b))
                        break
        doc = {"source": "tiktoken %s encode_ordinary (Rust regex) via a substring vocabulary; "
                         "added-token strings are NOT special here" % tiktoken.__version__,
               "pattern": "fixtures/tokenizer/pattern.txt",
               "python_regex_v1_emulation_differs_on": diffs,
               "pieces": pieces}
        path = os.path.join(OUT, "golden_pieces.json")
        lines = ["{"]
        for k in ("source", "pattern", "python_regex_v1_emulation_differs_on"):
            lines.append("  %s: %s," % (json.dumps(k), json.dumps(doc[k], ensure_ascii=False)))
        lines.append('  "pieces": {')
        items = list(pieces.items())
        for i, (k, v) in enumerate(items):
            lines.append("    %s: %s%s" % (json.dumps(k), json.dumps(v, ensure_ascii=False),
                                          "," if i + 1 < len(items) else ""))
        lines.append("  }\n}\n")
        text = "\n".join(lines)
        json.loads(text)
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        print("pieces: %d cases -> %s (%d bytes); python emulation differs on %s"
              % (len(pieces), os.path.relpath(path, REPO), os.path.getsize(path), diffs or "none"))

    special_prefix_report(enc_tiny)


if __name__ == "__main__":
    main()
