"""Round 37 (h4): the distribution families torch has and skiff lacked (Gumbel, HalfNormal,
HalfCauchy, Chi2, Weibull, Pareto, Kumaraswamy, FisherSnedecor, VonMises, NegativeBinomial,
Multinomial, ContinuousBernoulli, RelaxedBernoulli, RelaxedOneHotCategorical, LogisticNormal),
``Gamma.cdf``/``special.gammainc``, ``Distribution.expand`` and the KL pairs of one family,
each against torch 2.13 in float64 (values, parameter gradients, validation errors); draws
by their moments with a fixed seed."""

import numpy as np
import pytest

import skiff
import skiff.distributions as SD

torch = pytest.importorskip("torch")
T = torch.distributions

R = np.random.default_rng(37)
LOC, SC = R.normal(size=3), R.uniform(0.5, 2.0, 3)
POS, UNIT = R.uniform(0.1, 3.0, 3), R.uniform(0.05, 0.95, 3)

# name: (parameters, a value in the support)
FAMILIES = {
    "Gumbel": ((LOC, SC), POS),
    "HalfNormal": ((SC,), POS),
    "HalfCauchy": ((SC,), POS),
    "Chi2": ((SC * 3,), POS),
    "Weibull": ((SC, SC + 0.5), POS),
    "Pareto": ((SC * 0.1, SC + 1.5), POS + 0.3),
    "Kumaraswamy": ((SC, SC + 0.5), UNIT),
    "FisherSnedecor": ((SC * 5, SC * 6), POS),
    "VonMises": ((LOC, SC * 3), POS),
    "ContinuousBernoulli": ((UNIT,), UNIT),
}


def _s(x):
    return skiff.tensor(np.asarray(x, dtype=np.float64))


def _t(x):
    return torch.tensor(np.asarray(x, dtype=np.float64))


def _close(a, b, tol=1e-9):
    a = np.asarray(a.detach().numpy(), dtype=np.float64)
    b = np.asarray(b.detach().numpy(), dtype=np.float64)
    assert a.shape == b.shape
    np.testing.assert_allclose(a, b, rtol=tol, atol=1e-12)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_family_values_and_gradients_follow_torch(name):
    params, value = FAMILIES[name]
    sp = [_s(p).requires_grad_() for p in params]
    tp = [_t(p).requires_grad_() for p in params]
    sd, td = getattr(SD, name)(*sp), getattr(T, name)(*tp)
    sl, tl = sd.log_prob(_s(value)), td.log_prob(_t(value))
    _close(sl, tl)
    sl.sum().backward()
    tl.sum().backward()
    for a, b in zip(sp, tp):
        _close(a.grad, b.grad)
    checked = 0
    for attr in ("mean", "variance", "mode", "stddev"):
        try:
            want = getattr(td, attr)
        except NotImplementedError:  # ContinuousBernoulli's mode
            continue
        _close(getattr(sd, attr), want)
        checked += 1
    for method, arg in (("entropy", None), ("cdf", value), ("icdf", UNIT)):
        try:
            want = getattr(td, method)() if arg is None else getattr(td, method)(_t(arg))
        except NotImplementedError:
            continue
        got = getattr(sd, method)() if arg is None else getattr(sd, method)(_s(arg))
        _close(got, want)
        checked += 1
    assert checked >= 4
    assert tuple(sd.sample((4,)).shape) == tuple(td.sample((4,)).shape) == (4, 3)
    assert sd.has_rsample == td.has_rsample


def test_continuous_bernoulli_near_one_half_uses_torchs_taylor_branch():
    p = np.array([0.4995, 0.5, 0.5009, 0.2])
    for kw in ("probs", "logits"):
        sd, td = SD.ContinuousBernoulli(**{kw: _s(p)}), T.ContinuousBernoulli(**{kw: _t(p)})
        for attr in ("mean", "variance"):
            _close(getattr(sd, attr), getattr(td, attr))
        _close(sd.log_prob(_s([0.3, 0.1, 0.9, 0.5])), td.log_prob(_t([0.3, 0.1, 0.9, 0.5])))
        _close(sd.entropy(), td.entropy())


@pytest.mark.parametrize("name,args,moments", [
    ("Gumbel", (1.0, 2.0), None), ("HalfNormal", (1.5,), None), ("Weibull", (2.0, 1.5), None),
    ("Pareto", (1.0, 5.0), None), ("Kumaraswamy", (2.0, 3.0), None), ("Chi2", (3.0,), None),
    ("FisherSnedecor", (6.0, 12.0), None), ("ContinuousBernoulli", (0.3,), None),
    ("NegativeBinomial", (3.0, 0.4), None), ("VonMises", (0.5, 4.0), "circular"),
])
def test_draws_have_torchs_moments(name, args, moments):
    skiff.manual_seed(0)
    d, td = getattr(SD, name)(*args), getattr(T, name)(*args)
    x = np.asarray(d.sample((40000,)).numpy(), dtype=np.float64)
    if moments == "circular":  # the circular mean and variance (torch's)
        c = np.mean(np.exp(1j * x))
        assert abs(np.angle(c) - float(td.mean)) < 0.02
        assert abs((1 - abs(c)) - float(td.variance)) < 0.01
        return
    mean, sd = float(td.mean), float(td.stddev)
    assert abs(x.mean() - mean) < 5 * sd / np.sqrt(x.size)
    assert abs(x.std() / sd - 1) < 0.05


def test_rsample_is_differentiable_in_the_parameters():
    skiff.manual_seed(1)
    scale = _s(2.0).requires_grad_()
    x = SD.Weibull(scale, _s(1.5)).rsample((1000,))
    x.mean().backward()
    assert abs(float(scale.grad) - float(x.mean().detach()) / 2.0) < 1e-9  # d(scale E)/dscale
    t = _s(0.5).requires_grad_()
    y = SD.RelaxedOneHotCategorical(t, logits=_s([0.1, 0.5, -0.3])).rsample((7,))
    assert tuple(y.shape) == (7, 3)
    np.testing.assert_allclose(y.sum(-1).detach().numpy(), 1.0, atol=1e-12)
    (y[:, 0] ** 2).sum().backward()
    assert t.grad is not None and np.isfinite(float(t.grad))


@pytest.mark.parametrize("kw", ["probs", "logits"])
def test_discrete_families_follow_torch(kw):
    p = R.uniform(0.1, 0.9, (2, 3))
    n = np.array([[2.0, 5.0, 0.5], [1.0, 3.0, 7.0]])
    k = np.array([[0.0, 3.0, 1.0], [2.0, 0.0, 5.0]])
    sd = SD.NegativeBinomial(_s(n), **{kw: _s(p)})
    td = T.NegativeBinomial(_t(n), **{kw: _t(p)})
    _close(sd.log_prob(_s(k)), td.log_prob(_t(k)))
    for attr in ("mean", "variance", "mode"):
        _close(getattr(sd, attr), getattr(td, attr))
    pm = R.dirichlet(np.ones(4), size=2) if kw == "probs" else R.normal(size=(2, 4))
    sm, tm = SD.Multinomial(6, **{kw: _s(pm)}), T.Multinomial(6, **{kw: _t(pm)})
    counts = np.array([[1.0, 0.0, 3.0, 2.0], [0.0, 0.0, 6.0, 0.0]])
    _close(sm.log_prob(_s(counts)), tm.log_prob(_t(counts)))
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)  # torch's entropy takes lgamma(tensor(n + 1))
    try:  # in the default dtype: float32's would be 8e-8 off
        _close(sm.entropy(), tm.entropy())
    finally:
        torch.set_default_dtype(default)
    for attr in ("mean", "variance"):
        _close(getattr(sm, attr), getattr(tm, attr))
    draws = sm.sample((5,))
    assert tuple(draws.shape) == (5, 2, 4) and (draws.numpy().sum(-1) == 6).all()


def test_relaxed_and_logistic_normal_log_prob_follow_torch():
    p, lg = R.uniform(0.1, 0.9, (2, 3)), R.normal(size=(2, 4))
    y = R.uniform(0.05, 0.95, (2, 3))
    _close(SD.RelaxedBernoulli(_s(0.7), probs=_s(p)).log_prob(_s(y)),
           T.RelaxedBernoulli(_t(0.7), probs=_t(p)).log_prob(_t(y)))
    simplex = R.dirichlet(2 * np.ones(4), size=2)
    _close(SD.RelaxedOneHotCategorical(_s(0.7), logits=_s(lg)).log_prob(_s(simplex)),
           T.RelaxedOneHotCategorical(_t(0.7), logits=_t(lg)).log_prob(_t(simplex)))
    loc = _s(R.normal(size=(2, 3))).requires_grad_()
    tloc = _t(loc.detach().numpy()).requires_grad_()
    sc = R.uniform(0.5, 1.5, (2, 3))
    sl = SD.LogisticNormal(loc, _s(sc)).log_prob(_s(simplex))
    tl = T.LogisticNormal(tloc, _t(sc)).log_prob(_t(simplex))
    _close(sl, tl)
    sl.sum().backward()
    tl.sum().backward()
    _close(loc.grad, tloc.grad)
    x = R.normal(size=(2, 3))
    st, tt = SD.StickBreakingTransform(), T.StickBreakingTransform()
    _close(st(_s(x)), tt(_t(x)))
    _close(st.inv(_s(simplex)), tt.inv(_t(simplex)))
    d = SD.LogisticNormal(_s(0.2), _s(1.0))
    assert (d.batch_shape, d.event_shape) == ((), (2,))


@pytest.mark.parametrize("family,p,q", [
    ("Beta", (1.5, 2.0), (0.7, 3.0)), ("Gamma", (2.0, 1.5), (1.0, 0.5)),
    ("Exponential", (2.0,), (0.3,)), ("Laplace", (0.2, 1.5), (-1.0, 0.5)),
    ("Poisson", (2.0,), (3.5,)), ("Gumbel", (0.2, 1.5), (1.0, 0.7)),
    ("HalfNormal", (1.0,), (2.5,)), ("Uniform", (0.0, 1.0), (-1.0, 2.0)),
    ("Uniform", (0.0, 3.0), (-1.0, 2.0)), ("Chi2", (3.0,), (5.0,)),
])
def test_kl_divergence_of_one_family_follows_torch(family, p, q):
    sk = SD.kl_divergence(getattr(SD, family)(*map(_s, p)), getattr(SD, family)(*map(_s, q)))
    tk = T.kl_divergence(getattr(T, family)(*map(_t, p)), getattr(T, family)(*map(_t, q)))
    _close(sk, tk)


def test_kl_dirichlet_follows_torch():
    a, b = R.uniform(0.5, 3, (2, 4)), R.uniform(0.5, 3, (2, 4))
    _close(SD.kl_divergence(SD.Dirichlet(_s(a)), SD.Dirichlet(_s(b))),
           T.kl_divergence(T.Dirichlet(_t(a)), T.Dirichlet(_t(b))))


def test_gamma_cdf_and_gammainc_with_gradients():
    a, rate, x = R.uniform(0.5, 3, 3), R.uniform(0.5, 2, 3), R.uniform(0.1, 3, 3)
    sr, sx = _s(rate).requires_grad_(), _s(x).requires_grad_()
    tr, tx = _t(rate).requires_grad_(), _t(x).requires_grad_()
    sc, tc = SD.Gamma(_s(a), sr).cdf(sx), T.Gamma(_t(a), tr).cdf(tx)
    _close(sc, tc)
    sc.sum().backward()
    tc.sum().backward()
    _close(sr.grad, tr.grad)
    _close(sx.grad, tx.grad)
    for fn in ("gammainc", "gammaincc"):
        sx2, tx2 = _s(x).requires_grad_(), _t(x).requires_grad_()
        s, t = getattr(skiff.special, fn)(_s(a), sx2), getattr(torch.special, fn)(_t(a), tx2)
        _close(s, t)
        s.sum().backward()
        t.sum().backward()
        _close(sx2.grad, tx2.grad)
    sa, ta = _s(a).requires_grad_(), _t(a).requires_grad_()
    with pytest.raises(NotImplementedError):
        torch.special.gammainc(ta, _t(x)).sum().backward()
    with pytest.raises(NotImplementedError):
        skiff.special.gammainc(sa, _s(x)).sum().backward()


def test_expand_follows_torch():
    cases = [
        (lambda D, f: D.Normal(f([0.1, 0.2, 0.3]), f([1.0, 2.0, 3.0])), R.normal(size=(5, 4, 3))),
        (lambda D, f: D.Gumbel(f([0.1, 0.2, 0.3]), f([1.0, 2.0, 3.0])), R.normal(size=(5, 4, 3))),
        (lambda D, f: D.Multinomial(3, probs=f(np.full((3, 4), 0.25))),
         np.broadcast_to([1.0, 1.0, 1.0, 0.0], (5, 4, 3, 4))),
        (lambda D, f: D.LogisticNormal(f(np.zeros((3, 2))), f(np.ones((3, 2)))),
         R.dirichlet(np.ones(3), (5, 4, 3))),
        (lambda D, f: D.MultivariateNormal(f(np.zeros((3, 2))), f(2 * np.eye(2))),
         R.normal(size=(5, 4, 3, 2))),
        (lambda D, f: D.Chi2(f([1.0, 2.0, 3.0])), R.uniform(0.1, 2, (5, 4, 3))),
    ]
    for make, value in cases:
        se, te = make(SD, _s).expand((4, 3)), make(T, _t).expand((4, 3))
        assert (se.batch_shape, se.event_shape) == (tuple(te.batch_shape), tuple(te.event_shape))
        assert tuple(se.sample((5,)).shape) == tuple(te.sample((5,)).shape)
        _close(se.log_prob(_s(value)), te.log_prob(_t(value)))
    with pytest.raises(RuntimeError):
        T.Normal(_t([0.0, 1.0]), _t([1.0, 1.0])).expand((3,))
    with pytest.raises(RuntimeError):
        SD.Normal(_s([0.0, 1.0]), _s([1.0, 1.0])).expand((3,))


@pytest.mark.parametrize("call", [
    lambda D, m: D.Gumbel(0.0, -1.0),
    lambda D, m: D.NegativeBinomial(2.0, probs=1.0),
    lambda D, m: D.Pareto(1.0, 2.0).log_prob(m.tensor(0.5)),
    lambda D, m: D.Multinomial(3, probs=m.tensor([0.5, 0.5])).log_prob(m.tensor([3.0, 1.0])),
    lambda D, m: D.HalfNormal(1.0).log_prob(m.tensor(-1.0)),
    lambda D, m: D.Chi2(-1.0),
    lambda D, m: D.RelaxedBernoulli(0.5, probs=1.5),
    lambda D, m: D.LogisticNormal(m.zeros(2), m.ones(2)).log_prob(m.tensor([0.5, 0.6, 0.1])),
    lambda D, m: D.Kumaraswamy(1.0, 2.0).log_prob(m.tensor(1.5)),
])
def test_validation_follows_torch(call):
    with pytest.raises(ValueError) as want:
        call(T, torch)
    with pytest.raises(ValueError) as got:
        call(SD, skiff)
    assert str(got.value).split("(")[0] == str(want.value).split("(")[0]
    # logits far out give probs 1.0: torch checks only the parameter passed
    SD.NegativeBinomial(2.0, logits=40.0)
    T.NegativeBinomial(2.0, logits=40.0)


def test_gamma_rsample_gradient_by_implicit_reparameterization():
    """dx/dalpha of a Gamma(alpha, 1) draw: against mpmath's derivative of the incomplete
    gamma (1e-7; torch's approximation is 2e-4 off at alpha 0.55, x 3.85) and torch's
    ``_standard_gamma_grad`` (1e-3)."""
    from skiff.kernels.train.core.distributions_r37 import _StandardGamma

    mp = pytest.importorskip("mpmath")
    alpha = np.array([0.5497211361869814, 2.0, 30.0, 0.1])
    x = np.array([3.8515925740570247, 1.3, 25.0, 1e-4])
    a = _s(alpha).requires_grad_()
    _StandardGamma.apply(a, draws=x).sum().backward()
    ref = []
    for ai, xi in zip(alpha, x):
        d = mp.diff(lambda t, xi=xi: mp.gammainc(t, 0, xi, regularized=True), ai)
        ref.append(float(-d / mp.exp((ai - 1) * mp.log(xi) - xi - mp.loggamma(ai))))
    np.testing.assert_allclose(a.grad.numpy(), ref, rtol=1e-7)
    want = torch._standard_gamma_grad(_t(alpha), _t(x)).numpy()
    np.testing.assert_allclose(a.grad.numpy(), want, rtol=1e-3)


def test_rsample_of_gamma_families_carries_the_mean_gradient():
    skiff.manual_seed(0)
    c, r = _s([2.0, 0.7]).requires_grad_(), _s([1.5, 3.0]).requires_grad_()
    SD.Gamma(c, r).rsample((100000,)).mean(0).sum().backward()
    np.testing.assert_allclose(c.grad.numpy(), 1 / np.array([1.5, 3.0]), rtol=0.02)
    np.testing.assert_allclose(r.grad.numpy(), -np.array([2.0, 0.7]) / np.array([1.5, 3.0]) ** 2,
                               rtol=0.02)
    a, b = _s(2.0).requires_grad_(), _s(3.0).requires_grad_()
    SD.Beta(a, b).rsample((100000,)).mean().backward()  # mean a / (a + b)
    assert abs(float(a.grad) - 3 / 25) < 0.005 and abs(float(b.grad) + 2 / 25) < 0.005
    for d, t in ((SD.Dirichlet(_s(np.ones(3))), T.Dirichlet(_t(np.ones(3)))),
                 (SD.StudentT(_s(3.0)), T.StudentT(_t(3.0))),
                 (SD.Chi2(_s([2.0])), T.Chi2(_t([2.0]))),
                 (SD.FisherSnedecor(_s(5.0), _s(7.0)), T.FisherSnedecor(_t(5.0), _t(7.0)))):
        assert d.has_rsample and tuple(d.rsample((4,)).shape) == tuple(t.rsample((4,)).shape)
