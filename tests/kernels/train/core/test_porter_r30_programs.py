"""Round 30: programs a porter copies from tutorials, written once against a torch-like
module ``T`` and run under torch 2.13 and under skiff (``import skiff as torch``) from torch's
initial weights in float64: DP-SGD with per-sample gradients by ``vmap(grad)`` (clipped per
sample, noised, applied by hand), a VAE with a Bernoulli decoder and KL annealing, a graph
network pooling by ``index_add_``/``scatter_add_``/``bincount``, and batch-hard metric learning
by ``cdist``. The losses and figures along the way must equal torch's."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff
from skiff.kernels.train.core import vmap_r30

R = np.random.default_rng(3030)


@pytest.fixture(autouse=True)
def _float64():
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    skiff.set_default_dtype(skiff.float64)
    yield
    torch.set_default_dtype(old)
    skiff.set_default_dtype(skiff.float32)


def _run(prog, tol=1e-12):
    torch.manual_seed(0)
    tm, want = prog(torch, None)
    state = {k: v.detach().numpy().copy() for k, v in tm.items()}
    _, got = prog(skiff, state)
    assert len(got) == len(want)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def _start(m, init):
    """The initial state (torch's run) or torch's loaded (skiff's)."""
    if init is not None:
        m.load_state_dict(init)
    return {k: v.detach().clone() for k, v in m.state_dict().items()} if init is None else init


DX, DY = R.standard_normal((3, 12, 5)), R.integers(0, 3, (3, 12))
NOISE = R.standard_normal((3, 100))


def _dpsgd(T, init):
    nn, F, fn = T.nn, T.nn.functional, T.func
    m = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3))
    state = _start(m, init)
    params = {k: v.detach() for k, v in m.named_parameters()}

    def loss_fn(p, x, y):
        return F.cross_entropy(fn.functional_call(m, p, (x.unsqueeze(0),)), y.unsqueeze(0))

    per_sample = fn.vmap(fn.grad(loss_fn), in_dims=(None, 0, 0))
    out = []
    for step in range(3):
        x, y = T.tensor(DX[step]), T.tensor(DY[step])
        g = per_sample(params, x, y)
        norms = T.sqrt(sum((v.reshape(v.shape[0], -1) ** 2).sum(1) for v in g.values()))
        factor = (1.0 / (norms + 1e-6)).clamp(max=1.0)
        k, new = 0, {}
        for name, v in g.items():
            clipped = (v * factor.view(-1, *([1] * (v.ndim - 1)))).sum(0)
            noise = T.tensor(NOISE[step, k:k + clipped.numel()]).reshape(clipped.shape)
            k += clipped.numel()
            new[name] = params[name] - 0.5 * (clipped + 0.3 * noise) / x.shape[0]
        params = new
        out += [float(norms.sum()), float(loss_fn(params, x[0], y[0]))]
    return state, out


def test_dp_sgd_with_per_sample_gradients_equals_torch():
    vmap_r30.LOOPED.clear()
    _run(_dpsgd)
    assert not vmap_r30.LOOPED, dict(vmap_r30.LOOPED)  # skiff's vmap ran batched throughout


VX = (R.random((4, 6, 10)) > 0.5).astype(np.float64)
VE = R.standard_normal((4, 6, 2))


def _vae(T, init):
    nn, F = T.nn, T.nn.functional

    class VAE(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Sequential(nn.Linear(10, 12), nn.ReLU())
            self.mu, self.logvar = nn.Linear(12, 2), nn.Linear(12, 2)
            self.dec = nn.Sequential(nn.Linear(2, 12), nn.ReLU(), nn.Linear(12, 10))

        def forward(self, x, eps):
            h = self.enc(x)
            mu, logvar = self.mu(h), self.logvar(h)
            return self.dec(mu + eps * T.exp(0.5 * logvar)), mu, logvar

    m = VAE()
    state = _start(m, init)
    opt = T.optim.Adam(m.parameters(), lr=1e-2)
    out = []
    for step in range(4):
        x, eps = T.tensor(VX[step]), T.tensor(VE[step])
        logits, mu, logvar = m(x, eps)
        rec = -T.distributions.Bernoulli(logits=logits).log_prob(x).sum(-1).mean()
        bce = F.binary_cross_entropy_with_logits(logits, x, reduction="sum") / x.shape[0]
        kl = -0.5 * T.sum(1 + logvar - mu.pow(2) - logvar.exp(), dim=1).mean()
        loss = rec + min(1.0, step / 3) * kl
        opt.zero_grad()
        loss.backward()
        opt.step()
        with T.no_grad():
            sample = T.sigmoid(m.dec(T.zeros(2, 2))).sum()
        out += [loss.item(), bce.item(), float(sample)]
    return state, out


def test_bernoulli_vae_with_kl_annealing_equals_torch():
    _run(_vae)


NODES = R.standard_normal((7, 4))
EDGES = np.array([[0, 1, 1, 2, 3, 4, 5, 6, 6, 2], [1, 0, 2, 1, 4, 3, 6, 5, 2, 6]])
GRAPH, GY = np.array([0, 0, 0, 1, 1, 2, 2]), np.array([1, 0, 1])


def _gnn(T, init):
    nn, F = T.nn, T.nn.functional

    class GCN(nn.Module):
        def __init__(self):
            super().__init__()
            self.l1, self.l2, self.out = nn.Linear(4, 6), nn.Linear(6, 6), nn.Linear(6, 2)

        def conv(self, lin, x, ei):
            src, dst = ei
            deg = T.zeros(x.shape[0]).index_add_(0, dst, T.ones(dst.shape[0]))
            norm = (deg[src] * deg[dst]).clamp(min=1).rsqrt()
            agg = T.zeros(x.shape[0], 6).index_add_(0, dst, lin(x)[src] * norm.unsqueeze(-1))
            return F.relu(agg + lin(x))

        def forward(self, x, ei, batch):
            h = self.conv(self.l2, self.conv(self.l1, x, ei), ei)
            idx = batch.unsqueeze(-1).expand(-1, h.shape[1])
            pooled = T.zeros(3, h.shape[1]).scatter_add_(0, idx, h)
            return self.out(pooled / T.bincount(batch, minlength=3).unsqueeze(-1))

    m = GCN()
    state = _start(m, init)
    opt = T.optim.RMSprop(m.parameters(), lr=1e-2, alpha=0.9)
    out = []
    for _ in range(4):
        loss = F.cross_entropy(m(T.tensor(NODES), T.tensor(EDGES), T.tensor(GRAPH)),
                               T.tensor(GY))
        opt.zero_grad()
        loss.backward()
        opt.step()
        out.append(loss.item())
    return state, out


def test_graph_network_by_index_add_and_scatter_add_equals_torch():
    _run(_gnn)


EX, EY = R.standard_normal((3, 8, 5)), np.array([0, 0, 1, 1, 2, 2, 3, 3])


def _metric(T, init):
    nn, F = T.nn, T.nn.functional
    m = nn.Sequential(nn.Linear(5, 12), nn.ReLU(), nn.Linear(12, 4))
    state = _start(m, init)
    opt = T.optim.SGD(m.parameters(), lr=0.1, weight_decay=1e-4)
    y = T.tensor(EY)
    out = []
    for step in range(3):
        e = F.normalize(m(T.tensor(EX[step])), p=2, dim=1)
        d = T.cdist(e, e, p=2)
        same = y.unsqueeze(0) == y.unsqueeze(1)
        pos = (d * (same & ~T.eye(8, dtype=T.bool)).double()).max(dim=1).values
        neg = d.masked_fill(same, float("inf")).min(dim=1).values
        loss = F.relu(pos - neg + 0.3).mean() + F.triplet_margin_loss(
            e[::2], e[1::2], e.roll(2, 0)[::2])
        opt.zero_grad()
        loss.backward()
        opt.step()
        out += [loss.item(), float(d.sum())]
    return state, out


def test_batch_hard_metric_learning_by_cdist_equals_torch():
    _run(_metric)


def _in_place_in_graph(T, x):
    """torch's in-place ops on tensors autograd records: ``zero_``/``fill_`` (the old values
    get no gradient, a tensor fill value gets one), the in-place views ``unsqueeze_``,
    ``squeeze_``, ``t_``, ``transpose_``, and in-place ops on a slice, which write through to
    the sliced tensor (a YOLO head's ``p[..., :2].sigmoid_()``; skiff left the tensor as it
    was)."""
    y, z, w = x * 1.5, x * 2.0 + 1.0, x * x
    y[1:].zero_()
    z[:, 0].fill_(2.0)
    w[0].fill_(x[1, 1] * 3)
    v = (x + 1).unsqueeze_(0).transpose_(1, 2).squeeze_(0).t_()
    p = x * 0.5
    p[1:][0].mul_(3.0)
    p[:, 2:] += 1.0
    p[..., :2].sigmoid_()
    return y * z + w.sin() + v + p


def test_fill_zero_in_place_views_and_slice_writes_in_the_graph_equal_torch():
    X = R.standard_normal((3, 4))
    got, want = [], []
    for T, out in ((skiff, got), (torch, want)):
        x = T.tensor(X, requires_grad=True)
        r = _in_place_in_graph(T, x)
        (r * T.tensor(X)).sum().backward()
        out += [r.detach().numpy(), x.grad.numpy()]
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-13)
