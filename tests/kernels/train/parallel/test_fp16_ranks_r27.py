"""fp16-mixed on 2 data-parallel ranks (dp, ZeRO-1, ZeRO-2) skips the steps, and reaches the
losses and float32 masters, of torch's fp16 autocast + GradScaler on the whole batch.

Found by a user: a regression in fp16-mixed skipped steps 1, 2, 3 and 8 on 2 ranks where one
device (and torch) skipped 1, 2 and 5, and its losses then differed by 16%: a rank's 16-bit
gradients were those of its own half-batch mean, twice one device's per row, so they
overflowed where one device's did not. Each rank's backward now runs on its loss divided by
the ranks, and the reducer multiplies the float32 average back (rounded to float16, so an
overflow of the whole batch's gradient is an inf on every rank). The oracle (torch on the CPU:
float16 weights and activations, the loss in float32, float32 masters, SGD with momentum,
GradScaler's skip-and-halve) is computed on the whole batch of each step, in the test's
process from the ranks' first weights (round 39: in every rank, each importing torch).
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from .mpi_util import HERE, run_mpi

torch = pytest.importorskip("torch")
sys.path.insert(0, str(HERE / "scripts"))
import fp16_ranks_r27_check as check  # noqa: E402


def oracle(weights, x, y, classify):
    """torch: float16 weights and activations, loss in float32, float32 masters, SGD with
    momentum 0.9, GradScaler's rules (init 2^16, halve and skip on inf/nan)."""
    masters = [torch.tensor(w, requires_grad=True) for w in weights]
    opt = torch.optim.SGD(masters, lr=check.LR, momentum=0.9)
    scale, losses, skipped = 2.0 ** 16, [], []
    starts = list(range(0, len(x), check.BATCH))  # the last batch of an epoch may be smaller
    for s in range(check.STEPS):
        i = starts[s % len(starts)]
        xb, yb = torch.tensor(x[i:i + check.BATCH]), torch.tensor(y[i:i + check.BATCH])
        w1, b1, w2, b2 = (m.detach().half().requires_grad_() for m in masters)
        out = (torch.relu(xb.half() @ w1.T + b1) @ w2.T + b2).float()
        loss = torch.nn.functional.cross_entropy(out, yb) if classify else \
            torch.nn.functional.mse_loss(out, yb)
        losses.append(loss.item())
        (loss * scale).backward()
        grads = [t.grad.float() / scale for t in (w1, b1, w2, b2)]
        if all(torch.isfinite(g).all() for g in grads):
            for m, g in zip(masters, grads):
                m.grad = g
            opt.step()
        else:
            skipped.append(s + 1)
            scale /= 2
    return {"skipped": skipped, "losses": losses,
            "masters": [m.detach().numpy() for m in masters]}




def master_diff(got, want):
    """The largest difference of the masters over the oracle's largest weight (1 at least);
    inf when they do not line up."""
    if len(got) != len(want) or any(g.size != w.size for g, w in zip(got, want)):
        return float("inf")
    return max(float(np.abs(g.astype(np.float64).ravel() - w.ravel()).max())
               / max(float(np.abs(w).max()), 1.0) for g, w in zip(got, want))

CASES = ["reg6", "reg12", "huge", "reg6u", "reg12a"]  # targets of about 6, 12; one sample
# 300x the rest; "u": 56 rows, the last batch of each epoch 8 rows, weighted by each rank's
# share (row_weight); "a": grad_accum=2, two micro-batches of 8 a step


@pytest.mark.mpi
def test_fp16_two_ranks_skip_and_train_as_torch_on_the_whole_batch(tmp_path):
    refs = {}
    for case in CASES:
        x, y, _ = check.data(case)
        refs[case] = oracle(check.first_weights(case), x, y, case == "huge")
    for res in run_mpi(2, "fp16_ranks_r27_check.py", "--out", tmp_path, *CASES, timeout=300):
        masters = json.loads((tmp_path / f"masters-{res['rank']}.json").read_text())
        for case in CASES:
            ref = refs[case]
            assert len(ref["skipped"]) >= 2 and ref["skipped"][-1] > 2, (case, ref["skipped"])
            for kind in ("single", "dp", "zero1", "zero2"):
                got = res[case][kind]
                assert got["skipped"] == ref["skipped"], (case, kind, got["skipped"])
                rel = max(abs(a - b) / abs(b) for a, b in zip(got["losses"], ref["losses"]))
                assert len(got["losses"]) == len(ref["losses"]) and rel < 2e-3, (case, kind,
                                                                                 rel)
                diff = master_diff([np.asarray(m) for m in masters[f"{case}/{kind}"]],
                                   ref["masters"])
                assert diff < 2e-3, (case, kind, diff)
