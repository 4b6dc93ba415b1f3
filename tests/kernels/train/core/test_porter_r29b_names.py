"""Round 29, second pass: torch's top-level functions and Tensor methods ports call that
skiff lacked (cross, inner, mode, nanmedian, select/slice_scatter, svd, unique_consecutive,
type, sum_to_size, ...), each against torch 2.13 (values, and gradients where torch has)."""

import numpy as np
import pytest
import torch

import skiff


def _np(t):
    return np.asarray(t.detach().numpy())


def _both(x, grad=False):
    return (torch.tensor(x, requires_grad=grad), skiff.tensor(x, requires_grad=grad))


RNG = np.random.default_rng(0)


@pytest.mark.parametrize("name,args", [
    ("cross", ((4, 3), (4, 3))), ("cross", ((3, 5), (3, 5))), ("inner", ((2, 4), (3, 4))),
    ("inner", ((5,), (5,))), ("inner", ((2, 3, 4), (4,))),
])
def test_products_values_and_gradients(name, args):
    xs = [RNG.standard_normal(s) for s in args]
    T = [torch.tensor(x, requires_grad=True) for x in xs]
    S = [skiff.tensor(x, requires_grad=True) for x in xs]
    to, so = getattr(torch, name)(*T), getattr(skiff, name)(*S)
    np.testing.assert_allclose(_np(so), _np(to), rtol=1e-13, atol=1e-14)
    w = RNG.standard_normal(tuple(to.shape))
    (to * torch.tensor(w)).sum().backward()
    (so * skiff.tensor(w)).sum().backward()
    for a, b in zip(S, T):
        np.testing.assert_allclose(_np(a.grad), _np(b.grad), rtol=1e-13, atol=1e-14)
    if name == "cross":
        np.testing.assert_allclose(_np(S[0].cross(S[1], dim=-1 if args[0][-1] == 3 else 0)),
                                   _np(torch.cross(T[0], T[1], dim=-1 if args[0][-1] == 3
                                                   else 0)), rtol=1e-13)


def test_scatters_with_gradients_to_both_inputs():
    x, s1, s2 = RNG.standard_normal((4, 5)), RNG.standard_normal(4), RNG.standard_normal((4, 2))
    tx, sx = _both(x, True)
    ta, sa = _both(s1, True)
    tb, sb = _both(s2, True)
    to = torch.select_scatter(tx, ta, 1, 2) * 2 + torch.slice_scatter(tx, tb, dim=1, start=1,
                                                                      end=5, step=2)
    so = skiff.select_scatter(sx, sa, 1, 2) * 2 + skiff.slice_scatter(sx, sb, dim=1, start=1,
                                                                      end=5, step=2)
    np.testing.assert_allclose(_np(so), _np(to), rtol=1e-14)
    w = RNG.standard_normal((4, 5))
    (to ** 2 * torch.tensor(w)).sum().backward()
    (so ** 2 * skiff.tensor(w)).sum().backward()
    for a, b in ((sx, tx), (sa, ta), (sb, tb)):
        np.testing.assert_allclose(_np(a.grad), _np(b.grad), rtol=1e-13)


def test_mode_nanmedian_msort():
    a = RNG.integers(0, 4, (3, 7)).astype(float)
    tx, sx = _both(a, True)
    for dim in (0, 1, -1):
        tv, ti = torch.mode(tx, dim)
        sv, si = skiff.mode(sx, dim)
        np.testing.assert_array_equal(_np(sv), _np(tv))
        np.testing.assert_array_equal(_np(si), _np(ti))
    tv.sum().backward()
    sv.sum().backward()
    np.testing.assert_array_equal(_np(sx.grad), _np(tx.grad))
    b = RNG.standard_normal((4, 6))
    b[0, [1, 3]] = np.nan
    b[2, :] = np.nan
    tb, sb = _both(b)
    for dim in (0, 1):
        tv, ti = torch.nanmedian(tb, dim, keepdim=True)
        sv, si = skiff.nanmedian(sb, dim, keepdim=True)
        np.testing.assert_array_equal(_np(sv), _np(tv))
        np.testing.assert_array_equal(_np(si)[~np.isnan(_np(sv))], _np(ti)[~np.isnan(_np(tv))])
    np.testing.assert_array_equal(_np(skiff.nanmedian(sb)), _np(torch.nanmedian(tb)))
    np.testing.assert_array_equal(_np(skiff.msort(sb)), _np(torch.msort(tb)))


def test_unique_consecutive_unravel_index_logspace_diagflat():
    a = np.array([1, 1, 2, 2, 3, 1, 1, 2])
    tr = torch.unique_consecutive(torch.tensor(a), return_inverse=True, return_counts=True)
    sr = skiff.unique_consecutive(skiff.tensor(a), return_inverse=True, return_counts=True)
    for s, t in zip(sr, tr):
        np.testing.assert_array_equal(_np(s), _np(t))
    m = np.array([[1, 2], [1, 2], [3, 4], [1, 2]])
    tr = torch.unique_consecutive(torch.tensor(m), dim=0, return_counts=True)
    sr = skiff.unique_consecutive(skiff.tensor(m), dim=0, return_counts=True)
    for s, t in zip(sr, tr):
        np.testing.assert_array_equal(_np(s), _np(t))
    idx = np.array([0, 5, 11, 7])
    for s, t in zip(skiff.unravel_index(skiff.tensor(idx), (3, 4)),
                    torch.unravel_index(torch.tensor(idx), (3, 4))):
        np.testing.assert_array_equal(_np(s), _np(t))
    np.testing.assert_allclose(_np(skiff.logspace(-2, 1, 7, base=2.0, dtype=skiff.float64)),
                               _np(torch.logspace(-2, 1, 7, base=2.0, dtype=torch.float64)),
                               rtol=1e-15)
    x = RNG.standard_normal((2, 2))
    np.testing.assert_array_equal(_np(skiff.diagflat(skiff.tensor(x), 1)),
                                  _np(torch.diagflat(torch.tensor(x), 1)))
    assert skiff.is_nonzero(skiff.tensor([0.5])) is torch.is_nonzero(torch.tensor([0.5]))
    with pytest.raises(RuntimeError, match="ambiguous"):
        skiff.is_nonzero(skiff.ones(2))


def test_svd_pinverse_and_functional_forms():
    x = RNG.standard_normal((5, 3))
    tx, sx = _both(x)
    tu, ts, tv = torch.svd(tx)
    su, ss, sv = skiff.svd(sx)
    assert tuple(sv.shape) == tuple(tv.shape) == (3, 3) and tuple(su.shape) == (5, 3)
    np.testing.assert_allclose(_np(ss), _np(ts), rtol=1e-13)
    np.testing.assert_allclose(_np(su @ skiff.diag_embed(ss) @ sv.transpose(0, 1)), x,
                               atol=1e-13)
    np.testing.assert_allclose(_np(skiff.pinverse(sx)), _np(torch.pinverse(tx)), atol=1e-13)
    y = RNG.standard_normal(8)
    ty, sy = _both(y)
    np.testing.assert_array_equal(_np(skiff.hardshrink(sy, 0.4)), _np(torch.hardshrink(ty, 0.4)))
    np.testing.assert_array_equal(_np(skiff.threshold(sy, 0.1, -2.0)),
                                  _np(torch.threshold(ty, 0.1, -2.0)))
    np.testing.assert_array_equal(_np(skiff.dropout(sy, 0.5, False)),
                                  _np(torch.dropout(ty, 0.5, False)))
    i, j = np.array([12, 5, 7]), np.array([10, 3, 1])
    for op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        np.testing.assert_array_equal(_np(getattr(skiff, op)(skiff.tensor(i), skiff.tensor(j))),
                                      _np(getattr(torch, op)(torch.tensor(i), torch.tensor(j))))


def test_tensor_methods():
    x = RNG.standard_normal((3, 4))
    tx, sx = _both(x)
    for name, args in (("clamp_min_", (0.1,)), ("clamp_max_", (0.2,)), ("square_", ()),
                       ("renorm_", (2, 0, 1.0))):
        t, s = tx.clone(), sx.clone()
        getattr(t, name)(*args)
        getattr(s, name)(*args)
        np.testing.assert_allclose(_np(s), _np(t), rtol=1e-13, err_msg=name)
    p = RNG.uniform(0.05, 0.95, 5)
    t, s = torch.tensor(p), skiff.tensor(p)
    t.logit_()
    s.logit_()
    np.testing.assert_allclose(_np(s), _np(t), rtol=1e-13)
    n = np.array([np.nan, np.inf, -1.0])
    t, s = torch.tensor(n), skiff.tensor(n)
    t.nan_to_num_(0.5, 9.0)
    s.nan_to_num_(0.5, 9.0)
    np.testing.assert_array_equal(_np(s), _np(t))
    tg, sg = _both(RNG.standard_normal((2, 3, 4)), True)
    to, so = tg.sum_to_size(3, 1), sg.sum_to_size(3, 1)
    np.testing.assert_allclose(_np(so), _np(to), rtol=1e-13)
    (to * 2).sum().backward()
    (so * 2).sum().backward()
    np.testing.assert_array_equal(_np(sg.grad), _np(tg.grad))
    assert sx.type() == tx.type() == "torch.DoubleTensor"
    assert sx.type("torch.FloatTensor").type() == tx.type(torch.FloatTensor).type()
    with pytest.raises(RuntimeError, match="expandable"):
        sg.sum_to_size(5)


def test_random_fills_respect_their_ranges():
    s = skiff.zeros(2000)
    s.random_(3, 9)
    v = _np(s)
    assert v.min() == 3 and v.max() == 8 and np.all(v == np.round(v))
    assert (_np(skiff.zeros(500).cauchy_()) != 0).all()
    assert _np(skiff.zeros(500).geometric_(0.3)).min() >= 1
    assert _np(skiff.zeros(500).log_normal_()).min() > 0
    r = _np(skiff.randint_like(skiff.zeros(300), 2, 5))
    assert set(np.unique(r)) == {2.0, 3.0, 4.0}
    z = _np(skiff.normal(skiff.tensor(np.full(4000, 3.0)), 0.5))
    assert abs(z.mean() - 3.0) < 0.05 and abs(z.std() - 0.5) < 0.05
    assert _np(skiff.poisson(skiff.tensor(np.full(100, 4.0)))).min() >= 0


@pytest.mark.parametrize("k", [0, 2, -1])
def test_diag_of_a_vector_builds_the_matrix_with_gradients(k):
    v = RNG.standard_normal(4)
    tv, sv = _both(v, True)
    to, so = torch.diag(tv, k), skiff.diag(sv, k)
    np.testing.assert_array_equal(_np(so), _np(to))
    w = RNG.standard_normal(tuple(to.shape))
    (to * torch.tensor(w)).sum().backward()
    (so * skiff.tensor(w)).sum().backward()
    np.testing.assert_array_equal(_np(sv.grad), _np(tv.grad))
    np.testing.assert_array_equal(_np(so.diag(k)), v)


@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window",
                                  "bartlett_window", "kaiser_window"])
@pytest.mark.parametrize("n,periodic", [(1, True), (8, True), (9, False), (0, True)])
def test_windows(name, n, periodic):
    t = getattr(torch, name)(n, periodic=periodic, dtype=torch.float64)
    s = getattr(skiff, name)(n, periodic=periodic, dtype=skiff.float64)
    np.testing.assert_allclose(_np(s), _np(t), rtol=1e-12, atol=1e-15)


def test_integrals_and_sign_forms_with_gradients():
    y, x = RNG.standard_normal((3, 6)), np.sort(RNG.uniform(0, 2, 6))
    ty, sy = _both(y, True)
    to = torch.cumulative_trapezoid(ty, torch.tensor(x)) + torch.cumulative_trapezoid(ty, dx=0.3)
    so = skiff.cumulative_trapezoid(sy, skiff.tensor(x)) + skiff.cumulative_trapezoid(sy, dx=0.3)
    to = to.sum() + torch.trapz(ty, torch.tensor(x)).sum()
    so = so.sum() + skiff.trapz(sy, skiff.tensor(x)).sum()
    np.testing.assert_allclose(_np(so), _np(to), rtol=1e-13)
    to.backward()
    so.backward()
    np.testing.assert_allclose(_np(sy.grad), _np(ty.grad), rtol=1e-13)
    a, b = RNG.standard_normal(6), np.array([1.0, -2.0, -0.0, 0.0, 3.0, -1.0])
    ta, sa = _both(a, True)
    to = torch.copysign(ta, torch.tensor(b)) * 2 + torch.logaddexp2(ta, torch.tensor(b))
    so = skiff.copysign(sa, skiff.tensor(b)) * 2 + skiff.logaddexp2(sa, skiff.tensor(b))
    np.testing.assert_allclose(_np(so), _np(to), rtol=1e-13)
    to.sum().backward()
    so.sum().backward()
    np.testing.assert_allclose(_np(sa.grad), _np(ta.grad), rtol=1e-13)
    np.testing.assert_array_equal(_np(skiff.fix(skiff.tensor(a * 3))),
                                  _np(torch.fix(torch.tensor(a * 3))))


def test_more_in_place_and_linalg_methods():
    x = RNG.standard_normal((3, 3))
    for name, args in (("abs_", ()), ("sign_", ()), ("floor_", ()), ("ceil_", ()),
                       ("round_", ()), ("cumsum_", (1,))):
        t, s = torch.tensor(x), skiff.tensor(x)
        getattr(t, name)(*args)
        getattr(s, name)(*args)
        np.testing.assert_allclose(_np(s), _np(t), rtol=1e-13, err_msg=name)
    spd = x @ x.T + 3 * np.eye(3)
    np.testing.assert_allclose(_np(skiff.tensor(spd).cholesky()), _np(torch.tensor(spd).cholesky()),
                               rtol=1e-13)
    np.testing.assert_allclose(_np(skiff.tensor(x).matrix_power(3)),
                               _np(torch.tensor(x).matrix_power(3)), rtol=1e-12)
    q, r = skiff.tensor(x).qr()
    np.testing.assert_allclose(np.abs(_np(r)), np.abs(_np(torch.tensor(x).qr()[1])), rtol=1e-12)
    v, w = RNG.standard_normal(3), RNG.standard_normal(3)
    T, S = torch.tensor, skiff.tensor
    np.testing.assert_allclose(_np(S(v).addmv(S(x), S(w), beta=0.5, alpha=2)),
                               _np(T(v).addmv(T(x), T(w), beta=0.5, alpha=2)), rtol=1e-13)
    np.testing.assert_allclose(_np(S(x).addr(S(v), S(w), alpha=3)),
                               _np(T(x).addr(T(v), T(w), alpha=3)), rtol=1e-13)
    assert abs(float(S(v).vdot(S(w))) - float(T(v).vdot(T(w)))) < 1e-13
    np.testing.assert_array_equal(_np(skiff.adjoint(S(x))), _np(torch.adjoint(T(x))))
