"""CTC loss against torch.nn.functional.ctc_loss (forward and gradient) and by finite
differences."""

from __future__ import annotations

import numpy as np
import pytest

import skiff
from skiff.kernels.train.core.gradcheck import gradcheck
from skiff.kernels.train.core.nn.functional import log_softmax
from skiff.kernels.train.core.nn.functional.ctc import ctc_loss

torch = pytest.importorskip("torch")


def _case(seed, T=14, N=5, C=8, S=6):
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 2, (T, N, C))
    tl = rng.integers(1, S + 1, N)
    il = rng.integers(2 * S + 1, T + 1, N)
    tg = rng.integers(1, C, (N, S))
    tg[0, 1] = tg[0, 0]  # a repeated label needs a blank between
    return x, tg, il, tl


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("seed", [0, 1])
def test_equals_torch(reduction, seed):
    x, tg, il, tl = _case(seed)
    xs = skiff.tensor(x, dtype="float64", requires_grad=True)
    loss = ctc_loss(log_softmax(xs, axis=-1), tg, il, tl, reduction=reduction)
    w = np.random.default_rng(9).normal(size=loss.shape)
    (loss * skiff.tensor(w, dtype="float64")).sum().backward()
    xt = torch.tensor(x, requires_grad=True)
    lt = torch.nn.functional.ctc_loss(torch.log_softmax(xt, -1), torch.tensor(tg),
                                      torch.tensor(il), torch.tensor(tl), reduction=reduction)
    (lt * torch.tensor(w)).sum().backward()
    assert np.abs(loss.numpy() - lt.detach().numpy()).max() < 1e-5
    assert np.abs(xs.grad.numpy() - xt.grad.numpy()).max() < 1e-5


def test_float32_and_concatenated_targets():
    x, tg, il, tl = _case(2)
    flat = np.concatenate([tg[i, : tl[i]] for i in range(len(tl))])
    xs = skiff.tensor(x.astype(np.float32), requires_grad=True)
    loss = ctc_loss(log_softmax(xs, axis=-1), flat, il, tl)
    loss.backward()
    xt = torch.tensor(x.astype(np.float32), requires_grad=True)
    lt = torch.nn.functional.ctc_loss(torch.log_softmax(xt, -1), torch.tensor(flat),
                                      torch.tensor(il), torch.tensor(tl))
    lt.backward()
    assert loss.dtype == np.float32
    assert abs(float(loss.item()) - float(lt.detach())) < 1e-5
    assert np.abs(xs.grad.numpy() - xt.grad.numpy()).max() < 1e-5


def test_impossible_alignment_zero_infinity():
    x = np.random.default_rng(3).normal(size=(3, 2, 5))
    tg = np.array([[1, 1, 2], [3, 0, 0]])  # sample 0 needs 4 frames (1 _ 1 2), has 3
    il, tl = np.array([3, 3]), np.array([3, 1])
    xs = skiff.tensor(x, dtype="float64", requires_grad=True)
    loss = ctc_loss(log_softmax(xs, axis=-1), tg, il, tl, reduction="sum", zero_infinity=True)
    loss.backward()
    xt = torch.tensor(x, requires_grad=True)
    lt = torch.nn.functional.ctc_loss(torch.log_softmax(xt, -1), torch.tensor(tg),
                                      torch.tensor(il), torch.tensor(tl), reduction="sum",
                                      zero_infinity=True)
    lt.backward()
    assert np.isfinite(loss.item()) and abs(loss.item() - float(lt.detach())) < 1e-9
    assert np.abs(xs.grad.numpy() - xt.grad.numpy()).max() < 1e-9
    inf = ctc_loss(log_softmax(skiff.tensor(x, dtype="float64"), axis=-1), tg, il, tl,
                   reduction="none")
    assert np.isinf(inf.numpy()[0]) and np.isfinite(inf.numpy()[1])


def test_gradient_by_finite_differences():
    x, tg, il, tl = _case(4, T=7, N=2, C=4, S=3)
    lp = skiff.tensor(x, dtype="float64", requires_grad=True)
    # on raw (not normalised) log-probabilities: the true gradient, no softmax shortcut
    assert gradcheck(lambda a: ctc_loss(a, tg, il, tl, reduction="none"), [lp], rtol=1e-4)


def test_bad_targets_are_one_line():
    lp = log_softmax(skiff.tensor(np.zeros((4, 1, 3))), axis=-1)
    with pytest.raises(ValueError, match="other than the blank"):
        ctc_loss(lp, np.array([[0, 1]]), [4], [2])
    with pytest.raises(ValueError, match="input lengths"):
        ctc_loss(lp, np.array([[1, 2]]), [5], [2])
