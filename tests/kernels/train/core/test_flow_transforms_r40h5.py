"""Round 40 (h5): a normalizing flow written for ``torch.distributions`` (a user's
``Transform`` subclass: ``super().__init__(cache_size=1)``, ``domain``/``codomain``
constraints giving ``event_dim``, the cache that lets ``log_prob`` of an ``rsample`` skip an
inverse the transform does not have), trained against torch 2.13 on the CPU (float64).
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import skiff  # noqa: E402


def _np(x):
    return x.detach().numpy() if isinstance(x, torch.Tensor) else np.asarray(x._data)


def _coupling(T):
    TR, C = T.distributions.transforms, T.distributions.constraints

    class Coupling(TR.Transform):
        domain = C.independent(C.real, 1)
        codomain = C.independent(C.real, 1)
        bijective = True

        def __init__(self, net, mask):
            super().__init__(cache_size=1)
            self.net, self.mask = net, mask

        def _params(self, x):
            s, t = self.net(x * self.mask).chunk(2, dim=-1)
            return T.tanh(s) * (1 - self.mask), t * (1 - self.mask)

        def _call(self, x):
            s, t = self._params(x)
            return x * T.exp(s) + t

        def _inverse(self, y):
            s, t = self._params(y)
            return (y - t) * T.exp(-s)

        def log_abs_det_jacobian(self, x, y):
            return self._params(x)[0].sum(-1)

    return Coupling


def _realnvp(T):
    D, TR = T.distributions, T.distributions.transforms
    rng = np.random.default_rng(0)
    mix = np.array([[1, .5, 0, 0], [0, 1, .3, 0], [0, 0, 1, .2], [0, 0, 0, .5]])
    data = T.tensor(rng.standard_normal((32, 4)) @ mix)
    nets = T.nn.ModuleList([T.nn.Sequential(
        T.nn.Linear(4, 8, dtype=T.float64), T.nn.Tanh(), T.nn.Linear(8, 8, dtype=T.float64))
        for _ in range(3)])
    for p in nets.parameters():
        with T.no_grad():
            p.copy_(T.tensor(rng.standard_normal(tuple(p.shape)) * 0.3))
    masks = [T.tensor(m) for m in ([1., 0, 1, 0], [0., 1, 0, 1], [1., 1, 0, 0])]
    loc = T.nn.Parameter(T.zeros(4, dtype=T.float64))
    log_scale = T.nn.Parameter(T.zeros(4, dtype=T.float64))
    opt = T.optim.Adam(list(nets.parameters()) + [loc, log_scale], lr=0.02)
    base = D.Independent(D.Normal(T.zeros(4, dtype=T.float64), T.ones(4, dtype=T.float64)), 1)
    Coupling = _coupling(T)
    losses = []
    for _ in range(4):
        parts = [Coupling(n, m) for n, m in zip(nets, masks)]
        assert parts[0].event_dim == 1 and parts[0].inv.event_dim == 1
        assert parts[0].inv.inv is parts[0]
        flow = D.TransformedDistribution(
            base, [TR.ComposeTransform(parts), TR.AffineTransform(loc, log_scale.exp(),
                                                                  event_dim=1)])
        assert tuple(flow.event_shape) == (4,) and tuple(flow.batch_shape) == ()
        loss = -flow.log_prob(data).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    z = T.tensor(rng.standard_normal((5, 4)))
    ct = TR.ComposeTransform([Coupling(n, m) for n, m in zip(nets, masks)])
    y = ct(z)
    return losses, [_np(p) for p in nets.parameters()], _np(y), _np(ct.inv(y * 1.0))


def test_a_realnvp_flow_trains_as_torchs():
    ours, theirs = _realnvp(skiff), _realnvp(torch)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12)
    for a, b in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ours[3], theirs[3], rtol=1e-10, atol=1e-13)


def _iaf(T):
    """An inverse autoregressive step without an inverse: ``log_prob`` of its own
    ``rsample`` works through the cache (torch's), and nowhere else."""
    D, TR, C = T.distributions, T.distributions.transforms, T.distributions.constraints

    class IAF(TR.Transform):
        domain = C.real_vector
        codomain = C.real_vector
        bijective = True

        def __init__(self, w, cache_size=1):
            super().__init__(cache_size=cache_size)
            self.w = w

        def _shift_scale(self, x):
            h = x @ self.w.tril(-1).T  # autoregressive: output i sees x[<i]
            return h, T.sigmoid(h + 1.0)

        def _call(self, x):
            m, s = self._shift_scale(x)
            return s * x + (1 - s) * m

        def log_abs_det_jacobian(self, x, y):
            return T.log(self._shift_scale(x)[1]).sum(-1)

    rng = np.random.default_rng(3)
    w = T.tensor(rng.standard_normal((3, 3)) * 0.5, requires_grad=True)
    base = D.Independent(D.Normal(T.zeros(3, dtype=T.float64), T.ones(3, dtype=T.float64)), 1)
    T.manual_seed(0)
    eps = T.tensor(rng.standard_normal((6, 3)))
    flow = D.TransformedDistribution(base, [IAF(w)])
    x = flow.transforms[0](eps)  # the rsample path, the noise fixed
    lp = flow.log_prob(x)
    lp.sum().backward()
    with pytest.raises(NotImplementedError):
        D.TransformedDistribution(base, [IAF(w, cache_size=0)]).log_prob(x * 1.0)
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        IAF(w, cache_size=2)
    return _np(lp), _np(w.grad)


def test_an_iaf_log_prob_of_its_sample_uses_the_cache_as_torchs():
    ours, theirs = _iaf(skiff), _iaf(torch)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_domains_of_different_event_dims_are_torchs_error():
    msgs = []
    for T in (skiff, torch):
        C = T.distributions.constraints

        class Up(T.distributions.transforms.Transform):
            domain = C.real
            codomain = C.real_vector

        with pytest.raises(ValueError) as e:
            _ = Up().event_dim
        msgs.append(str(e.value))
        assert Up().inv.domain.event_dim == 1 and Up().inv.codomain.event_dim == 0
    assert msgs[0] == msgs[1]
