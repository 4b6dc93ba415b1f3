"""A conv net's training step and its 3x3 layers against torch's CPU, in one process.

Round 39 (h4): skiff's 3x3 stride-1 (Winograd) convolution reads its input's tiles with the
padding as zeros instead of copying the input into a padded channels-first array first
(forward and the weight gradient's rebuilt tiles). This prints, per shape, the forward with
the padded copy (the old path) and without it, torch's forward, and a small ResNet-style
training step (conv-BN-ReLU blocks, Nesterov SGD, label smoothing) for both libraries: CPU
milliseconds (``getrusage``, best of ``--iters``), one thread each, and the ratio to torch.

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/bench_conv_step.py
"""

from __future__ import annotations

import argparse
import resource

import numpy as np


def _cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _best(fn, iters):
    fn()
    times = []
    for _ in range(iters):
        c = _cpu()
        fn()
        times.append(_cpu() - c)
    return min(times) * 1e3


def _net(t, w):
    nn = t.nn

    def block(cin, cout, s):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, s, 1, bias=False), nn.BatchNorm2d(cout),
                             nn.ReLU(inplace=True), nn.Conv2d(cout, cout, 3, 1, 1, bias=False),
                             nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

    return nn.Sequential(nn.Conv2d(3, w, 3, 1, 1, bias=False), nn.BatchNorm2d(w), nn.ReLU(),
                         block(w, w, 1), block(w, 2 * w, 2), block(2 * w, 4 * w, 2),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4 * w, 10))


def _step(t, m, x, y):
    opt = t.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)
    crit = t.nn.CrossEntropyLoss(label_smoothing=0.1)
    xb, yb = t.tensor(x), t.tensor(y)

    def run():
        opt.zero_grad(set_to_none=True)
        crit(m(xb), yb).backward()
        opt.step()
    return run


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=7)
    args = ap.parse_args(argv)
    import torch

    import skiff
    from skiff.kernels.train.core.nn.functional.conv import _padded_cn
    from skiff.kernels.train.core.nn.functional.conv_winograd import winograd_conv3x3

    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    print("3x3 stride-1 conv forward, CPU ms (skiff padded copy -> no copy; torch)")
    for c, h, n in ((16, 32, 64), (32, 16, 64), (64, 8, 64), (64, 32, 32), (128, 16, 32)):
        x = rng.standard_normal((n, c, h, h)).astype(np.float32)
        w = rng.standard_normal((c, c, 3, 3)).astype(np.float32)
        old = _best(lambda x=x, w=w, h=h: winograd_conv3x3(_padded_cn(x, 1, 1), w, None, 0,
                                                           0, h, h), args.iters)
        new = _best(lambda x=x, w=w, h=h: winograd_conv3x3(x.transpose(1, 0, 2, 3), w, None,
                                                           1, 1, h, h), args.iters)
        tx, tw = torch.from_numpy(x), torch.from_numpy(w)
        ref = _best(lambda tx=tx, tw=tw: torch.nn.functional.conv2d(tx, tw, padding=1),
                    args.iters)
        print(f"  {c:3d}ch {h:2d}x{h:<2d} b{n}: {old:6.2f} -> {new:6.2f} "
              f"({old / new:.2f}x faster); torch {ref:6.2f}; skiff/torch "
              f"{old / ref:.2f} -> {new / ref:.2f}")
    print("training step (conv-BN-ReLU ResNet-style, width 16, 32x32, batch 64), CPU ms")
    x = rng.standard_normal((64, 3, 32, 32)).astype(np.float32)
    y = rng.integers(0, 10, 64)
    torch.manual_seed(0)
    tm, sm = _net(torch, 16), _net(skiff, 16)
    sm.load_state_dict({k: skiff.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    ts = _best(_step(torch, tm, x, y), args.iters)
    ss = _best(_step(skiff, sm, x, y), args.iters)
    print(f"  torch {ts:.1f}, skiff {ss:.1f}: skiff/torch {ss / ts:.2f}")


if __name__ == "__main__":
    main()
