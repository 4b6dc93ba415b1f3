"""Attention benchmark: packed variable-length causal attention against padded attention.

    .venv/bin/python benchmarks/bench_attention.py [--threads 1] [--rounds 3] [--quick]

A batch of B=16 sequences with lengths drawn uniformly from 1..128 (about half of a padded
(16, 128) batch is padding), gpt-mini's attention shape (4 heads of width 32), float32,
forward + backward. Every method runs in its own process with ``OPENBLAS_NUM_THREADS`` (and
torch's ``set_num_threads``) equal to ``--threads``; the methods take turns for ``--rounds``
rounds and each keeps its best round (the machine may be shared); a step is timed as the
median CPU time (``time.process_time``) of ``--iters`` calls, so waiting for a busy core does
not count. Figures are real (non-pad) tokens per CPU-second, printed as ratios against their
peers measured in the same run:

* ``skiff packed``  : ``nn.functional.packed_causal_attention`` on the (T_total, H, D) stream
* ``skiff padded``  : ``nn.functional.scaled_dot_product_attention`` on (B, H, 128, D)
* ``torch padded``  : ``torch.nn.functional.scaled_dot_product_attention(is_causal=True)``
* ``torch per-seq`` : torch's sdpa called once per sequence (no padding, a Python loop)

With ``--step`` it also times a whole gpt-mini training step (B=16, T=128, AdamW, clipping)
against the same model written in PyTorch, on CPU time as above.

Writes ``benchmarks/results/train-core.md`` (the attention section) unless ``--no-write``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

B, TMAX, H, D = 16, 128, 4, 32
METHODS = ("skiff-packed", "skiff-padded", "torch-padded", "torch-perseq")
STEP_METHODS = ("skiff-step", "torch-step")


def _lengths(seed=0):
    import numpy as np

    return np.random.default_rng(seed).integers(1, TMAX + 1, size=B)


def _time(fn, iters):
    """Median CPU seconds per call (process time: on a shared machine, waiting for a core
    does not count; every method runs on one thread, so CPU time is its work)."""
    fn()  # warm-up (first touch of buffers, lazy imports)
    times = []
    for _ in range(iters):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    times.sort()
    return times[len(times) // 2]


def work(method: str, iters: int) -> dict:
    import numpy as np

    lens = _lengths()
    total = int(lens.sum())
    cu = np.concatenate([[0], np.cumsum(lens)])
    rng = np.random.default_rng(1)
    if method.startswith("skiff"):
        from skiff.kernels.train.core.nn import functional as F
        from skiff.kernels.train.core.tensor import Tensor

        if method == "skiff-packed":
            arrs = [rng.standard_normal((total, H, D)).astype(np.float32) for _ in range(3)]
            g = rng.standard_normal((total, H, D)).astype(np.float32)

            def step():
                q, k, v = (Tensor(a, requires_grad=True) for a in arrs)
                F.packed_causal_attention(q, k, v, cu).backward(g)
        else:
            arrs = [rng.standard_normal((B, H, TMAX, D)).astype(np.float32) for _ in range(3)]
            g = rng.standard_normal((B, H, TMAX, D)).astype(np.float32)

            def step():
                q, k, v = (Tensor(a, requires_grad=True) for a in arrs)
                F.scaled_dot_product_attention(q, k, v, causal=True).backward(g)
    else:
        import torch

        torch.set_num_threads(int(os.environ.get("OPENBLAS_NUM_THREADS", "1")))
        sdpa = torch.nn.functional.scaled_dot_product_attention
        if method == "torch-padded":
            arrs = [torch.randn(B, H, TMAX, D) for _ in range(3)]
            g = torch.randn(B, H, TMAX, D)

            def step():
                q, k, v = (a.clone().requires_grad_() for a in arrs)
                sdpa(q, k, v, is_causal=True).backward(g)
        else:
            arrs = [torch.randn(total, H, D) for _ in range(3)]
            g = torch.randn(total, H, D)

            def step():
                q, k, v = (a.clone().requires_grad_() for a in arrs)
                outs = []
                for i in range(B):
                    a, b = int(cu[i]), int(cu[i + 1])
                    qs, ks, vs = (t[a:b].transpose(0, 1) for t in (q, k, v))
                    outs.append(sdpa(qs, ks, vs, is_causal=True).transpose(0, 1))
                torch.cat(outs).backward(g)
    sec = _time(step, iters)
    return {"method": method, "seconds": sec, "real_tokens": total,
            "tokens_per_s": total / sec}


def work_step(method: str, iters: int) -> dict:
    """One gpt-mini training step (B=16, T=128, AdamW, clip 1.0), skiff or torch."""
    import numpy as np

    rng = np.random.default_rng(0)
    x_np = rng.integers(0, 256, size=(16, 128))
    y_np = rng.integers(0, 256, size=(16, 128))
    if method == "skiff-step":
        from skiff.kernels.train import models
        from skiff.kernels.train.core import optim
        from skiff.kernels.train.core import random as train_random
        from skiff.kernels.train.core.tensor import Tensor

        train_random.seed(0)
        model = models.get("gpt-mini")
        opt = optim.AdamW(model.parameters(), lr=1e-3)
        x, y = Tensor(x_np), Tensor(y_np)

        def step():
            loss = model.loss((x, y))
            loss.backward()
            optim.clip_grad_norm_(list(model.parameters()), 1.0)
            opt.step()
            opt.zero_grad()
    else:
        import torch
        import torch.nn as tnn
        import torch.nn.functional as TF

        torch.set_num_threads(int(os.environ.get("OPENBLAS_NUM_THREADS", "1")))
        torch.manual_seed(0)
        C, NH, L, V, T = 128, 4, 4, 256, 128

        class Blk(tnn.Module):
            def __init__(self):
                super().__init__()
                self.ln_1, self.ln_2 = tnn.LayerNorm(C), tnn.LayerNorm(C)
                self.c_attn, self.c_proj = tnn.Linear(C, 3 * C), tnn.Linear(C, C)
                self.c_fc, self.mlp_proj = tnn.Linear(C, 4 * C), tnn.Linear(4 * C, C)

            def forward(self, h):
                b, t, c = h.shape
                q, k, v = self.c_attn(self.ln_1(h)).split(c, 2)
                q, k, v = (z.view(b, t, NH, c // NH).transpose(1, 2) for z in (q, k, v))
                a = TF.scaled_dot_product_attention(q, k, v, is_causal=True)
                h = h + self.c_proj(a.transpose(1, 2).contiguous().view(b, t, c))
                return h + self.mlp_proj(TF.gelu(self.c_fc(self.ln_2(h)), approximate="tanh"))

        class GPT(tnn.Module):
            def __init__(self):
                super().__init__()
                self.wte, self.wpe = tnn.Embedding(V, C), tnn.Embedding(T, C)
                self.h = tnn.ModuleList([Blk() for _ in range(L)])
                self.ln_f, self.lm_head = tnn.LayerNorm(C), tnn.Linear(C, V, bias=False)

            def forward(self, idx, tgt):
                h = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
                for blk in self.h:
                    h = blk(h)
                logits = self.lm_head(self.ln_f(h))
                return TF.cross_entropy(logits.view(-1, V), tgt.view(-1))

        model = GPT()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        x, y = torch.from_numpy(x_np), torch.from_numpy(y_np)

        def step():
            loss = model(x, y)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad()
    for _ in range(2):
        step()
    sec = _time(step, iters)
    return {"method": method, "seconds": sec, "real_tokens": 16 * 128,
            "tokens_per_s": 16 * 128 / sec}


def run_worker(method, iters, threads) -> dict:
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads))
    out = subprocess.run([sys.executable, __file__, "--worker", method, "--iters", str(iters)],
                         capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    if out.returncode:
        raise RuntimeError(f"{method} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--quick", action="store_true", help="1 round of 3 iterations")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--step", action="store_true",
                    help="also time a whole gpt-mini training step, skiff vs torch")
    ap.add_argument("--worker", choices=METHODS + STEP_METHODS)
    args = ap.parse_args(argv)
    if args.worker:
        fn = work_step if args.worker in STEP_METHODS else work
        print(json.dumps(fn(args.worker, args.iters)))
        return 0
    rounds, iters = (1, 3) if args.quick else (args.rounds, args.iters)
    methods = METHODS + (STEP_METHODS if args.step else ())
    best: dict[str, dict] = {}
    for _ in range(rounds):
        for m in methods:
            r = run_worker(m, iters, args.threads)
            if m not in best or r["tokens_per_s"] > best[m]["tokens_per_s"]:
                best[m] = r
    lens = _lengths()
    pad_frac = 1 - lens.sum() / (B * TMAX)
    tps = {m: best[m]["tokens_per_s"] for m in METHODS}
    ratios = {
        "skiff packed / skiff padded": tps["skiff-packed"] / tps["skiff-padded"],
        "skiff packed / torch padded": tps["skiff-packed"] / tps["torch-padded"],
        "skiff packed / torch per-seq": tps["skiff-packed"] / tps["torch-perseq"],
        "skiff padded / torch padded": tps["skiff-padded"] / tps["torch-padded"],
    }
    lines = [
        f"attention fwd+bwd, B={B} sequences of length 1..{TMAX} ({pad_frac:.0%} padding), "
        f"H={H}, D={D}, float32, {args.threads} thread(s), best of {rounds} x {iters}",
    ]
    for m in METHODS:
        lines.append(f"  {m:14s} {tps[m]:12,.0f} real tokens/s  ({best[m]['seconds'] * 1e3:.2f} "
                     "CPU ms/step)")
    for k, v in ratios.items():
        lines.append(f"  {k:30s} {v:6.2f}x")
    if args.step:
        a, b = best["skiff-step"], best["torch-step"]
        lines += [
            "gpt-mini training step (B=16, T=128, fp32, AdamW, clip 1.0), median CPU time:",
            f"  skiff {a['tokens_per_s']:10,.0f} tokens/s ({a['seconds'] * 1e3:.1f} ms/step)",
            f"  torch {b['tokens_per_s']:10,.0f} tokens/s ({b['seconds'] * 1e3:.1f} ms/step)",
            f"  skiff / torch {a['tokens_per_s'] / b['tokens_per_s']:6.2f}x",
        ]
    print("\n".join(lines))
    if not args.no_write:
        _write(lines, args)
    return 0


def _write(lines, args):
    path = ROOT / "benchmarks" / "results" / "train-core.md"
    head = "## Packed vs padded attention (benchmarks/bench_attention.py)"
    section = "\n".join([
        head, "",
        f"Command: `.venv/bin/python benchmarks/bench_attention.py --threads {args.threads}"
        f" --rounds {args.rounds} --iters {args.iters}{' --step' if args.step else ''}`"
        f"{' --quick' if args.quick else ''}; machine: {platform.processor() or platform.machine()}"
        f", {os.cpu_count()} cores (shared with other jobs while measured, hence CPU time).",
        "",
        "```", *lines, "```", ""])
    text = path.read_text() if path.exists() else "# train-core benchmark results\n\n"
    if head in text:
        pre, _, rest = text.partition(head)
        nxt = rest.find("\n## ")
        text = pre + section + (rest[nxt + 1:] if nxt >= 0 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


if __name__ == "__main__":
    sys.exit(main())
