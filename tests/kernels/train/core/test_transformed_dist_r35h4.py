"""Round 35 (h4): ``distributions.TransformedDistribution`` and the common transforms (they
were missing: a squashed-Gaussian policy, a bounded prior or a flow's base ported from torch
failed), against torch 2.13 in float64: ``log_prob`` values and the gradients of its
parameters, the transforms' values, inverses and log-determinants, shapes."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import skiff  # noqa: E402

R = np.random.default_rng(357)
LOC, SCALE = R.standard_normal((3, 4)), R.uniform(0.5, 1.5, (3, 4))


def _tr(L, name):
    T = L.distributions.transforms
    return {
        "tanh": [T.TanhTransform()],
        "affine_sigmoid": [T.AffineTransform(1.0, 2.0), T.SigmoidTransform()],
        "exp_affine_tensor": [T.ExpTransform(),
                              T.AffineTransform(L.tensor(LOC[0]), L.tensor(SCALE[0]))],
        "softplus_power": [T.SoftplusTransform(), T.PowerTransform(2.0)],
        "compose_tanh_affine": [T.ComposeTransform([T.TanhTransform(),
                                                    T.AffineTransform(0.5, -3.0)])],
        "affine_event1": [T.AffineTransform(L.tensor(LOC[1]), L.tensor(SCALE[1]), event_dim=1)],
    }[name]


@pytest.mark.parametrize("name", ["tanh", "affine_sigmoid", "exp_affine_tensor",
                                  "softplus_power", "compose_tanh_affine", "affine_event1"])
@pytest.mark.parametrize("independent", [False, True])
def test_transformed_log_prob_and_gradients(name, independent):
    z = R.standard_normal((5, 3, 4)) * 0.7
    got = []
    for L in (skiff, torch):
        D = L.distributions
        loc, scale = L.tensor(LOC, requires_grad=True), L.tensor(SCALE, requires_grad=True)
        base = D.Normal(loc, scale)
        if independent:
            base = D.Independent(base, 1)
        td = D.TransformedDistribution(base, _tr(L, name))
        y = L.tensor(z)
        for t in _tr(L, name):  # values in the support: push base points through
            y = t(y)
        lp = td.log_prob(y)
        lp.sum().backward()
        got.append((tuple(td.batch_shape), tuple(td.event_shape), np.asarray(lp.detach()),
                    np.asarray(loc.grad), np.asarray(scale.grad), np.asarray(y),
                    tuple(td.sample((2,)).shape), tuple(td.rsample().shape)))
    (bs, es, lp_s, gl_s, gs_s, y_s, ss, rs), (bt, et, lp_t, gl_t, gs_t, y_t, st, rt) = got
    assert (bs, es, ss, rs) == (bt, et, st, rt)
    np.testing.assert_allclose(y_s, y_t, rtol=1e-12)
    np.testing.assert_allclose(lp_s, lp_t, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(gl_s, gl_t, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(gs_s, gs_t, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("name", ["tanh", "affine_sigmoid", "softplus_power",
                                  "compose_tanh_affine"])
def test_transform_inverse_and_log_det(name):
    x = R.standard_normal((6,)) * 0.8
    got = []
    for L in (skiff, torch):
        ts = _tr(L, name)
        xt = L.tensor(x, requires_grad=True)
        v, ld = xt, 0
        for t in ts:
            y = t(v)
            ld = ld + t.log_abs_det_jacobian(v, y)
            back = t.inv(y)
            np.testing.assert_allclose(np.asarray(back.detach()), np.asarray(v.detach()),
                                       rtol=1e-7, atol=1e-9)
            v = y
        ld.sum().backward()
        got.append((np.asarray(v.detach()), np.asarray(ld.detach()), np.asarray(xt.grad)))
    for a, b in zip(*got):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("batched", [False, True])
def test_low_rank_multivariate_normal(batched):
    """(it was missing) log_prob, entropy, variance, covariance_matrix and their gradients;
    shapes of samples."""
    loc = R.standard_normal((2, 4) if batched else (4,))
    w = R.standard_normal((2, 4, 2) if batched else (4, 2))
    d = R.uniform(0.5, 1.5, (4,))
    v = R.standard_normal((3, 2, 4) if batched else (3, 4))
    got = []
    for L in (skiff, torch):
        a, b, c = (L.tensor(x, requires_grad=True) for x in (loc, w, d))
        dist = L.distributions.LowRankMultivariateNormal(a, b, c)
        outs = (dist.log_prob(L.tensor(v)), dist.entropy(), dist.variance,
                dist.covariance_matrix)
        sum(o.sum() for o in outs).backward()
        vals = [np.asarray(o.detach()) for o in outs] + [np.asarray(t.grad) for t in (a, b, c)]
        got.append((vals,
                    (tuple(dist.batch_shape), tuple(dist.event_shape),
                     tuple(dist.rsample((5,)).shape), tuple(dist.sample().shape))))
    assert got[0][1] == got[1][1]
    for x, y in zip(got[0][0], got[1][0]):
        np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-12)
