"""Round 38 (h4): torch's ``LKJCholesky``, ``Wishart``, ``InverseGamma``,
``GeneralizedPareto``, ``OneHotCategoricalStraightThrough`` and the transforms skiff lacked
(``CorrCholeskyTransform``, ``SoftmaxTransform``, ``LowerCholeskyTransform``,
``PositiveDefiniteTransform``, ``AbsTransform``, ``ReshapeTransform``,
``IndependentTransform``, ``CumulativeDistributionTransform``) against torch 2.13 in float64
(log_prob, moments, entropy and parameter gradients at 1e-9), draws by their moments (fixed
seed), torch's validation errors, and ``TransformedDistribution`` carrying the event dim
through shape-changing transforms as torch's."""

import numpy as np
import pytest

import skiff
import skiff.distributions as S

torch = pytest.importorskip("torch")
D = torch.distributions

R = np.random.RandomState(38)
A = R.randn(2, 3, 3)
COV = A @ A.transpose(0, 2, 1) + 3 * np.eye(3)


def both(x, grad=False):
    return skiff.tensor(x, requires_grad=grad), torch.tensor(x, requires_grad=grad)


def close(a, b, tol=1e-9):
    np.testing.assert_allclose(np.asarray(a.detach().numpy()), b.detach().numpy(), rtol=tol,
                               atol=tol)


@pytest.mark.parametrize("dim,conc", [(3, 0.5), (4, [1.0, 2.5])])
def test_lkj_cholesky_is_torchs(dim, conc):
    cs, ct = both(np.asarray(conc, float), True)
    ds, dt = S.LKJCholesky(dim, cs), D.LKJCholesky(dim, ct)
    v = dt.sample((5,))
    ls, lt = ds.log_prob(skiff.tensor(v.numpy())), dt.log_prob(v)
    close(ls, lt)
    ls.sum().backward()
    lt.sum().backward()
    close(cs.grad, ct.grad)
    assert ds.batch_shape == tuple(dt.batch_shape) and ds.event_shape == (dim, dim)


def test_lkj_draws_are_correlation_factors_with_the_lkj_marginals():
    """Every off-diagonal r_ij of an LKJ(eta) correlation matrix has (r + 1) / 2 ~
    Beta(eta - 1 + d / 2, eta - 1 + d / 2): E r^2 = 1 / b, E r^4 = 3 / (b (b + 2)),
    b = 2 eta + d - 1 (Lewandowski, Kurowicka & Joe 2009)."""
    skiff.manual_seed(0)
    eta, d = 2.0, 4
    x = S.LKJCholesky(d, eta).sample((20000,)).numpy()
    assert np.allclose(np.triu(x, 1), 0) and (np.diagonal(x, 0, -2, -1) > 0).all()
    corr = x @ np.swapaxes(x, -1, -2)
    np.testing.assert_allclose(np.diagonal(corr, 0, -2, -1), 1, atol=1e-6)  # float32
    # (torch's own draws give rows 3 and 4 E r^2 ~ 0.186: its Beta shapes are not the onion's)
    r2 = corr[:, np.tril_indices(d, -1)[0], np.tril_indices(d, -1)[1]] ** 2
    b = 2 * eta + d - 1
    np.testing.assert_allclose(r2.mean(0), 1 / b, atol=0.005)
    np.testing.assert_allclose((r2 * r2).mean(0), 3 / (b * (b + 2)), atol=0.004)
    assert abs(corr[:, 1, 0].mean()) < 0.01


@pytest.mark.filterwarnings("ignore:Singular sample")  # torch's sampler, at df 4.5
@pytest.mark.parametrize("kw", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_wishart_is_torchs(kw):
    m = COV if kw != "scale_tril" else np.linalg.cholesky(COV)
    ms, mt = both(m, True)
    dfs, dft = both(np.array([4.5, 6.0]), True)
    # torch's cholesky_solve puts a gradient on the upper triangle it never reads; a
    # tril-parameterized factor (as users write it) gets the same gradient from both
    ps, pt = (ms.tril(), mt.tril()) if kw == "scale_tril" else (ms, mt)
    ds, dt = S.Wishart(dfs, **{kw: ps}), D.Wishart(dft, **{kw: pt})
    v = dt.sample((3,))
    ls, lt = ds.log_prob(skiff.tensor(v.numpy())), dt.log_prob(v)
    close(ls, lt)
    close(ds.entropy(), dt.entropy())
    for p in ("mean", "mode", "variance", "covariance_matrix", "precision_matrix",
              "scale_tril"):
        close(getattr(ds, p), getattr(dt, p))
    (ls.sum() + ds.entropy().sum()).backward()
    (lt.sum() + dt.entropy().sum()).backward()
    close(ms.grad, mt.grad)
    close(dfs.grad, dft.grad, 1e-8)  # digamma's derivative (trigamma)


def test_wishart_rsample_moments_and_df_gradient():
    skiff.manual_seed(0)
    dt = D.Wishart(torch.tensor(5.0, dtype=torch.float64),
                   covariance_matrix=torch.tensor(COV[0]))
    x = S.Wishart(5.0, covariance_matrix=skiff.tensor(COV[0])).rsample((40000,)).numpy()
    mean, var = dt.mean.numpy(), dt.variance.numpy()
    assert np.abs(x.mean(0) - mean).max() < 0.02 * np.abs(mean).max()
    assert np.abs(x.var(0) - var).max() < 0.05 * var.max()
    df = skiff.tensor(5.0, dtype=skiff.float64, requires_grad=True)
    S.Wishart(df, covariance_matrix=skiff.tensor(COV[0])).rsample((20000,)).mean(0)[0, 0]\
        .backward()
    np.testing.assert_allclose(float(df.grad), COV[0][0, 0], rtol=0.02)  # d E[X] / d df = cov


def test_inverse_gamma_is_torchs():
    (as_, at), (rs_, rt) = both(np.array([0.7, 1.5, 2.5, 4.0]), True), both(
        np.array([1.0, 2.0, 0.5, 3.0]), True)
    ds, dt = S.InverseGamma(as_, rs_), D.InverseGamma(at, rt)
    v = np.array([0.3, 1.2, 2.0, 0.9])
    ls, lt = ds.log_prob(skiff.tensor(v)), dt.log_prob(torch.tensor(v))
    close(ls, lt)
    for p in ("mean", "mode", "variance"):  # inf where torch's is
        np.testing.assert_array_equal(getattr(ds, p).detach().numpy(),
                                      getattr(dt, p).detach().numpy())
    close(ds.entropy(), dt.entropy())
    (ls.sum() + ds.entropy().sum()).backward()
    (lt.sum() + dt.entropy().sum()).backward()
    close(as_.grad, at.grad, 1e-8)
    close(rs_.grad, rt.grad)
    skiff.manual_seed(0)
    x = S.InverseGamma(4.0, 3.0).sample((40000,)).numpy()
    np.testing.assert_allclose(x.mean(), 1.0, rtol=0.02)


def test_generalized_pareto_is_torchs_in_float32():
    # torch's own GeneralizedPareto.log_prob refuses float64 (isclose against a float32 zero)
    loc, sc, c = (np.array(a, np.float32) for a in ([0.1, 0.0, -1.0, 0.5], [2.0, 1.0, 0.5, 1.5],
                                                     [0.4, 0.0, -0.3, 0.2]))
    (ls_, lt_), (ss, st), (cs, ct) = both(loc, True), both(sc, True), both(c, True)
    ds, dt = S.GeneralizedPareto(ls_, ss, cs), D.GeneralizedPareto(lt_, st, ct)
    v, u = np.array([1.0, 0.5, -0.2, 2.0], np.float32), np.array([0.1, 0.5, 0.9, 0.99],
                                                                   np.float32)
    a, b = ds.log_prob(skiff.tensor(v)) + ds.cdf(skiff.tensor(v)), dt.log_prob(
        torch.tensor(v)) + dt.cdf(torch.tensor(v))
    close(a, b, 1e-6)
    close(ds.icdf(skiff.tensor(u)), dt.icdf(torch.tensor(u)), 1e-6)
    for p in ("mean", "mode", "variance"):
        close(getattr(ds, p), getattr(dt, p), 1e-6)
    close(ds.entropy(), dt.entropy(), 1e-6)
    a.sum().backward()
    b.sum().backward()
    for gs, gt in ((ls_, lt_), (ss, st), (cs, ct)):
        close(gs.grad, gt.grad, 1e-6)
    skiff.manual_seed(0)
    x = S.GeneralizedPareto(0.1, 2.0, 0.2).rsample((40000,)).numpy()
    np.testing.assert_allclose(x.mean(), 0.1 + 2.0 / 0.8, rtol=0.03)
    assert x.min() >= 0.1


def test_one_hot_straight_through_gradient_is_torchs():
    ls_, lt_ = both(R.randn(4, 3), True)
    w = R.randn(4, 3)
    ds = S.OneHotCategoricalStraightThrough(logits=ls_)
    x = ds.rsample()
    assert ds.has_rsample and set(np.unique(x.detach().numpy())) <= {0.0, 1.0}
    (x * skiff.tensor(w)).sum().backward()
    (D.OneHotCategoricalStraightThrough(logits=lt_).rsample() * torch.tensor(w)).sum()\
        .backward()
    close(ls_.grad, lt_.grad)


@pytest.mark.parametrize("name,shape", [("CorrCholeskyTransform", (2, 6)),
                                        ("SoftmaxTransform", (2, 6)), ("AbsTransform", (2, 6)),
                                        ("LowerCholeskyTransform", (2, 3, 3)),
                                        ("PositiveDefiniteTransform", (2, 3, 3))])
def test_transforms_are_torchs(name, shape):
    xs, xt = both(R.randn(*shape), True)
    ts, tt = getattr(S.transforms, name)(), getattr(D.transforms, name)()
    ys, yt = ts(xs), tt(xt)
    close(ys, yt)
    close(ts.inv(ys), tt.inv(yt))
    assert (ts.domain.event_dim, ts.codomain.event_dim) == (tt.domain.event_dim,
                                                            tt.codomain.event_dim)
    ls, lt = (ys ** 3).sum(), (yt ** 3).sum()
    if name == "CorrCholeskyTransform":
        ls = ls + ts.log_abs_det_jacobian(xs, ys).sum()
        lt = lt + tt.log_abs_det_jacobian(xt, yt).sum()
        close(ts.log_abs_det_jacobian(xs, ys), tt.log_abs_det_jacobian(xt, yt))
    ls.backward()
    lt.backward()
    close(xs.grad, xt.grad)


def _normal(lib, n):
    return lib.distributions.Normal(lib.zeros(n, dtype=lib.float64),
                                    lib.ones(n, dtype=lib.float64))


def test_transformed_distribution_carries_the_event_dim_as_torchs():
    scs, sct = both(np.abs(R.randn(6)) + 0.5, True)
    v = R.randn(4, 2, 3)
    corr = D.LKJCholesky(3, torch.tensor(1.5, dtype=torch.float64)).sample((4,))
    lps = []
    for lib, sc in ((skiff, scs), (torch, sct)):
        T = lib.distributions.transforms
        flow = lib.distributions.TransformedDistribution(
            lib.distributions.Independent(_normal(lib, 6), 1),
            [T.IndependentTransform(T.AffineTransform(0.3, sc), 1),
             T.ReshapeTransform((6,), (2, 3))])
        prior = lib.distributions.TransformedDistribution(_normal(lib, 3),
                                                          T.CorrCholeskyTransform())
        copula = lib.distributions.TransformedDistribution(
            _normal(lib, 3), [T.CumulativeDistributionTransform(lib.distributions.Normal(
                0.5, 2.0))])
        lp = flow.log_prob(lib.tensor(v))
        lp.sum().backward()
        lps.append((lp, prior.log_prob(lib.tensor(corr.numpy())),
                    copula.log_prob(lib.tensor(np.array([0.2, 0.5, 0.7]))), sc.grad,
                    (tuple(flow.batch_shape), tuple(flow.event_shape),
                     tuple(prior.event_shape))))
    for a, b in zip(lps[0][:4], lps[1][:4]):
        close(a, b)
    assert lps[0][4] == lps[1][4] == ((), (2, 3), (3, 3))


def test_validation_is_torchs():
    for lib in (skiff, torch):
        Dl = lib.distributions
        with pytest.raises(ValueError, match="concentration"):
            Dl.LKJCholesky(3, lib.tensor(-1.0))
        with pytest.raises(ValueError, match="dim"):
            Dl.LKJCholesky(1, 1.0)
        with pytest.raises(ValueError, match="df"):
            Dl.Wishart(lib.tensor(1.5), covariance_matrix=lib.tensor(COV[0]))
        with pytest.raises(ValueError, match="support"):
            Dl.LKJCholesky(3, 1.0).log_prob(lib.tensor(np.eye(3) * 2))
        with pytest.raises(ValueError, match="support"):
            Dl.Wishart(lib.tensor(4.0, dtype=lib.float64),
                       covariance_matrix=lib.tensor(COV[0])).log_prob(lib.tensor(-COV[1]))
        with pytest.raises(ValueError, match="rate"):
            Dl.InverseGamma(lib.tensor(1.0), lib.tensor(-1.0))
        with pytest.raises(ValueError, match="scale"):
            Dl.GeneralizedPareto(lib.tensor(0.0), lib.tensor(-1.0), lib.tensor(0.1))
