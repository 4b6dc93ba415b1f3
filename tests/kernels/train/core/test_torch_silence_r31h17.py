"""Round 31 (h17): torch's silence. numpy warns (RuntimeWarning) on log of negatives, sqrt of
negatives, division by zero, inf - inf, overflow, means of empty tensors, ...; torch gives the
same nan/inf quietly. Each case runs under ``warnings.simplefilter("error")`` in skiff and in
torch 2.13 (the oracle), and the values must be torch's (nan and inf where torch has them)."""

import warnings

import numpy as np
import pytest

import skiff

torch = pytest.importorskip("torch")

INF, NAN = float("inf"), float("nan")

CASES = {
    "log": lambda m: m.log(m.tensor([-1.0, 0.0, 2.0])),
    "log2": lambda m: m.log2(m.tensor([-1.0, 0.0, 2.0])),
    "log10": lambda m: m.log10(m.tensor([-1.0, 0.0, 2.0])),
    "log1p": lambda m: m.log1p(m.tensor([-2.0, -1.0, 2.0])),
    "sqrt": lambda m: m.sqrt(m.tensor([-1.0, 4.0])),
    "rsqrt": lambda m: m.rsqrt(m.tensor([-1.0, 0.0, 4.0])),
    "div": lambda m: m.tensor([1.0, 0.0, -1.0]) / m.tensor([0.0, 0.0, 0.0]),
    "rdiv": lambda m: 1.0 / m.tensor([0.0, 1.0]),
    "div_scalar": lambda m: m.tensor([1.0, 0.0]) / 0.0,
    "int_true_div": lambda m: m.tensor([1, 0]) / m.tensor([0, 0]),
    "floor_div": lambda m: m.tensor([1.0, -1.0]).div(m.tensor([0.0, 0.0]), rounding_mode="floor"),
    "reciprocal": lambda m: m.tensor([0.0]).reciprocal(),
    "pow": lambda m: m.tensor([-1.0, 0.0]) ** m.tensor([0.5, -1.0]),
    "acos": lambda m: m.tensor([2.0]).acos(),
    "exp_overflow": lambda m: m.tensor([100.0, 1000.0]).exp(),
    "inf_minus_inf": lambda m: m.tensor([INF]) - m.tensor([INF]),
    "zero_times_inf": lambda m: m.tensor([0.0]) * m.tensor([INF]),
    "fmod": lambda m: m.fmod(m.tensor([1.0]), 0.0),
    "sin_inf": lambda m: m.tensor([INF]).sin(),
    "xlogy": lambda m: m.xlogy(m.tensor([1.0]), m.tensor([-1.0])),
    "logit": lambda m: m.logit(m.tensor([0.0, 1.0, 2.0])),
    "mean_empty": lambda m: m.tensor([]).mean(),
    "mean_empty_dim": lambda m: m.zeros(0, 3).mean(0),
    "mse_empty": lambda m: m.nn.functional.mse_loss(m.zeros(0), m.zeros(0)),
    "nanmean_all_nan": lambda m: m.nanmean(m.tensor([NAN])),
    "softmax_all_masked": lambda m: m.softmax(m.tensor([-INF, -INF]), 0),
    "log_softmax_all_masked": lambda m: m.log_softmax(m.tensor([-INF, -INF]), 0),
    "logsumexp_all_masked": lambda m: m.logsumexp(m.tensor([[-INF, -INF], [INF, 1.0]]), 1),
    "logsumexp_empty": lambda m: m.logsumexp(m.zeros(2, 0), 1),
    "cast_overflow": lambda m: m.tensor([1e200, -1e200]),
    "sum_overflow": lambda m: m.tensor([3e38, 3e38]).sum(),
    "nan_to_long": lambda m: m.tensor([NAN]).long(),
    "corrcoef_constant": lambda m: m.corrcoef(m.tensor([[1.0, 1.0], [1.0, 2.0]])),
    "layer_norm_eps0": lambda m: m.nn.functional.layer_norm(
        m.tensor([[1.0, 1.0, 1.0], [0.0, 1.0, 2.0]]), (3,), eps=0.0),
}


def _values(t):
    return np.asarray(t.detach().numpy() if hasattr(t, "detach") else t)


def _quiet(fn, m):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return _values(fn(m))


@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_is_silent_and_torchs(name):
    want = _quiet(CASES[name], torch)
    got = _quiet(CASES[name], skiff)
    assert got.shape == want.shape
    np.testing.assert_allclose(got.astype(float), want.astype(float), rtol=1e-6, equal_nan=True)


def _grad_cases():
    def log(m):
        x = m.tensor([0.0, -1.0, 2.0], requires_grad=True)
        x.log().sum().backward()
        return x.grad

    def sqrt(m):
        x = m.tensor([0.0, 4.0], requires_grad=True)
        x.sqrt().sum().backward()
        return x.grad

    def div(m):
        x = m.tensor([1.0], requires_grad=True)
        y = m.tensor([0.0], requires_grad=True)
        (x / y).sum().backward()
        return m.cat([x.grad, y.grad])

    def var_one(m):
        x = m.tensor([1.0], requires_grad=True)
        x.var(correction=0).backward()  # denominator 1: no torch warning either
        x2 = m.zeros(0, 2, requires_grad=True)
        x2.mean(0).sum().backward()
        return m.cat([x.grad, x2.grad.reshape(-1)])

    def second_order(m):
        x = m.tensor([0.0, 1.0], requires_grad=True)
        (g,) = m.autograd.grad(x.sqrt().sum(), x, create_graph=True)
        (gg,) = m.autograd.grad(g.sum(), x)
        return gg

    def logsumexp(m):
        x = m.tensor([[-INF, 1.0], [-INF, -INF]], requires_grad=True)
        m.logsumexp(x, 1).sum().backward()
        return x.grad

    return {f.__name__: f for f in (log, sqrt, div, var_one, second_order, logsumexp)}


GRADS = _grad_cases()


@pytest.mark.parametrize("name", sorted(GRADS))
def test_backward_is_silent_and_torchs(name):
    want = _quiet(GRADS[name], torch)
    got = _quiet(GRADS[name], skiff)
    np.testing.assert_allclose(got.astype(float), want.astype(float), rtol=1e-6, equal_nan=True)


def _in_place(m):
    x = m.tensor([1.0, 0.0])
    x /= 0.0
    y = m.tensor([-1.0, 0.0])
    y.log_()
    p = m.nn.Parameter(m.tensor([1.0, 2.0]))
    with m.no_grad():
        p.mul_(INF)
        p.sub_(m.tensor([INF, 0.0]))
    return m.cat([x, y, p.detach()])


def _optimizers(m):
    out = []
    for make in (lambda p: m.optim.SGD([p], lr=0.1, momentum=0.9),
                 lambda p: m.optim.RMSprop([p], lr=0.1)):
        p = m.nn.Parameter(m.tensor([1.0, 2.0]))
        opt = make(p)
        for g in ([INF, -INF], [INF, INF]):
            p.grad = m.tensor(g)
            opt.step()
        out.append(p.detach())
    return m.cat(out)


@pytest.mark.parametrize("fn", [_in_place, _optimizers], ids=["in_place", "optimizers"])
def test_in_place_and_optimizer_steps_are_silent(fn):
    want = _quiet(fn, torch)
    got = _quiet(fn, skiff)
    np.testing.assert_allclose(got.astype(float), want.astype(float), rtol=1e-6, equal_nan=True)


def test_silence_is_not_a_global_filter():
    """Only skiff's ops are quiet: numpy outside them still warns as the user set it."""
    skiff.log(skiff.tensor([-1.0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeWarning):
            np.log(np.array([-1.0]))
    with np.errstate(all="raise"):
        assert np.isnan(skiff.log(skiff.tensor([-1.0])).item())  # skiff's op: quiet
        with pytest.raises(FloatingPointError):
            np.log(np.array([-1.0]))


def _cross_entropy_nothing_counted(m):
    out = []
    for kw in ({}, {"weight": m.ones(3)}, {"label_smoothing": 0.1}):
        x = m.zeros(2, 3, requires_grad=True)
        loss = m.nn.functional.cross_entropy(x, m.tensor([-100, -100]), **kw)
        loss.backward()
        out += [loss.detach().reshape(1), x.grad.reshape(-1)]
    empty = m.nn.functional.cross_entropy(m.zeros(0, 3), m.zeros(0, dtype=m.long))
    return m.cat(out + [empty.reshape(1)])


def _clip_non_finite(m):
    """The norm as torch reports it, inf and nan too; the gradients where the norm is finite
    (a non-finite norm's gradients are left as they are: test_clip_leaves_non_finite)."""
    out = []
    for g in ([INF, 1.0], [NAN, 1.0], [3.0, 4.0]):
        p = m.nn.Parameter(m.tensor([1.0, 2.0]))
        p.grad = m.tensor(g)
        norm = m.nn.utils.clip_grad_norm_([p], 1.0)
        out += [norm.reshape(1)] + ([p.grad] if np.isfinite(g).all() else [])
    return m.cat(out)


def test_clip_leaves_non_finite():
    """skiff leaves the gradients of a non-finite norm as they are, on the CPU as the
    device's clipping does (torch scales them by 0 or nan: lost either way)."""
    for g in ([INF, 1.0], [NAN, 1.0]):
        p = skiff.nn.Parameter(skiff.tensor([1.0, 2.0]))
        p.grad = skiff.tensor(g)
        _quiet(lambda m, p=p: m.nn.utils.clip_grad_norm_([p], 1.0), skiff)
        np.testing.assert_array_equal(np.asarray(p.grad.numpy()), np.asarray(g, np.float32))


@pytest.mark.parametrize("fn", [_cross_entropy_nothing_counted, _clip_non_finite],
                         ids=["cross_entropy_nothing_counted", "clip_non_finite"])
def test_torchs_nan_where_nothing_is_counted(fn):
    """cross_entropy over no counted target is torch's 0/0 = nan (skiff gave 0), gradients 0;
    clip_grad_norm_ reports torch's inf/nan norm."""
    want = _quiet(fn, torch)
    got = _quiet(fn, skiff)
    np.testing.assert_allclose(got.astype(float), want.astype(float), rtol=1e-6, equal_nan=True)


VAR_CASES = {
    "var_one": lambda m: m.tensor([1.0]).var(),
    "std_one": lambda m: m.tensor([1.0]).std(),
    "var_empty_dim": lambda m: m.zeros(0, 3).var(0),
    "std_empty_dim": lambda m: m.zeros(2, 0).std(1),
    "var_correction": lambda m: m.ones(3, 2).var((0, 1), correction=6),
    "var_fine": lambda m: m.ones(3, 2).var(-1),
}


@pytest.mark.parametrize("name", sorted(VAR_CASES))
def test_var_std_without_degrees_of_freedom_warn_as_torch(name):
    """Where torch does warn (var/std with n - correction <= 0), skiff warns the same line."""
    out = {}
    for m in (torch, skiff):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            value = _values(VAR_CASES[name](m))
        out[m.__name__] = (value, sorted({str(w.message).split(" (Triggered")[0]
                                          for w in caught if w.category is UserWarning}))
    np.testing.assert_allclose(out["skiff"][0], out["torch"][0], equal_nan=True)
    assert out["skiff"][1] == out["torch"][1]
    assert not any(issubclass(w.category, RuntimeWarning) for w in caught)


def _sdpa_row_sees_nothing(m):
    g = np.random.default_rng(0)
    q, k, v = (m.tensor(g.standard_normal((2, 3, 4)), requires_grad=True) for _ in range(3))
    mask = m.tensor([[True, False, True], [False, False, False], [True, True, True]])
    out = m.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    (out * m.arange(24.0, dtype=out.dtype).reshape(2, 3, 4)).sum().backward()
    return m.cat([out.detach().reshape(-1), q.grad.reshape(-1), k.grad.reshape(-1),
                  v.grad.reshape(-1)])


def test_sdpa_row_that_sees_no_key_is_zero_as_torchs():
    """torch 2.13's attention gives 0 (and 0 gradients) for a query whose mask hides every
    key (its _safe_softmax); skiff gave nan (numpy's -inf - -inf)."""
    want = _quiet(_sdpa_row_sees_nothing, torch)
    got = _quiet(_sdpa_row_sees_nothing, skiff)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name,values", [("asinh", [-2.0, 0.0, 3.0]),
                                         ("acosh", [0.5, 1.0, 3.0]),
                                         ("atanh", [-1.0, 0.5, 2.0])])
def test_inverse_hyperbolics_as_torch(name, values):
    """``asinh``/``acosh``/``atanh`` (methods and functions; they were missing): values and
    gradients torch's, nan/inf quietly outside the domain."""
    def run(m):
        x = m.tensor(values, dtype=m.float64, requires_grad=True)
        y = getattr(x, name)() + getattr(m, name)(x)
        y.sum().backward()
        return m.cat([y.detach(), x.grad])

    np.testing.assert_allclose(_quiet(run, skiff), _quiet(run, torch), rtol=1e-12,
                               equal_nan=True)


def test_full_overflowing_the_dtype_is_refused_as_torch():
    for m in (torch, skiff):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(RuntimeError, match="cannot be converted to type float"):
                m.full((2,), 1e300)
            assert np.isinf(_values(m.full((2,), INF))).all()


@pytest.mark.parametrize("n", [0, 1, 2, 5])
def test_windows_of_any_length_silent(n):
    for name in ("hamming_window", "hann_window", "blackman_window", "bartlett_window"):
        for periodic in (True, False):
            def window(m, name=name, periodic=periodic):
                return getattr(m, name)(n, periodic=periodic)

            got, want = _quiet(window, skiff), _quiet(window, torch)
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
