"""Round 40 (h5): torch 2.13's values and gradients at the edges of ``special`` functions:
``entr``'s gradient at 0 (+inf), ``logit``'s outside [0, 1] (nan; 0 outside ``[eps, 1 -
eps]``), ``xlog1py``'s in ``x`` at ``x == 0`` (``log1p(y)``, 0 only where ``y <= -1``),
``multigammaln`` for every ``x`` (torch 2.13 no longer refuses ``x <= (p - 1) / 2``; ``p < 1``
is refused). The Bessel/Airy values were compared too: scipy's (skiff's) are the accurate
ones there (mpmath: torch 2.6e-8 off at ``j1(7)``, skiff 3e-17), so they are not torch's."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import skiff  # noqa: E402

X = np.array([-3.5, -1.2, -0.3, 0.0, 0.05, 0.1, 0.5, 0.9, 1.0, 1.5, 7.0])


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t._data)


def _value_and_grads(T, fn, *arrays):
    ts = [T.tensor(a, dtype=T.float64, requires_grad=True) for a in arrays]
    y = fn(T)(*ts)
    gs = T.autograd.grad(y.sum(), ts)
    return [_np(y)] + [_np(g) for g in gs]


@pytest.mark.parametrize("name,fn,arrays", [
    ("entr", lambda T: T.special.entr, (X,)),
    ("logit", lambda T: T.special.logit, (X,)),
    ("logit_eps", lambda T: lambda x: T.logit(x, 0.1), (X,)),
    ("xlog1py", lambda T: T.special.xlog1py,
     (np.array([0.0, 0.0, 0.0, 2.0, -0.5, 0.3, 0.0]),
      np.array([1.5, -1.0, np.nan, -1.0, 3.0, -2.0, -0.5]))),
    ("multigammaln", lambda T: lambda x: T.special.multigammaln(x, 3),
     (np.array([0.05, 0.3, 0.7, 1.0, 1.2, 2.5, 30.0]),)),
])
def test_edges_are_torchs(name, fn, arrays):
    with np.errstate(all="ignore"):
        ours, theirs = _value_and_grads(skiff, fn, *arrays), _value_and_grads(torch, fn, *arrays)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14, equal_nan=True)


def test_multigammaln_refuses_p_below_one_as_torch():
    for T in (skiff, torch):
        with pytest.raises(RuntimeError, match="p has to be greater than or equal to 1"):
            T.special.multigammaln(T.tensor([2.0]), 0)
