#!/usr/bin/env python3
"""Writes fuzz/data/micro.ckpt and the seed corpora fuzz/corpus/<target>/ (small, real-shaped).

Sources: a `k3 synth` micro checkpoint and its `k3 pack` trunk (made by this script with the
k3 binary given), the repository's fixtures (fixtures/tiny-mxfp4: config, tokenizer files,
one shard header), tools/tokenizer/xtml_template.jinja, and a 512-request excerpt of the
released expert trace (../shared/fixtures/released/expert_trace.bin: 4 KiB of 800 KiB).
Never run in CI; rerun after a format change:  python3 fuzz/make_seeds.py target-wt/debug/k3
The section marker and the input layouts are the ones documented in fuzz/src/lib.rs and
each target's header.
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FUZZ = os.path.join(ROOT, "fuzz")
SECTION = b"\n\0-8<-\0\n"
MICRO_CONFIG = {
    "num_hidden_layers": 2, "full_attn_layers": [2], "first_k_dense_replace": 1, "hidden_size": 16,
    "vocab_size": 64, "num_heads": 2, "head_dim": 8, "short_conv_kernel_size": 4, "num_attention_heads": 2,
    "q_lora_rank": 8, "kv_lora_rank": 8, "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 8,
    "num_experts": 4, "num_experts_per_token": 1, "num_shared_experts": 1, "routed_expert_hidden_size": 32,
    "moe_intermediate_size": 32, "intermediate_size": 16, "attn_res_block_size": 1,
}


def u64(v):
    return struct.pack("<Q", v)


def join(parts):
    return SECTION.join(parts)


def shard_head(path):
    """(file length, header bytes) of a safetensors file: reads the prefix and header only."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = f.read(n)
    return os.path.getsize(path), header


def write(target, name, data):
    d = os.path.join(FUZZ, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def checkpoint_sections(folder, with_index=True):
    shards = sorted(n for n in os.listdir(folder) if n.endswith(".safetensors"))
    parts = [open(os.path.join(folder, "config.json"), "rb").read()]
    index = os.path.join(folder, "model.safetensors.index.json")
    parts.append(open(index, "rb").read() if with_index and os.path.exists(index) else b"")
    for s in shards:
        file_len, header = shard_head(os.path.join(folder, s))
        parts.append(u64(file_len) + header)
    return parts, shards


def plan_params(trunk, cache, avail, total, context, io_threads, flags, limit=0, usage=0):
    return u64(trunk) + u64(cache) + u64(avail) + u64(total) + u64(context) + bytes([io_threads, flags]) \
        + u64(limit) + u64(usage)


def main():
    k3 = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(ROOT, "target", "debug", "k3")
    tmp = tempfile.mkdtemp()
    try:
        cfg = os.path.join(tmp, "micro.json")
        json.dump(MICRO_CONFIG, open(cfg, "w"))
        micro, trunk = os.path.join(tmp, "micro"), os.path.join(tmp, "trunk")
        subprocess.run([k3, "synth", "--out", micro, "--config", cfg], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([k3, "pack", "--model", micro, "--out", trunk], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        seeds(micro, trunk)
    finally:
        shutil.rmtree(tmp)


def seeds(micro, trunk):
    os.makedirs(os.path.join(FUZZ, "data"), exist_ok=True)
    # Regenerate the seeds; keep every fuzz finding (`finding-*`), which no rule here makes.
    for d, _, names in os.walk(os.path.join(FUZZ, "corpus")):
        for n in names:
            if not n.startswith("finding-"):
                os.remove(os.path.join(d, n))
    parts, shards = checkpoint_sections(micro)
    ckpt = join(parts)
    open(os.path.join(FUZZ, "data", "micro.ckpt"), "wb").write(ckpt)
    tiny = os.path.join(ROOT, "fixtures", "tiny-mxfp4")

    # shard_header: [file length][prefix][header] of each micro shard and one tiny shard.
    heads = [shard_head(os.path.join(micro, s)) for s in shards]
    heads.append(shard_head(os.path.join(tiny, "model-00001-of-000014.safetensors")))
    for i, (file_len, header) in enumerate(heads):
        write("shard_header", f"shard-{i}", u64(file_len) + u64(len(header)) + header)
    edge = json.dumps({"__metadata__": {"format": "pt"}, "a": {"dtype": "F32", "shape": [], "data_offsets": [0, 4]},
                       "e": {"dtype": "BF16", "shape": [0, 3], "data_offsets": [4, 4]},
                       "m": {"dtype": "U8", "shape": [2, 2], "data_offsets": [4, 8]}}).encode() + b"   "
    write("shard_header", "scalar-empty-padded", u64(8 + len(edge) + 8) + u64(len(edge)) + edge)

    # checkpoint_plan: parameters + the micro checkpoint.
    gb = 10**9
    for name, p in [("fixed-streamed", plan_params(20_000, 20_000, 8 * gb, 16 * gb, 4096, 4, 1 | 4)),
                    ("fixed-resident", plan_params(10**6, 10**6, 0, 0, 512, 1, 0)),
                    ("auto-cgroup", plan_params(0, 0, 8 * gb, 16 * gb, 36_864, 8, 2 | 4 | 8, 4 * gb, gb)),
                    ("unlimited", plan_params(2**64 - 1, 2**64 - 1, 2**64 - 1, 2**64 - 1, 1, 255, 1))]:
        write("checkpoint_plan", name, join([p] + parts))
    write("checkpoint_plan", "no-index", join([plan_params(14_000, 9_000, 0, 0, 100, 2, 1)] + parts[:1] + [b""]
                                             + parts[2:]))

    # plan_numbers: footprints of K3's shape and of the micro model.
    def words(ws):
        return b"".join(u64(w) for w in ws)
    k3 = [110 * gb, 13 * gb, 200 * gb, 256 * gb, 0, 0, 4096, 16, 1 | 4, 17_547_264, 92 * 896, 16, 92,
          4_700_000_000, 2_350_000_000, 626_000_000, 2_370_000, 64 * 7168 * 4 * 12] + [1_270_000_000] * 93
    write("plan_numbers", "k3-server", words(k3))
    k3[8] = 2
    write("plan_numbers", "k3-auto", words(k3))
    write("plan_numbers", "micro", words([20_000, 20_000, 0, 0, 0, 0, 4096, 4, 1, 1632, 4, 1, 1, 4192, 2048,
                                          1088, 144, 196_608, 8192, 5664]))

    # config_json: the fixtures' configs (nested form), the micro config, a flat form.
    for d in ["tiny-mxfp4", "tiny-f32", "tiny-bf16-nonorm"]:
        write("config_json", d, open(os.path.join(ROOT, "fixtures", d, "config.json"), "rb").read())
    write("config_json", "micro", parts[0])
    nested = json.load(open(os.path.join(tiny, "config.json")))
    flat = {k: v for k, v in nested["text_config"].items() if k != "linear_attn_config"}
    lin = nested["text_config"]["linear_attn_config"]
    flat.update({"kda_num_heads": lin["num_heads"], "kda_head_dim": lin["head_dim"],
                 "short_conv_kernel_size": lin["short_conv_kernel_size"], "gate_lower_bound": lin["gate_lower_bound"],
                 "full_attn_layers": lin["full_attn_layers"]})
    write("config_json", "flat", json.dumps(flat).encode())

    # index_json: the micro index, and one without metadata.
    index = json.load(open(os.path.join(micro, "model.safetensors.index.json")))
    write("index_json", "micro", parts[1])
    write("index_json", "no-metadata", json.dumps({"weight_map": index["weight_map"]}).encode())

    # tokenizer_files: the tiny ranks, a config excerpt (a few added tokens), texts.
    ranks = open(os.path.join(tiny, "tiktoken.model"), "rb").read()
    tcfg = json.load(open(os.path.join(tiny, "tokenizer_config.json")))
    decoder = dict(list(tcfg["added_tokens_decoder"].items())[:12])
    small = {"added_tokens_decoder": decoder, "bos_token": tcfg["bos_token"],
             "eos_token": {"content": decoder["513"]["content"]}, "chat_template": tcfg["chat_template"]}
    small_bytes = json.dumps(small).encode()
    for name, text in [("plain", "Hello, world! 123 \u00e9\u4e16\u754c"),
                       ("added", "[BOS]<|open|>message<|sep|>hi  there\r\n\t x<|close|>"),
                       ("spaces", " " * 40 + "\n\n" + "a" * 30)]:
        write("tokenizer_files", name, join([ranks, small_bytes, text.encode()]))
    write("tokenizer_files", "full-config", join([ranks, open(os.path.join(tiny, "tokenizer_config.json"), "rb").read(),
                                                  b"<|open|>x"]))
    few = b"".join(line + b"\n" for line in ranks.splitlines()[:40])
    write("tokenizer_files", "few-ranks", join([few, b'{"added_tokens_decoder": {}}', b"abc"]))

    # trunk_manifest: the micro trunk with sources as the target reports them, and trunk.bin's length.
    manifest = json.load(open(os.path.join(trunk, "trunk.json")))
    for s in manifest["sources"]:
        s["modified_ns"] = 1
    bin_len = os.path.getsize(os.path.join(trunk, "trunk.bin"))
    write("trunk_manifest", "micro", join([json.dumps(manifest).encode(), u64(bin_len)]))
    write("trunk_manifest", "short-bin", join([json.dumps(manifest).encode(), u64(bin_len - 4096)]))

    # chat_template: the fixture's template, the XTML template, a loop, a recursion.
    xtml = open(os.path.join(ROOT, "tools", "tokenizer", "xtml_template.jinja"), "rb").read()
    msgs = "be brief\x01hello\x01hi\x02thinking\x01how are you?".encode()
    write("chat_template", "fixture", join([tcfg["chat_template"].encode(), msgs, b"\x03"]))
    write("chat_template", "xtml", join([xtml, msgs, b"\x02"]))
    write("chat_template", "loop", join([b"{% for i in range(100) %}{{ messages[0].content * 10 }}{% endfor %}",
                                         msgs, b"\x00"]))
    write("chat_template", "macro", join([b"{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ n }}{% endif %}"
                                          b"{% endmacro %}{{ f(30) }}", b"x", b"\x01"]))

    # expert_trace: a 512-request excerpt of the released trace, and a tiny synthetic one.
    released = os.path.join(ROOT, "..", "shared", "fixtures", "released", "expert_trace.bin")
    if os.path.exists(released):
        with open(released, "rb") as f:
            write("expert_trace", "released-excerpt", bytes([64]) + f.read(512 * 8))
    write("expert_trace", "small", bytes([3]) + b"".join(struct.pack("<ii", l, e) for l, e in
                                                         [(1, 0), (1, 1), (2, 0), (1, 0), (2, 5), (1, 1)]))

    # download_journal: a header line and three durable chunks over 192 bytes, then a torn line.
    data = bytes((i * 7 + 3) % 251 for i in range(200))
    header = {"k3_journal": 1, "path": "model-00001-of-000096.safetensors", "size": 1 << 16,
              "sha256": "5d41402abc4b2a76b9719d911017c592ae5e3b6d3b1c8f7e1a9f3b2c4d5e6f70",
              "commit": "0123456789abcdef0123456789abcdef01234567"}
    iv = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]
    lines = [json.dumps(header, separators=(",", ":"))]
    for i in range(3):
        start, end = 64 * i, 64 * (i + 1)
        state = b"".join(struct.pack("<I", w) for w in iv) + u64(i + 1) + bytes(64)
        lines.append(json.dumps({"index": i, "start": start, "end": end, "crc32": zlib.crc32(data[start:end]),
                                 "state": state.hex()}, separators=(",", ":")))
    text = ("\n".join(lines) + "\n").encode()
    write("download_journal", "three-chunks", join([text, data]))
    write("download_journal", "torn-tail", join([text + b'{"index":3,"sta', data]))

    # api_request: chat and completion bodies.
    chat = {"model": "k3", "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "a"},
                                        {"role": "assistant", "content": "b", "reasoning_content": "t"},
                                        {"role": "user", "content": [{"type": "text", "text": "c"}]}],
            "stream": True, "temperature": 0.7, "top_p": 0.9, "seed": 3, "max_tokens": 64, "stop": ["END", "\n\n"],
            "chat_template_kwargs": {"thinking": True}}
    write("api_request", "chat", b"\x00" + json.dumps(chat).encode())
    write("api_request", "chat-greedy", b"\x00" + json.dumps({"model": "k3", "temperature": 0, "messages": [
        {"role": "user", "content": "hi"}], "max_completion_tokens": 5, "n": 1}).encode())
    write("api_request", "completion", b"\x01" + json.dumps({"model": "k3", "prompt": ["Once"], "stop": "x",
                                                              "max_tokens": 16}).encode())


if __name__ == "__main__":
    main()
