"""ERNIE-4.5 inference on the CPU: skiff against transformers on the same checkpoint.

    .venv/bin/python benchmarks/bench_ernie.py [--layers 4] [--prompt 128] [--new 16]
                                               [--rounds 3] [--threads 1] [--moe]
                                               [--dtype bfloat16] [--lora 8]

A random model of the 0.3B's shape (width 1024, 16 query / 2 key-value heads of 128,
SwiGLU 3072, vocabulary 103424, tied head; ``--layers`` of its 18 layers, so it fits a shared
machine; per-layer cost is what differs between the two), or with ``--moe`` a 21B-A3B-shaped
MoE layer stack at reduced width (64 experts, top 6, 2 shared). transformers writes the
checkpoint, skiff loads it with ``from_pretrained``. Timed, float32, batch 1, CPU time
(``time.process_time``) so a busy shared core does not count, best of ``--rounds`` rounds,
the two taking turns:

* prefill: logits of the last position of a ``--prompt``-token prompt, without a graph
  (skiff: ``last_only`` under ``no_grad``; transformers: ``logits_to_keep=1`` under
  ``torch.no_grad``);
* decode: ``--new`` greedy tokens after it with the key/value cache (``generate``), per token;
* batch: 8 prompts of lengths 16..512 (``--batch-max``) and ``--new`` tokens each, generated
  together: skiff's ``generate_batch`` (one packed prefill, no padding) against
  transformers' ``generate`` on the left-padded batch with its attention mask.

``--dtype bfloat16``: both sides load the checkpoint (saved in bf16) as bfloat16 weights
(transformers' ``dtype=torch.bfloat16``; skiff's ``dtype="bfloat16"``). ``--lora R``: a
rank-R adapter on every projection (the experts too with ``--moe``), B random, saved by
skiff and loaded by peft on the transformers side.

Prints a table; writes nothing (the figures belong to the session that ran them).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--new", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--moe", action="store_true")
    ap.add_argument("--batch-max", type=int, default=512)
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    ap.add_argument("--lora", type=int, default=0, help="adapter rank (0: none)")
    args = ap.parse_args()
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)

    import numpy as np
    import torch
    import transformers

    from skiff.kernels.train.core.tensor import no_grad
    from skiff.kernels.train.models import from_pretrained

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    if args.moe:
        cfg = transformers.Ernie4_5_MoeConfig(
            vocab_size=103424, hidden_size=1024, intermediate_size=3072,
            num_hidden_layers=args.layers, num_attention_heads=16, num_key_value_heads=4,
            head_dim=64, moe_intermediate_size=384, moe_k=6, moe_num_experts=64,
            moe_num_shared_experts=2, moe_layer_start_index=1)
        ref = transformers.Ernie4_5_MoeForCausalLM(cfg)
    else:
        cfg = transformers.Ernie4_5Config(
            vocab_size=103424, hidden_size=1024, intermediate_size=3072,
            num_hidden_layers=args.layers, num_attention_heads=16, num_key_value_heads=2,
            head_dim=128, tie_word_embeddings=True)
        ref = transformers.Ernie4_5ForCausalLM(cfg)
    ref.eval()
    bf16 = args.dtype == "bfloat16"
    with tempfile.TemporaryDirectory() as tmp:
        if bf16:
            ref = ref.to(torch.bfloat16)
        ref.save_pretrained(tmp)
        model = from_pretrained(tmp, dtype="bfloat16" if bf16 else None)
        if args.lora:
            import peft

            from skiff.kernels.train.models.lora import apply_lora, save_adapter

            targets = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                       "down_proj"]
            if args.moe:
                targets = targets[:4] + ["experts.gate_up_proj", "experts.down_proj"]
            apply_lora(model, r=args.lora, alpha=2 * args.lora, target_modules=targets)
            rng = np.random.default_rng(2)
            for name, p in model.named_parameters():
                if "lora_B" in name:
                    p._data = rng.normal(0, 0.01, p.shape).astype(p._data.dtype)
            save_adapter(model, tmp + "/adapter")
            ref = peft.PeftModel.from_pretrained(ref, tmp + "/adapter").eval()
    ids = np.random.default_rng(0).integers(3, cfg.vocab_size, (1, args.prompt))
    tids = torch.tensor(ids)

    def cpu(fn):
        t0 = time.process_time()
        out = fn()
        return time.process_time() - t0, out

    best = {k: float("inf") for k in ("skiff prefill", "torch prefill", "skiff decode",
                                      "torch decode", "skiff batch", "torch batch")}
    rng = np.random.default_rng(1)
    lengths = np.linspace(16, args.batch_max, 8).astype(int)
    prompts = [rng.integers(3, cfg.vocab_size, n) for n in lengths]
    padded = np.zeros((8, lengths.max()), dtype=np.int64)  # left padding, as generate wants
    mask = np.zeros_like(padded)
    for i, p in enumerate(prompts):
        padded[i, -len(p):] = p
        mask[i, -len(p):] = 1
    load_start = os.getloadavg()[0]
    for _ in range(args.rounds):
        with no_grad():  # inference on both sides (transformers: torch.no_grad)
            t, _ = cpu(lambda: model(ids, last_only=True))
        best["skiff prefill"] = min(best["skiff prefill"], t)
        with torch.no_grad():
            t, _ = cpu(lambda: ref(input_ids=tids, logits_to_keep=1))
        best["torch prefill"] = min(best["torch prefill"], t)
        t_all, mine = cpu(lambda: model.generate(ids, max_new_tokens=args.new,
                                                  eos_token_id=None))
        t_one, _ = cpu(lambda: model.generate(ids, max_new_tokens=1, eos_token_id=None))
        best["skiff decode"] = min(best["skiff decode"], (t_all - t_one) / (args.new - 1))
        with torch.no_grad():
            t_all, theirs = cpu(lambda: ref.generate(input_ids=tids, max_new_tokens=args.new,
                                                     do_sample=False, eos_token_id=None,
                                                     pad_token_id=0))
            t_one, _ = cpu(lambda: ref.generate(input_ids=tids, max_new_tokens=1,
                                                do_sample=False,
                                                eos_token_id=None, pad_token_id=0))
        best["torch decode"] = min(best["torch decode"], (t_all - t_one) / (args.new - 1))
        t, rows = cpu(lambda: model.generate_batch(prompts, max_new_tokens=args.new,
                                                   eos_token_id=None))
        best["skiff batch"] = min(best["skiff batch"], t)
        with torch.no_grad():
            t, tb = cpu(lambda: ref.generate(input_ids=torch.tensor(padded),
                                             attention_mask=torch.tensor(mask),
                                             max_new_tokens=args.new, do_sample=False,
                                             eos_token_id=None, pad_token_id=0))
        best["torch batch"] = min(best["torch batch"], t)
        same_batch = all(np.array_equal(r[len(p):], tb.numpy()[i, lengths.max():])
                         for i, (p, r) in enumerate(zip(prompts, rows)))
    same = bool(np.array_equal(mine, theirs.numpy()))
    kind = "MoE (64 experts, top 6, 2 shared)" if args.moe else "dense 0.3B-shaped"
    lora = f", LoRA r={args.lora} (transformers: + peft)" if args.lora else ""
    print(f"ERNIE-4.5 {kind}, {args.layers} layers, prompt {args.prompt}, "
          f"{args.threads} thread(s), {args.dtype}{lora}, CPU time, best of {args.rounds}")
    print(f"greedy tokens identical: {same}; batch rows identical: {same_batch}")
    print(f"load average {load_start:.1f} at the start, {os.getloadavg()[0]:.1f} at the end")
    print("| phase | skiff ms | transformers ms | skiff speed vs transformers |")
    print("| --- | --- | --- | --- |")
    labels = {"prefill": f"prefill ({args.prompt} tokens)", "decode": "decode (per token)",
              "batch": f"8 prompts of {lengths.min()}..{lengths.max()} tokens + {args.new} "
                       "new each (transformers: padded batch)"}
    for phase, label in labels.items():
        s, t = best[f"skiff {phase}"] * 1e3, best[f"torch {phase}"] * 1e3
        print(f"| {label} | {s:.1f} | {t:.1f} | {t / s:.2f}x |")


if __name__ == "__main__":
    main()
