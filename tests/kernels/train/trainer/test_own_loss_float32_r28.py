"""A model that computes its loss itself (HF style ``model(x, labels=y)``, or a bigram LM's
``forward(idx, targets)``) takes it in float32 under mixed precision, as ``torch.autocast``
runs cross_entropy, nll_loss, mse_loss, ... in float32 whoever calls them.

Found by a user: the Trainer's float32 cast reached only a loss the Trainer computes, so a
loss taken inside ``forward`` ran in 16 bits: bf16 losses rounded to bf16 (about 3 digits),
and every fp16-mixed run skipped its first step (the loss scale 2^16 seeded in float16: inf).
The oracle is torch 2.13 on the CPU: the same 16-bit weights (the float32 masters rounded),
the loss under ``torch.autocast("cpu")`` (float32 out), SGD on float32 masters, and for fp16
GradScaler's rules (a step whose unscaled gradients hold an inf/nan is skipped).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff
from skiff.kernels.train.core.nn.module import Module
from skiff.kernels.train.precision import MixedTraining
from skiff.nn import Embedding, Linear, ReLU, Sequential
from skiff.nn.functional import cross_entropy as imported_cross_entropy

F = skiff.nn.functional
V, B, T = 16, 8, 12
_TORCH = {"bf16-mixed": torch.bfloat16, "fp16-mixed": torch.float16}


class Bigram(Module):
    """``forward(idx, targets)`` returns the loss (logits straight from an Embedding: 16-bit
    in mixed precision, as a GPU's are); ``how`` says how it takes the loss."""

    def __init__(self, how):
        super().__init__()
        skiff.seed(0)
        self.table = Embedding(V, V)
        self.how = how
        self.dtypes = []

    def forward(self, idx, targets=None):
        logits = self.table(idx)
        if targets is None:
            return logits
        flat, t = logits.reshape(-1, V), targets.reshape(-1)
        if self.how == "F":
            loss = F.cross_entropy(flat, t)
        elif self.how == "module":
            loss = skiff.nn.CrossEntropyLoss()(flat, t)
        elif self.how == "imported":
            loss = imported_cross_entropy(flat, t)
        else:  # "nll": log_softmax then nll_loss
            loss = F.nll_loss(F.log_softmax(flat, dim=-1), t)
        self.dtypes.append(str(loss.dtype))
        return loss

    def loss(self, batch):
        idx, targets = batch
        return self(idx, targets=targets)


def _tokens(seed=0, n=32):
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, V, (n, T)).astype(np.int64)
    return idx, (idx * 3 + 1) % V  # a rule the table can learn


def _torch_run(weight, idx, tgt, steps, precision, *, lr=0.5):
    """torch: 16-bit copies of the float32 master, the loss under autocast, GradScaler's
    skip rule for fp16 (scale 2^16, halved on a skip)."""
    half = _TORCH[precision]
    master = torch.tensor(weight, requires_grad=True)
    opt = torch.optim.SGD([master], lr=lr, momentum=0.9)  # the Trainer's "sgd"
    scale = 2.0 ** 16 if precision == "fp16-mixed" else 1.0
    losses, dtypes, skipped = [], [], []
    for s in range(steps):
        i = (s * B) % len(idx)
        x, t = torch.tensor(idx[i:i + B]), torch.tensor(tgt[i:i + B])
        w = master.detach().to(half).requires_grad_()
        with torch.autocast("cpu", dtype=half):
            # log_softmax in float32 as CUDA's autocast runs it (the CPU list keeps it 16-bit)
            loss = torch.nn.functional.cross_entropy(w[x].reshape(-1, V).float(), t.reshape(-1))
        losses.append(loss.item())
        dtypes.append(str(loss.dtype).replace("torch.", ""))
        (loss * scale).backward()
        grad = w.grad.float() / scale
        if torch.isfinite(grad).all():
            master.grad = grad
            opt.step()
        else:
            skipped.append(s + 1)
            scale /= 2
    return losses, dtypes, skipped, master.detach().numpy()


def _skiff_run(model, idx, tgt, steps, precision, *, lr=0.5, batch=B):
    skipped = []
    trainer = skiff.Trainer(model, precision=precision, optimizer="sgd", lr=lr, batch_size=batch,
                            schedule="constant", shuffle=False, clip=None)
    step = MixedTraining.step

    def counting(self, *args, **kwargs):
        ran, norm = step(self, *args, **kwargs)
        counting.calls += 1
        if not ran:
            skipped.append(counting.calls)
        return ran, norm

    counting.calls = 0
    MixedTraining.step = counting
    try:
        result = trainer.train((idx, tgt), steps=steps)
    finally:
        MixedTraining.step = step
    return [r["loss"] for r in result.history], skipped, trainer.mixed.master_params()[0].numpy()


@pytest.mark.parametrize("how", ["F", "module", "imported", "nll"])
@pytest.mark.parametrize("precision", ["bf16-mixed", "fp16-mixed"])
def test_loss_inside_forward_runs_in_float32_as_under_autocast(precision, how):
    idx, tgt = _tokens()
    model = Bigram(how)
    weight = model.table.weight.numpy().astype(np.float32).copy()
    ref_losses, ref_dtypes, ref_skipped, ref_master = _torch_run(weight, idx, tgt, 6, precision)
    losses, skipped, master = _skiff_run(model, idx, tgt, 6, precision)
    assert set(ref_dtypes) == {"float32"}
    assert set(model.dtypes) == set(ref_dtypes)  # the loss forward returns: float32
    assert skipped == ref_skipped == []  # fp16: its first step at 2^16 runs, as torch's
    # 16-bit rounding of the loss (bf16 ~4e-3, fp16 ~5e-4 relative) is told apart
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-4)
    assert np.abs(master - ref_master).max() <= 1e-3 * np.abs(ref_master).max()


def test_policy_is_scoped_to_the_trainers_loss():
    """Outside the Trainer (a user's own eval), the functions are skiff's own again, and a
    16-bit loss there stays 16-bit as torch's does outside autocast."""
    idx, tgt = _tokens()
    model = Bigram("F")
    originals = (F.cross_entropy, skiff.nn.functional.nll_loss, imported_cross_entropy)
    _skiff_run(model, idx, tgt, 2, "fp16-mixed")
    assert (F.cross_entropy, skiff.nn.functional.nll_loss, imported_cross_entropy) == originals
    logits = skiff.tensor(np.zeros((2, V), np.float32)).astype("float16")
    ref = torch.nn.functional.cross_entropy(torch.zeros(2, V, dtype=torch.float16),
                                            torch.tensor([0, 1]))
    assert str(F.cross_entropy(logits, np.array([0, 1])).dtype) == \
        str(ref.dtype).replace("torch.", "")


class HFStyle(Module):
    """``forward(x, labels=None)``: logits, or the loss when labels are given (an MLP)."""

    def __init__(self, regression=False):
        super().__init__()
        skiff.seed(0)
        self.net = Sequential(Linear(8, 32), ReLU(), Linear(32, 1 if regression else 2))
        self.regression = regression

    def forward(self, x, labels=None):
        out = self.net(x)
        if labels is None:
            return out
        if self.regression:
            return F.mse_loss(out, labels)
        return F.cross_entropy(out, labels)

    def loss(self, batch):
        x, y = batch
        return self(x, labels=y)


@pytest.mark.parametrize("regression", [False, True])
def test_hf_style_fp16_first_step_runs_as_gradscaler(regression):
    """fp16-mixed: the steps torch's GradScaler skips (not the first; the Trainer skipped
    step 1 of the classifier)."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 8)).astype(np.float32)
    y = (x.sum(1, keepdims=True) * 0.5).astype(np.float32) if regression else \
        (x.sum(1) > 0).astype(np.int64)
    model = HFStyle(regression)
    ws = [p.numpy().astype(np.float32).copy() for p in model.parameters()]
    masters = [torch.tensor(w, requires_grad=True) for w in ws]
    opt = torch.optim.SGD(masters, lr=0.05, momentum=0.9)
    ref, ref_skipped = [], []
    for s in range(4):
        xb, yb = torch.tensor(x[s * 16:(s + 1) * 16]), torch.tensor(y[s * 16:(s + 1) * 16])
        w1, b1, w2, b2 = (m.detach().half().requires_grad_() for m in masters)
        out = torch.relu(xb.half() @ w1.T + b1) @ w2.T + b2
        with torch.autocast("cpu", dtype=torch.float16):
            loss = (torch.nn.functional.mse_loss if regression else
                    torch.nn.functional.cross_entropy)(out, yb)
        ref.append(loss.item())
        (loss * 2.0 ** 16).backward()
        grads = [t.grad.float() / 2.0 ** 16 for t in (w1, b1, w2, b2)]
        if all(torch.isfinite(g).all() for g in grads):
            for m, g in zip(masters, grads):
                m.grad = g
            opt.step()
        else:
            ref_skipped.append(s + 1)
    losses, skipped, _ = _skiff_run(model, x, y, 4, "fp16-mixed", lr=0.05, batch=16)
    assert skipped == ref_skipped and 1 not in skipped
    np.testing.assert_allclose(losses, ref, rtol=2e-3)
