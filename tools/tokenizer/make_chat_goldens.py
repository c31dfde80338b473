#!/usr/bin/env python3
"""Golden token ids for chat-template rendering, from Python jinja2 + tiktoken.

Renders tools/tokenizer/xtml_template.jinja (the template stored as `chat_template` in
fixtures/tiny-mxfp4/tokenizer_config.json) for a multi-turn conversation in instruct and
thinking modes with Python's jinja2 (the engine the Hugging Face stack uses), encodes the
text with tiktoken built from the tiny fixture vocabulary, and writes
fixtures/tokenizer/golden_chat.json. It also stores the template into the tiny-mxfp4
tokenizer_config.json (the other two fixtures keep none, so the engine's built-in
renderer is exercised there).

Usage (repo root, after train_bpe.py):  python3 tools/tokenizer/make_chat_goldens.py
"""

import base64
import json
import os
import sys

import jinja2
import tiktoken

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kimi_pattern import PAT_STR  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
TINY = os.path.join(REPO, "fixtures", "tiny-mxfp4")

CONVERSATION = [
    {"role": "system", "content": "You are a concise assistant. Reply in the user's language."},
    {"role": "user", "content": "What is the capital of France?"},
    {"role": "assistant", "content": "Paris.", "think": "The user asks a geography question."},
    {"role": "user", "content": "Et de l'Allemagne ? 🇩🇪 Réponds <b>court</b>."},
]


def encoding():
    ranks = {}
    with open(os.path.join(TINY, "tiktoken.model"), "rb") as f:
        for line in f:
            b64, rank = line.split()
            ranks[base64.b64decode(b64)] = int(rank)
    cfg = json.load(open(os.path.join(TINY, "tokenizer_config.json")))
    special = {v["content"]: int(k) for k, v in cfg["added_tokens_decoder"].items()}
    return tiktoken.Encoding("k3-tiny", pat_str=PAT_STR, mergeable_ranks=ranks, special_tokens=special)


def main():
    source = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "xtml_template.jinja")).read()
    env = jinja2.Environment()
    template = env.from_string(source)
    enc = encoding()
    cases = []
    for thinking in (False, True):
        for upto, gen in ((2, True), (3, False), (4, True)):
            msgs = CONVERSATION[:upto]
            text = template.render(messages=msgs, add_generation_prompt=gen, thinking=thinking)
            cases.append({
                "thinking": thinking,
                "n_messages": upto,
                "add_generation_prompt": gen,
                "text": text,
                "ids": enc.encode(text, allowed_special="all"),
            })
    out = {
        "note": "jinja2 %s rendering of tools/tokenizer/xtml_template.jinja, tiktoken %s ids with the tiny vocab"
        % (jinja2.__version__, tiktoken.__version__),
        "conversation": CONVERSATION,
        "cases": cases,
    }
    with open(os.path.join(REPO, "fixtures", "tokenizer", "golden_chat.json"), "w") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    cfg_path = os.path.join(TINY, "tokenizer_config.json")
    cfg = json.load(open(cfg_path))
    cfg["chat_template"] = source
    with open(cfg_path, "w") as f:
        json.dump(cfg, f, ensure_ascii=False, indent=2)
        f.write("\n")
    print("wrote golden_chat.json with %d cases; chat_template stored in tiny-mxfp4" % len(cases))


if __name__ == "__main__":
    main()
