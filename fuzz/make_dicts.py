#!/usr/bin/env python3
"""Writes the fuzz targets' dictionaries, fuzz/dict/<target>.dict (libFuzzer `-dict=`).

Each dictionary holds the section marker that separates the files of one input (fuzz/src/lib.rs
`SECTION`), every JSON key and every short JSON string value found in the target's committed
seed corpus (fuzz/corpus/<target>/, its sections parsed as JSON where they are JSON), JSON's
own tokens, and the target's extra words below (template syntax, dtypes, XTML markers). So a
mutation can write a whole key or marker at once instead of finding it a byte at a time.
Never run in CI; rerun after make_seeds.py:  python3 fuzz/make_dicts.py
"""
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FUZZ = os.path.join(ROOT, "fuzz")
SECTION = b"\n\0-8<-\0\n"
JSON_TOKENS = ["{", "}", "[", "]", ":", ",", '""', "true", "false", "null", "-0", "1e308", "\\u0000", "\\ud800"]
# Targets whose input is the section format (fuzz/src/lib.rs `sections`).
SECTIONED = {"chat_template", "checkpoint_plan", "download_journal", "index_json", "tokenizer_files",
             "tool_calls", "trunk_manifest"}
# K3's chat markers (spec §13, the XTML template).
XTML = ["<|open|>", "<|close|>", "<|sep|>", "<|end_of_msg|>", "think", "response", "message role=\"assistant\""]
# Targets whose input holds no text: coded trunk bytes, plan numbers, an expert trace.
BINARY = {"trunk_codec", "plan_numbers", "expert_trace"}
EXTRA = {
    "shard_header": ["BF16", "F32", "F16", "U8", "I8", "I32", "I64", "F8_E4M3", "F8_E5M2", "BOOL",
                     "dtype", "shape", "data_offsets", "__metadata__"],
    "checkpoint_plan": ["BF16", "F32", "U8", "dtype", "shape", "data_offsets", "__metadata__", "weight_map"],
    "index_json": ["weight_map", "metadata", "total_size"],
    "chat_template": ["{%", "%}", "{{", "}}", "{#", "#}", "{%-", "-%}", "{{-", "-}}", "for", "in", "endfor", "if",
                      "elif", "else", "endif", "macro", "endmacro", "call", "endcall", "set", "endset", "filter",
                      "endfilter", "namespace", "loop", "loop.index", "loop.last", "not", "and", "or", "is",
                      "defined", "none", "|tojson", "|length", "|trim", "|join", "|items", "raise_exception",
                      "messages", "message", "role", "content", "tools", "tool_calls", "add_generation_prompt"] + XTML,
    "tokenizer_files": ["added_tokens_decoder", "bos_token", "eos_token", "pad_token", "unk_token", "content",
                        "special", "=="] + XTML,
    "api_request": ["model", "messages", "role", "system", "user", "assistant", "tool", "content", "tools",
                    "tool_choice", "tool_call_id", "function", "name", "arguments", "parameters", "type",
                    "stream", "max_tokens", "max_completion_tokens", "temperature", "top_p", "seed", "stop",
                    "thinking", "reasoning_effort", "response_format", "json_schema", "required", "auto", "none"],
    "tool_calls": ["tools", "call", "argument", "json", "call tool=\"", "index=\"", "argument key=\"", "type=\"",
                   "string", "number", "integer", "boolean", "object", "array", "null"],
}


def json_words(value, out):
    """Every key, and every string value up to 64 bytes, of a parsed JSON value."""
    if isinstance(value, dict):
        for k, v in value.items():
            out.add(k)
            json_words(v, out)
    elif isinstance(value, list):
        for v in value:
            json_words(v, out)
    elif isinstance(value, str) and 0 < len(value.encode()) <= 64:
        out.add(value)


def seed_words(target):
    words = set()
    folder = os.path.join(FUZZ, "corpus", target)
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), "rb") as f:
            data = f.read()
        for part in data.split(SECTION) if target in SECTIONED else [data]:
            # A shard section is `[u64 file length][header]`; a journal is JSON lines.
            for candidate in [part, part[8:]] + part.split(b"\n"):
                try:
                    json_words(json.loads(candidate.decode()), words)
                except (UnicodeDecodeError, json.JSONDecodeError):
                    continue
    # Numbers as keys (a tokenizer's added-token ids) are not words.
    return {w for w in words if not w.isdigit()}


def entry(word):
    """A dictionary line: the word as a quoted string, bytes outside printable ASCII escaped."""
    data = word if isinstance(word, bytes) else word.encode()
    body = "".join(chr(b) if 32 <= b < 127 and b not in (34, 92) else f"\\x{b:02X}" for b in data)
    return f'"{body}"'


def main():
    os.makedirs(os.path.join(FUZZ, "dict"), exist_ok=True)
    for target in sorted(os.listdir(os.path.join(FUZZ, "corpus"))):
        if target in BINARY:
            continue  # bytes and numbers, no words: no dictionary
        words = seed_words(target) | set(EXTRA.get(target, []))
        lines = [f"# {target}: written by fuzz/make_dicts.py"]
        if target in SECTIONED:
            lines.append(entry(SECTION))
        lines += [entry(w) for w in JSON_TOKENS]
        lines += [entry(w) for w in sorted(words)]
        with open(os.path.join(FUZZ, "dict", f"{target}.dict"), "w") as f:
            f.write("\n".join(lines) + "\n")
        print(f"{target}: {len(lines) - 1} entries")


if __name__ == "__main__":
    main()
