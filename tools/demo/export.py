"""Writes the trained demo model as a released-layout checkpoint (K3-MODEL-SPEC.md §6).

    write(model, ranks, out, facts)

Layout as the release and the tiny fixtures (`tools/reference/make_checkpoints.py`):
nested `config.json` with `quantization_config` for MXFP4 experts; one shard per decoder
layer plus one for the model-level tensors, `model-000NN-of-0000MM.safetensors`, each
holding its trunk tensors (the F32 kinds, then BF16, each sorted by name) and then its
routed experts sorted by name as MXFP4 `weight_packed` / `weight_scale` pairs; the index;
`tiktoken.model` and `tokenizer_config.json` (256 added tokens after the ranks, the XTML
chat template); a README. BF16 is round-to-nearest-even of the float32 weights; the
experts go through the same quantiser as the fixtures'.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
sys.path.insert(0, os.path.join(HERE, "..", "tokenizer"))
import bpe  # noqa: E402
import weights  # noqa: E402
from added_tokens import tokenizer_config  # noqa: E402
from k3_reference import LM_HEAD, PREFIX  # noqa: E402
from make_checkpoints import F32_KINDS, mxfp4_quantize  # noqa: E402
from safetensors_io import encode, write_safetensors  # noqa: E402

TEMPLATE = os.path.join(HERE, "..", "tokenizer", "xtml_template.jinja")


def config_json(cfg):
    n, fal = cfg["num_hidden_layers"], list(cfg["full_attn_layers"])
    keep = ["hidden_size", "num_hidden_layers", "vocab_size", "rms_norm_eps", "num_attention_heads",
            "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
            "mla_use_output_gate", "num_experts", "num_experts_per_token", "num_shared_experts",
            "routed_expert_hidden_size", "moe_intermediate_size", "routed_scaling_factor",
            "moe_renormalize", "latent_moe_use_norm", "first_k_dense_replace", "intermediate_size",
            "attn_res_block_size", "activation_situ_beta", "activation_situ_linear_beta"]
    text = dict(model_type="kimi_k3_text", architectures=["KimiK3ForCausalLM"],
                **{k: cfg[k] for k in keep}, hidden_act="situ", num_nextn_predict_layers=0,
                tie_word_embeddings=False, torch_dtype="bfloat16",
                linear_attn_config=dict(num_heads=cfg["num_heads"], head_dim=cfg["head_dim"],
                                        short_conv_kernel_size=cfg["short_conv_kernel_size"],
                                        gate_lower_bound=cfg["gate_lower_bound"], use_full_rank_gate=True,
                                        full_attn_layers=fal,
                                        kda_layers=[i for i in range(1, n + 1) if i not in fal]))
    return dict(architectures=["KimiK3ForConditionalGeneration"], model_type="kimi_k3", text_config=text,
                tie_word_embeddings=False, torch_dtype="bfloat16",
                quantization_config=dict(quant_method="mxfp4", format="mxfp4", group_size=32,
                                         weight_dtype="e2m1", scale_dtype="e8m0", modules=["experts"]))


def shard_of(name, n_layers):
    """Decoder layer ℓ's tensors go to shard ℓ + 1, the model-level ones to the last."""
    rest = name[len(PREFIX):] if name.startswith(PREFIX) else ""
    if rest.startswith("layers."):
        return int(rest.split(".")[1]) + 1
    return n_layers + 1


def entries_for(tensors):
    trunk, experts = [], []
    for name, arr in tensors:
        if ".experts." in name:
            packed, scale = mxfp4_quantize(arr)
            base = name[: -len(".weight")]
            experts.append((base + ".weight_packed", "U8", list(packed.shape), encode("U8", packed)))
            experts.append((base + ".weight_scale", "U8", list(scale.shape), encode("U8", scale)))
        else:
            dtype = "F32" if any(name.endswith(k) for k in F32_KINDS) else "BF16"
            trunk.append((name, dtype, list(arr.shape), encode(dtype, arr)))
    by_name = lambda e: e[0]  # noqa: E731
    return (sorted([e for e in trunk if e[1] == "F32"], key=by_name) +
            sorted([e for e in trunk if e[1] == "BF16"], key=by_name) + sorted(experts, key=by_name))


def write_facts(out, facts):
    _write_json(os.path.join(out, "training.json"), facts, indent=2)


def write(model, ranks, out):
    cfg = model.cfg
    n = cfg["num_hidden_layers"]
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        if f.endswith(".safetensors"):
            os.remove(os.path.join(out, f))
    groups = {}
    for name, arr in weights.released_tensors(model):
        groups.setdefault(shard_of(name, n), []).append((name, arr))
    weight_map, total = {}, 0
    for i in sorted(groups):
        fname = f"model-{i:05d}-of-{n + 1:06d}.safetensors"
        entries = entries_for(groups[i])
        _, nbytes = write_safetensors(os.path.join(out, fname), entries, pad_header_to_8=True)
        total += nbytes
        weight_map.update({e[0]: fname for e in entries})
    _write_json(os.path.join(out, "model.safetensors.index.json"),
                {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}, indent=1)
    _write_json(os.path.join(out, "config.json"), config_json(cfg), indent=2)
    with open(os.path.join(out, "tiktoken.model"), "w", encoding="ascii", newline="\n") as f:
        f.write(bpe.tiktoken_model_text(ranks))
    tc = tokenizer_config(len(ranks))
    tc["chat_template"] = open(TEMPLATE, encoding="utf-8").read()
    _write_json(os.path.join(out, "tokenizer_config.json"), tc, indent=2)
    return total


def _write_json(path, obj, indent):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        json.dump(obj, f, indent=indent, ensure_ascii=False)
        f.write("\n")


__all__ = ["write", "config_json", "LM_HEAD"]
