"""Per-layer benchmark: skiff's layers against PyTorch CPU, forward + backward.

    .venv/bin/python benchmarks/bench_layers.py [--threads 1] [--rounds 3] [--iters 15]
        [--only conv,lenet] [--no-write] [--out layers-conv.md] [--im2col]

Each framework runs in its own process with ``OPENBLAS_NUM_THREADS`` (and torch's
``set_num_threads``) equal to ``--threads``; the two alternate over ``--rounds`` rounds (the
order flips every round). In a round a worker times every case: 3 warm-up iterations, then
``--iters`` timed ones, each one forward and one backward (gradients for the input, when the
layer is not a network's first, and for every parameter); the figure of a round is the median
CPU time of an iteration (CPU time, not wall time, because the machine's cores are shared), and
the figure of the run is the median over rounds. Whole-model cases time one training step
(zero_grad, forward, cross-entropy, backward, optimizer step). Ratios are skiff time over torch
time (lower is better; the goal is <= 1.2 per layer and <= 1.0 for the CNN step). Results go to
``benchmarks/results/layers.md``.
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

B = 64
WARMUP = 3

# name -> (kind, parameters); every shape is batch 64 unless it says otherwise.
CASES = {
    "conv3x3 1->32 28x28 p1": ("conv", dict(cin=1, cout=32, k=3, s=1, p=1, hw=28, gin=False)),
    "conv3x3 32->64 28x28 p1": ("conv", dict(cin=32, cout=64, k=3, s=1, p=1, hw=28, gin=True)),
    "conv3x3 64->128 14x14 p1": ("conv", dict(cin=64, cout=128, k=3, s=1, p=1, hw=14,
                                             gin=True)),
    "conv3x3 32->64 28x28 s2 p1": ("conv", dict(cin=32, cout=64, k=3, s=2, p=1, hw=28,
                                               gin=True)),
    "conv5x5 1->32 28x28 p2": ("conv", dict(cin=1, cout=32, k=5, s=1, p=2, hw=28, gin=False)),
    "conv5x5 32->64 28x28 p0": ("conv", dict(cin=32, cout=64, k=5, s=1, p=0, hw=28, gin=True)),
    "conv5x5 64->128 14x14 s2 p2": ("conv", dict(cin=64, cout=128, k=5, s=2, p=2, hw=14,
                                                gin=True)),
    "maxpool2 32x28x28": ("maxpool", dict(c=32, hw=28, k=2)),
    "maxpool3 s2 64x14x14": ("maxpool", dict(c=64, hw=15, k=3, s=2)),
    "avgpool2 32x28x28": ("avgpool", dict(c=32, hw=28, k=2)),
    "batchnorm2d 32x28x28": ("batchnorm", dict(c=32, hw=28)),
    "batchnorm2d 128x14x14": ("batchnorm", dict(c=128, hw=14)),
    "linear 3136->128 (B=64)": ("linear", dict(n=64, i=3136, o=128)),
    "linear 512->2048 (N=2048)": ("linear", dict(n=2048, i=512, o=2048)),
    "layernorm 2048x512": ("layernorm", dict(n=2048, d=512)),
    "gelu 2048x2048 (tanh)": ("gelu", dict(n=2048, d=2048)),
    "relu 64x32x28x28": ("relu", dict(shape=(64, 32, 28, 28))),
    "cross_entropy 4096x1000": ("ce", dict(n=4096, c=1000)),
    "lenet step SGD": ("lenet", dict(opt="sgd")),
    "lenet step AdamW": ("lenet", dict(opt="adamw")),
    "lenet-bn step AdamW": ("lenet", dict(opt="adamw", bn=True)),
    "models.CNN step AdamW": ("cnn", dict(opt="adamw")),
    "mlp 100-256-256-10 step AdamW (B=256)": ("mlp", dict(opt="adamw")),
    # round 31: everyday layers a torch user times first
    "conv3x3 64->64 32x32 p1": ("conv", dict(cin=64, cout=64, k=3, s=1, p=1, hw=32, gin=True)),
    "lstm 128->256 T=32 (B=64)": ("lstm", dict(i=128, h=256, t=32)),
    "gru 128->256 T=32 (B=64)": ("gru", dict(i=128, h=256, t=32)),
    "linear+gelu 512-2048-512 (N=2048)": ("mlpgelu", dict(n=2048, d=512, h=2048)),
    # round 33: the shapes ResNet/MobileNet users train (docs/convolution.md)
    "conv3x3 64->64 56x56 p1 (B=8)": ("conv", dict(cin=64, cout=64, k=3, s=1, p=1, hw=56,
                                                  n=8)),
    "conv3x3 64->64 32x32 p1 (B=32)": ("conv", dict(cin=64, cout=64, k=3, s=1, p=1, hw=32,
                                                   n=32)),
    "conv3x3 128->128 28x28 p1 (B=8)": ("conv", dict(cin=128, cout=128, k=3, s=1, p=1,
                                                    hw=28, n=8)),
    "conv3x3 256->256 14x14 p1 (B=16)": ("conv", dict(cin=256, cout=256, k=3, s=1, p=1,
                                                     hw=14, n=16)),
    "conv3x3 s2 64->128 56x56 p1 (B=8)": ("conv", dict(cin=64, cout=128, k=3, s=2, p=1,
                                                      hw=56, n=8)),
    "conv1x1 64->256 56x56 (B=8)": ("conv", dict(cin=64, cout=256, k=1, s=1, p=0, hw=56,
                                                n=8)),
    "dwconv3x3 128 56x56 p1 (B=8)": ("conv", dict(cin=128, cout=128, k=3, s=1, p=1, hw=56,
                                                 n=8, groups=128)),
    "dwconv3x3 s2 256 28x28 p1 (B=16)": ("conv", dict(cin=256, cout=256, k=3, s=2, p=1,
                                                     hw=28, n=16, groups=256)),
}


# --- workers -----------------------------------------------------------------------------------
def _time(step, iters):
    """(median CPU seconds, median wall seconds) of one iteration."""
    for _ in range(WARMUP):
        step()
    cpu, wall = [], []
    for _ in range(iters):
        t0, w0 = time.process_time(), time.perf_counter()
        step()
        cpu.append(time.process_time() - t0)
        wall.append(time.perf_counter() - w0)
    cpu.sort()
    wall.sort()
    return cpu[len(cpu) // 2], wall[len(wall) // 2]


def _inputs(kind, p, rng):
    import numpy as np

    f32 = np.float32
    if kind == "conv":
        return [rng.standard_normal((p.get("n", B), p["cin"], p["hw"], p["hw"])).astype(f32)]
    if kind in ("maxpool", "avgpool", "batchnorm"):
        return [rng.standard_normal((B, p["c"], p["hw"], p["hw"])).astype(f32)]
    if kind == "linear":
        return [rng.standard_normal((p["n"], p["i"])).astype(f32)]
    if kind in ("layernorm", "gelu"):
        return [rng.standard_normal((p["n"], p["d"])).astype(f32)]
    if kind == "relu":
        return [rng.standard_normal(p["shape"]).astype(f32)]
    if kind == "ce":
        return [rng.standard_normal((p["n"], p["c"])).astype(f32),
                rng.integers(0, p["c"], p["n"])]
    if kind in ("lenet", "cnn"):
        return [rng.standard_normal((B, 1, 28, 28)).astype(f32), rng.integers(0, 10, B)]
    if kind == "mlp":
        return [rng.standard_normal((256, 100)).astype(f32), rng.integers(0, 10, 256)]
    if kind in ("lstm", "gru"):
        return [rng.standard_normal((B, p["t"], p["i"])).astype(f32)]
    if kind == "mlpgelu":
        return [rng.standard_normal((p["n"], p["d"])).astype(f32)]
    raise ValueError(kind)


class _FirstOutput:
    """A recurrent module's output sequence alone (its state tuple is not timed)."""

    def __init__(self, mod):
        self.mod = mod

    def __call__(self, x):
        return self.mod(x)[0]

    def parameters(self):
        return self.mod.parameters()


def _build(fw, kind, p):
    """The module of a case for framework fw (None for a plain function)."""
    if fw == "torch":
        import torch
        nn = torch.nn
    else:
        import skiff
        nn = skiff.nn
    if kind == "conv":
        return nn.Conv2d(p["cin"], p["cout"], p["k"], stride=p["s"], padding=p["p"],
                         groups=p.get("groups", 1))
    if kind == "maxpool":
        return nn.MaxPool2d(p["k"], p.get("s"))
    if kind == "avgpool":
        return nn.AvgPool2d(p["k"], p.get("s"))
    if kind == "batchnorm":
        return nn.BatchNorm2d(p["c"])
    if kind == "linear":
        return nn.Linear(p["i"], p["o"])
    if kind == "layernorm":
        return nn.LayerNorm(p["d"])
    if kind == "gelu":
        return nn.GELU(approximate="tanh")
    if kind == "relu":
        return nn.ReLU()
    if kind == "ce":
        return None
    if kind == "lenet":
        layers = [nn.Conv2d(1, 32, 3, padding=1)]
        layers += [nn.BatchNorm2d(32)] if p.get("bn") else []
        layers += [nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3, padding=1)]
        layers += [nn.BatchNorm2d(64)] if p.get("bn") else []
        layers += [nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(64 * 7 * 7, 128),
                   nn.ReLU(), nn.Linear(128, 10)]
        return nn.Sequential(*layers)
    if kind == "cnn":  # skiff's built-in models.CNN at 28x28, 10 classes
        return nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(16 * 7 * 7, 10))
    if kind == "mlp":
        return nn.Sequential(nn.Linear(100, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                             nn.Linear(256, 10))
    if kind in ("lstm", "gru"):
        cls = nn.LSTM if kind == "lstm" else nn.GRU
        return _FirstOutput(cls(p["i"], p["h"], batch_first=True))
    if kind == "mlpgelu":
        return nn.Sequential(nn.Linear(p["d"], p["h"]), nn.GELU(), nn.Linear(p["h"], p["d"]))
    raise ValueError(kind)


def worker(fw: str, names: list[str], iters: int, threads: int, im2col: bool = False) -> dict:
    import numpy as np

    if fw == "torch":
        import torch
        torch.set_num_threads(threads)
        tensor = torch.from_numpy
        F = torch.nn.functional
        optims = {"sgd": lambda ps: torch.optim.SGD(ps, lr=0.01, momentum=0.9),
                  "adamw": lambda ps: torch.optim.AdamW(ps, lr=1e-3)}
    else:
        import skiff
        from skiff.kernels.train.core.nn import fused

        fused.warm_up()
        if im2col:  # round 33's Winograd path off: every conv through im2col + GEMM
            from skiff.kernels.train.core.nn.functional import conv as conv_mod

            conv_mod.WINOGRAD = False

        def tensor(a):
            return skiff.tensor(a)

        F = skiff.nn.functional
        optims = {"sgd": lambda ps: skiff.optim.SGD(ps, lr=0.01, momentum=0.9),
                  "adamw": lambda ps: skiff.optim.AdamW(ps, lr=1e-3)}
    out = {}
    for name in names:
        kind, p = CASES[name]
        rng = np.random.default_rng(0)
        arrays = _inputs(kind, p, rng)
        mod = _build(fw, kind, p)
        if kind in ("lenet", "cnn", "mlp"):
            x, y = tensor(arrays[0]), tensor(arrays[1])
            opt = optims[p["opt"]](list(mod.parameters()))

            def step(mod=mod, x=x, y=y, opt=opt):
                opt.zero_grad()
                loss = F.cross_entropy(mod(x), y)
                loss.backward()
                opt.step()
        else:
            x = tensor(arrays[0])
            x.requires_grad = p.get("gin", True) if kind != "ce" else True
            target = tensor(arrays[1]) if kind == "ce" else None
            fn = (lambda v, t=target: F.cross_entropy(v, t)) if kind == "ce" else mod
            g = None

            def step(fn=fn, x=x, mod=mod):
                nonlocal g
                x.grad = None
                if mod is not None:
                    for q in mod.parameters():
                        q.grad = None
                y = fn(x)
                if y.ndim == 0:
                    y.backward()
                    return
                if g is None:
                    g = tensor(np.random.default_rng(1).standard_normal(
                        tuple(y.shape)).astype(np.float32))
                y.backward(g)
        out[name] = _time(step, iters)
    return out


# --- driver ------------------------------------------------------------------------------------
def _run_worker(fw, names, iters, threads, im2col=False):
    env = dict(os.environ)
    for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
              "NUMBA_NUM_THREADS"):
        env[v] = str(threads)
    cmd = [sys.executable, __file__, "--worker", fw, "--iters", str(iters), "--threads",
           str(threads), "--only", json.dumps(names)] + (["--im2col"] if im2col else [])
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if res.returncode:
        sys.exit(f"{fw} worker failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def _select(only: str | None) -> list[str]:
    if not only:
        return list(CASES)
    if only.startswith("["):
        return json.loads(only)
    keys = [k.strip() for k in only.split(",")]
    names = [n for n in CASES if any(k in n for k in keys)]
    if not names:
        raise SystemExit(f"--only {only!r} matches no case; cases: {', '.join(CASES)}")
    return names


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=15)
    ap.add_argument("--only", default=None, help="comma-separated substrings of case names")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--out", default="layers.md",
                    help="results file under benchmarks/results (layers-conv.md: round 33's)")
    ap.add_argument("--im2col", action="store_true",
                    help="skiff without Winograd (every conv by im2col), for before/after")
    ap.add_argument("--worker", choices=["skiff", "torch"], help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    names = _select(a.only)
    if a.worker:
        print(json.dumps(worker(a.worker, names, a.iters, a.threads, a.im2col)))
        return
    load = os.getloadavg()[0]
    per = {"skiff": [], "torch": []}
    for r in range(a.rounds):
        order = ("skiff", "torch") if r % 2 == 0 else ("torch", "skiff")
        for fw in order:
            per[fw].append(_run_worker(fw, names, a.iters, a.threads,
                                       a.im2col and fw == "skiff"))
    load_end = os.getloadavg()[0]

    def med(fw, n, k=0):
        v = sorted(d[n][k] for d in per[fw])
        return v[len(v) // 2]

    rows = []
    title = (f"forward+backward, median CPU ms (and wall ms) over {a.rounds} rounds x "
             f"{a.iters} iterations, {a.threads} thread(s), batch {B} unless named, float32"
             + (", skiff without Winograd (--im2col)" if a.im2col else ""))
    print(title)
    print(f"{'case':40s} {'skiff ms':>10s} {'torch ms':>10s} {'ratio':>7s} {'wall ratio':>10s}")
    for n in names:
        s, t = med("skiff", n) * 1e3, med("torch", n) * 1e3
        sw, tw = med("skiff", n, 1) * 1e3, med("torch", n, 1) * 1e3
        rows.append((n, s, t, s / t, sw, tw))
        print(f"{n:40s} {s:10.2f} {t:10.2f} {s / t:6.2f}x {sw / tw:9.2f}x")
    print(f"load average {load:.1f} at start, {load_end:.1f} at end")
    if a.no_write:
        return
    cmd = "benchmarks/bench_layers.py " + " ".join(argv if argv is not None else sys.argv[1:])
    lines = [
        "# Layer benchmark (`benchmarks/bench_layers.py`)", "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores (shared); {title}; "
        f"load average {load:.1f} at start, {load_end:.1f} at end; "
        f"command: `.venv/bin/python {cmd.strip()}`.",
        "Ratio = skiff time / torch time (goal: <= 1.2 per layer, <= 1.0 for the CNN step).", "",
        "| case | skiff ms | torch ms | ratio | skiff wall ms | torch wall ms |",
        "|---|---|---|---|---|---|",
    ]
    lines += [f"| {n} | {s:.2f} | {t:.2f} | {r:.2f}x | {sw:.2f} | {tw:.2f} |"
              for n, s, t, r, sw, tw in rows]
    out = ROOT / "benchmarks" / "results" / a.out
    prev = out.read_text() if out.exists() else ""
    keep = prev.split("\n## ", 1)[1] if "\n## " in prev else ""
    out.write_text("\n".join(lines) + "\n" + ("\n## " + keep if keep else ""))
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
