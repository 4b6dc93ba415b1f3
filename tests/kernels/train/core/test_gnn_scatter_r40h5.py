"""Round 40 (h5): a graph network ported from torch (degree-normalized convolutions with
``index_add_``, an attention softmax over incoming edges with ``scatter_reduce("amax")`` and
``scatter_add``, graph pooling by ``scatter_reduce`` mean/amax/amin/prod), trained with Adam
against torch 2.13 on the CPU (float64); and torch's gradient of ``amax``/``amin`` with
``include_self=False`` where values tie (the old value counts in the share when it equals the
result, as torch's ``N_to_distribute``).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:index_reduce")
import skiff  # noqa: E402


def _np(x):
    return x.detach().numpy() if isinstance(x, torch.Tensor) else np.asarray(x._data)


@pytest.mark.parametrize("reduce,include_self,fn", [
    (r, inc, fn) for (r, inc), fn in itertools.product(
        itertools.product(["amax", "amin", "mean", "prod"], [True, False]),
        ["scatter_reduce", "index_reduce"])])
def test_scatter_and_index_reduce_gradients_with_ties_are_torchs(reduce, include_self, fn):
    rng = np.random.default_rng(1)
    src = rng.integers(-2, 3, (9, 3)).astype(float)  # small integers: many ties, zeros
    src[2, 1] = src[5, 1] = 0.0
    idx = rng.integers(0, 4, (9, 3))
    base = rng.integers(-2, 3, (4, 3)).astype(float)
    w = np.arange(12.0).reshape(4, 3) - 5

    def run(T):
        s = T.tensor(src, requires_grad=True)
        b = T.tensor(base, requires_grad=True)
        if fn == "scatter_reduce":
            out = b.scatter_reduce(0, T.tensor(idx), s, reduce=reduce, include_self=include_self)
        else:
            out = b.index_reduce(0, T.tensor(idx[:, 0]), s, reduce, include_self=include_self)
        (out * T.tensor(w)).sum().backward()
        return _np(out), _np(s.grad), _np(b.grad)

    for a, b in zip(run(skiff), run(torch)):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)


def _gnn(T):
    rng = np.random.default_rng(0)
    n, e, f, c = 12, 40, 5, 3
    x = T.tensor(rng.standard_normal((n, f)))
    row, col = T.tensor(rng.integers(0, n, e)), T.tensor(rng.integers(0, n, e))
    y = T.tensor(rng.integers(0, c, n))
    batch = T.tensor(np.repeat([0, 1, 2], 4))
    lin1, lin2 = T.nn.Linear(f, 8, dtype=T.float64), T.nn.Linear(8, c, dtype=T.float64)
    att = T.nn.Parameter(T.tensor(rng.standard_normal(16)))
    params = [*lin1.parameters(), *lin2.parameters(), att]
    for p in params:
        with T.no_grad():
            p.copy_(T.tensor(rng.standard_normal(tuple(p.shape)) * 0.3))

    def conv(h, lin):
        deg = T.zeros(n, dtype=h.dtype).index_add_(0, col, T.ones(e, dtype=h.dtype)) + 1
        norm = deg.pow(-0.5)
        h = lin(h)
        msg = h.index_select(0, row) * (norm[row] * norm[col]).unsqueeze(-1)
        return T.zeros_like(h).index_add_(0, col, msg) + h / deg.unsqueeze(-1)

    def forward():
        h = T.relu(conv(x, lin1))
        score = T.nn.functional.leaky_relu((T.cat([h[row], h[col]], -1) * att).sum(-1), 0.2)
        top = T.full((n,), -1e9, dtype=h.dtype).scatter_reduce(0, col, score, reduce="amax")
        a = (score - top[col]).exp()
        a = a / (T.zeros(n, dtype=h.dtype).scatter_add(0, col, a)[col] + 1e-16)
        h = h + T.zeros_like(h).index_add(0, col, h[row] * a.unsqueeze(-1))
        out = conv(h, lin2)
        where = batch.unsqueeze(-1).expand(-1, c)
        pooled = sum(T.zeros(3, c, dtype=h.dtype).scatter_reduce(0, where, v, reduce=r,
                                                                 include_self=False)
                     for r, v in (("mean", out), ("amax", out), ("amin", out),
                                  ("prod", out.tanh())))
        return out, pooled

    opt = T.optim.Adam(params, lr=0.01, weight_decay=1e-4)
    losses = []
    for _ in range(4):
        opt.zero_grad()
        out, pooled = forward()
        loss = T.nn.functional.cross_entropy(out, y) + pooled.pow(2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, [_np(p.grad) for p in params], [_np(p) for p in params]


def test_a_graph_network_trains_as_torchs():
    ours, theirs = _gnn(skiff), _gnn(torch)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-13)
    for a, b in zip(ours[1] + ours[2], theirs[1] + theirs[2]):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-14)
