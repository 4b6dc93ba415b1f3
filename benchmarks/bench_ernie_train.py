"""ERNIE-4.5 fine-tuning step and checkpoint loading on the CPU: skiff against transformers.

    .venv/bin/python benchmarks/bench_ernie_train.py [lora|load|all] [--rounds 3] [--steps 5]
                                                     [--threads 1] [--layers 4]

``lora``: a tiny random ERNIE-4.5 (width 512, 4 layers, 8 query / 2 key-value heads of 64,
SwiGLU 1536, vocabulary 32000, tied head) written by transformers and loaded by skiff's
``from_pretrained``; LoRA rank 8, alpha 16 on ``q_proj`` and ``v_proj`` on both sides (skiff's
``apply_lora``; transformers + peft ``get_peft_model``, its default sdpa attention), AdamW
lr 1e-3 on the adapters, a batch of 4 x 128 tokens, next-token loss over the same 4 x 127
targets. One optimizer step (forward, backward, step) timed in CPU seconds
(``time.process_time``), best of ``--rounds`` rounds of ``--steps`` steps, the two taking
turns after a warm-up step; the first losses must agree (the same weights, B = 0).

``load``: a 0.3B-shaped checkpoint with ``--layers`` of its 18 layers (float32, written by
transformers) loaded once by each side in its own process; peak RSS after the load against
the checkpoint's size on disk (goal for skiff: at most 1.2x), and the growth over the
process's RSS before the load.

Prints a table; writes nothing (the figures belong to the session that ran them).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _threads(n: int) -> None:
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)


def lora(args) -> None:
    import numpy as np
    import torch
    import transformers
    from peft import LoraConfig, get_peft_model

    from skiff.kernels.train.core.optim import AdamW
    from skiff.kernels.train.models import from_pretrained
    from skiff.kernels.train.models.lora import apply_lora

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    cfg = transformers.Ernie4_5Config(
        vocab_size=32000, hidden_size=512, intermediate_size=1536, num_hidden_layers=4,
        num_attention_heads=8, num_key_value_heads=2, head_dim=64, tie_word_embeddings=True)
    ref = transformers.Ernie4_5ForCausalLM(cfg)
    with tempfile.TemporaryDirectory() as tmp:
        ref.save_pretrained(tmp)
        model = from_pretrained(tmp)
    ref = get_peft_model(ref, LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0,
                                         target_modules=["q_proj", "v_proj"]))
    ref.train()
    apply_lora(model, r=8, alpha=16, target_modules=("q_proj", "v_proj"))
    t_opt = torch.optim.AdamW([p for p in ref.parameters() if p.requires_grad], lr=1e-3)
    s_opt = AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    n_t = sum(p.numel() for p in ref.parameters() if p.requires_grad)
    n_s = sum(p.data.size for p in model.parameters() if p.requires_grad)
    ids = np.random.default_rng(0).integers(3, cfg.vocab_size, (4, 128))
    x, y = ids[:, :-1], ids[:, 1:]
    tids = torch.tensor(ids)

    def torch_step() -> float:
        t_opt.zero_grad(set_to_none=True)
        loss = ref(input_ids=tids, labels=tids).loss
        loss.backward()
        t_opt.step()
        return float(loss)

    def skiff_step() -> float:
        s_opt.zero_grad()
        loss = model.loss((x, y))
        loss.backward()
        s_opt.step()
        return float(loss.data)

    first = (skiff_step(), torch_step())  # warm-up, and the same loss from the same weights
    assert abs(first[0] - first[1]) < 1e-3 * abs(first[1]), first
    best = {"skiff": float("inf"), "transformers+peft": float("inf")}
    per_round = {k: [] for k in best}
    for _ in range(args.rounds):
        for name, step in (("skiff", skiff_step), ("transformers+peft", torch_step)):
            t0 = time.process_time()
            for _ in range(args.steps):
                step()
            dt = (time.process_time() - t0) / args.steps
            per_round[name].append(round(dt * 1e3, 1))
            best[name] = min(best[name], dt)
    print(f"load average {os.getloadavg()[0]:.1f}; threads {args.threads}; trainable "
          f"{n_s} (skiff) / {n_t} (peft); first loss {first[0]:.5f} / {first[1]:.5f}")
    print("| side | ms per step (best) | skiff vs transformers+peft (goal >= 1.0) | per round |")
    print("| --- | --- | --- | --- |")
    for name in best:
        ratio = best["transformers+peft"] / best[name]
        print(f"| {name} | {best[name] * 1e3:.1f} | {ratio:.2f}x | {per_round[name]} |")


_LOADER = r"""
import json, sys
side, path = sys.argv[1], sys.argv[2]
if side == "skiff":
    from skiff.kernels.train.models import from_pretrained
else:
    import torch, transformers
def rss(key="VmRSS:"):  # VmHWM: this process's peak (ru_maxrss outlives exec: the parent's)
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key):
                return int(line.split()[1]) * 1024
before = rss()
if side == "skiff":
    model = from_pretrained(path)
else:
    model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
peak = rss("VmHWM:")
print(json.dumps({"before": before, "peak": peak, "after": rss()}))
"""


def load(args) -> None:
    import torch
    import transformers

    torch.manual_seed(0)
    cfg = transformers.Ernie4_5Config(
        vocab_size=103424, hidden_size=1024, intermediate_size=3072,
        num_hidden_layers=args.layers, num_attention_heads=16, num_key_value_heads=2,
        head_dim=128, tie_word_embeddings=True)
    with tempfile.TemporaryDirectory() as tmp:
        transformers.Ernie4_5ForCausalLM(cfg).save_pretrained(tmp)
        size = sum(f.stat().st_size for f in Path(tmp).glob("*.safetensors"))
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        rows = {}
        for side in ("skiff", "transformers"):
            out = subprocess.run([sys.executable, "-c", _LOADER, side, tmp], env=env,
                                 capture_output=True, text=True, check=True, timeout=600)
            rows[side] = json.loads(out.stdout.strip().splitlines()[-1])
    mb = 1 / 2**20
    print(f"load average {os.getloadavg()[0]:.1f}; checkpoint {size * mb:.0f} MiB "
          f"({args.layers} layers of the 0.3B, float32)")
    print("| side | peak RSS MiB | peak / checkpoint (goal <= 1.2) | RSS before load MiB | "
          "growth / checkpoint |")
    print("| --- | --- | --- | --- | --- |")
    for side, r in rows.items():
        print(f"| {side} | {r['peak'] * mb:.0f} | {r['peak'] / size:.2f}x | "
              f"{r['before'] * mb:.0f} | {(r['peak'] - r['before']) / size:.2f}x |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", nargs="?", choices=("lora", "load", "all"), default="all")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--layers", type=int, default=4)
    args = ap.parse_args()
    _threads(args.threads)
    if args.what in ("lora", "all"):
        lora(args)
    if args.what in ("load", "all"):
        load(args)


if __name__ == "__main__":
    main()
