#!/usr/bin/env python3
"""Train the demo model: a small Kimi K3-shaped model on Jane Austen's novels.

    python3 tools/demo/train.py [--steps N] [--out fixtures/k3-demo] [--work DIR]

Everything is fixed: the text (corpus.py, a pinned Debian package), the tokenizer
(bpe.py, 4,096 ranks trained on the five training novels), the seed, the batch stream
and the schedule, so the same command gives the same weights on the same machine
(PyTorch's CPU kernels are deterministic for a fixed thread count; --threads is 1:
on two cores two threads were 3-5x slower than one whenever anything else ran).
The last quarter of the steps trains through the MXFP4 rounding of the routed experts
(straight-through), so the stored experts are the ones the model learnt with. Then
export.py writes the checkpoint in the released layout, and the held-out loss is
measured on "Persuasion" in float32 and again from the written files (BF16 trunk,
MXFP4 experts).
"""
import argparse
import json
import math
import os
import sys
import time

import torch

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bpe  # noqa: E402
import corpus  # noqa: E402
import data  # noqa: E402
import export  # noqa: E402
import k3_torch  # noqa: E402
import weights  # noqa: E402

N_RANKS = 4096
SEED = 20261202
CONFIG = dict(
    hidden_size=128, num_hidden_layers=8, rms_norm_eps=1e-5,
    num_heads=4, head_dim=32, short_conv_kernel_size=4, gate_lower_bound=-5.0,
    num_attention_heads=4, q_lora_rank=64, kv_lora_rank=32, qk_nope_head_dim=24,
    qk_rope_head_dim=8, v_head_dim=32, mla_use_output_gate=True,
    num_experts=8, num_experts_per_token=2, num_shared_experts=1,
    routed_expert_hidden_size=64, moe_intermediate_size=128, routed_scaling_factor=1.0,
    moe_renormalize=True, latent_moe_use_norm=True, first_k_dense_replace=1,
    intermediate_size=384, attn_res_block_size=2, activation_situ_beta=4.0,
    activation_situ_linear_beta=25.0, full_attn_layers=[4, 8],
)
BIAS_STEP = 1e-3  # auxiliary-loss-free balancing: the router bias moves this much per step


def loss_of(model, batch):
    logits = model(batch[:, :-1])
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))


def held_out_loss(model, windows, batch=8):
    """Mean nats per predicted token over the held-out windows."""
    total, n = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(windows), batch):
            w = windows[i: i + batch]
            total += loss_of(model, w).item() * w[:, 1:].numel()
            n += w[:, 1:].numel()
    return total / n


def balance(model, loads):
    """Moves each MoE layer's router bias towards the experts that got fewer tokens."""
    moe = [n for n, _ in model.named_tensors() if n.endswith("e_score_correction_bias")]
    with torch.no_grad():
        for name, load in zip(moe, loads):
            load = load.float()
            model.w(name).add_(BIAS_STEP * torch.sign(load.mean() - load))


def schedule(step, steps, peak, warmup=100):
    if step < warmup:
        return peak * (step + 1) / warmup
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * (step - warmup) / (steps - warmup))))


def train(model, batches, windows, args, log):
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and "embed" not in n]
    rest = [p for n, p in model.named_parameters() if not (p.dim() >= 2 and "embed" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95))
    qat_from = int(args.steps * 0.75)
    start = time.time()
    for step in range(args.steps):
        model.mxfp4 = step >= qat_from
        for g in opt.param_groups:
            g["lr"] = schedule(step, args.steps, args.lr)
        batch = batches.next(args.batch)
        loads = []
        logits = model(batch[:, :-1], loads)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        balance(model, loads)
        if step % args.log_every == 0 or step == args.steps - 1:
            line = dict(step=step, loss=round(loss.item(), 4), seconds=round(time.time() - start, 1),
                        mxfp4=model.mxfp4)
            if step % (args.log_every * 10) == 0 or step == args.steps - 1:
                line["held_out"] = round(held_out_loss(model, windows[: args.eval_windows]), 4)
            log(line)
    return time.time() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--context", type=int, default=256)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--log-every", type=int, default=25)
    ap.add_argument("--eval-windows", type=int, default=32)
    ap.add_argument("--work", default="/tmp/k3-demo-work")
    ap.add_argument("--out", default=os.path.join(HERE, "..", "..", "fixtures", "k3-demo"))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(SEED)

    books = corpus.novels(args.work)
    train_books, held = corpus.split(books)
    ranks = bpe.train("\n\n".join(p for ps in train_books.values() for p in ps), N_RANKS)
    tokens = data.Tokens(ranks)
    cfg = dict(CONFIG, vocab_size=N_RANKS + 256)
    model = k3_torch.K3(cfg)
    k3_torch.initialise(model, SEED)
    windows, held_bytes = data.held_out_windows(tokens, held, args.context)
    batches = data.Batches(tokens, train_books, args.context, SEED)
    n_params = sum(p.numel() for p in model.parameters())
    os.makedirs(args.work, exist_ok=True)
    log_path = os.path.join(args.work, "train-log.jsonl")
    with open(log_path, "w") as f:
        def log(line):
            print(json.dumps(line), flush=True)
            f.write(json.dumps(line) + "\n")
            f.flush()
        log(dict(parameters=n_params, held_out_windows=len(windows), held_out_bytes=held_bytes, args=vars(args)))
        seconds = train(model, batches, windows, args, log)
        torch.save({"cfg": cfg, "state": model.state_dict(), "ranks": ranks}, os.path.join(args.work, "model.pt"))
        losses = final_losses(model, windows, ranks, args.out)
        bits = {k: v * windows[:, 1:].numel() / held_bytes / math.log(2) for k, v in losses.items()}
        facts = dict(steps=args.steps, train_seconds=round(seconds, 1), parameters=n_params,
                     held_out_nats_per_token=losses, held_out_bits_per_byte=bits, seed=SEED,
                     held_out_tokens=windows[:, 1:].numel(), held_out_bytes=held_bytes)
        log(dict(done=True, **facts))
    export.write_facts(args.out, facts)
    print(f"wrote {args.out}")


def final_losses(model, windows, ranks, out):
    """Held-out loss of the float32 weights, of them with the experts MXFP4-rounded, and
    of the written checkpoint read back (BF16 trunk, MXFP4 experts) — what the engine runs."""
    model.mxfp4 = False
    f32 = held_out_loss(model, windows)
    model.mxfp4 = True
    experts_mxfp4 = held_out_loss(model, windows)
    export.write(model, ranks, out)
    stored = k3_torch.K3(model.cfg)
    weights.load_released(stored, out)
    return dict(float32=f32, float32_experts_mxfp4=experts_mxfp4, written_files=held_out_loss(stored, windows))


if __name__ == "__main__":
    main()
