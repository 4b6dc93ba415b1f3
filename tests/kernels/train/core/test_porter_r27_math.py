"""Round 27: torch's functions and methods a porter met missing (tensor_math_r27.py,
torch_runtime.py), each against torch 2.13 in float64: values, and gradients where torch gives
them (including its zeros where a plain formula gives nan)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff

RNG = np.random.default_rng(1227)
A = RNG.standard_normal((3, 5))
B = RNG.standard_normal((3, 5))
P = RNG.uniform(0.05, 0.95, (3, 5))
POS = RNG.uniform(0.3, 4.0, (3, 5))
X0 = A.copy()
X0[0, :2] = 0.0  # zeros: xlogy and sinc have their own gradients there


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach())


def _both(fn, *arrays, grad=True):
    """fn(lib, *tensors) for skiff and torch; (outputs, input gradients) of each."""
    res = []
    for lib in (skiff, torch):
        ts = [lib.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
        out = fn(lib, *ts)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        grads = []
        if grad:
            W = np.random.default_rng(5)
            total = sum((o * lib.tensor(W.standard_normal(tuple(o.shape)))).sum()
                        for o in outs if o.dtype in (lib.float64,))
            total.backward()
            grads = [_np(t.grad) if t.grad is not None else None for t in ts
                     if t.requires_grad]
        res.append(([_np(o) for o in outs], grads))
    return res


CASES = {
    "lgamma": (lambda L, x: x.lgamma(), [POS]),
    "digamma": (lambda L, x: L.digamma(x), [POS]),
    "erfinv": (lambda L, x: x.erfinv(), [P * 2 - 1]),
    "logit": (lambda L, x: x.logit(), [P]),
    "logit_eps": (lambda L, x: x.logit(eps=0.2), [P]),
    "xlogy": (lambda L, x, y: x.xlogy(y), [X0, POS]),
    # x = y = 0: x's gradient is 0 as torch's; y's is 0 where torch's is 0/0 = nan (not tested)
    "xlogy_y0": (lambda L, x: x.xlogy(L.tensor(np.where(X0 == 0, 0.0, POS))), [X0]),
    "xlogy_fn": (lambda L, x, y: L.xlogy(x, y), [X0, POS]),
    "sinc": (lambda L, x: x.sinc(), [X0]),
    "logaddexp": (lambda L, x, y: L.logaddexp(x * 30, y), [A, B]),
    "nansum": (lambda L, x: L.nansum(x.log(), 1), [np.where(A > 1.2, -1.0, np.abs(A))]),
    "nanmean": (lambda L, x: x.log().nanmean(0), [np.where(A > 1.2, -1.0, np.abs(A))]),
    "cummax": (lambda L, x: x.cummax(1).values, [np.round(A * 2) / 2]),
    "cummin": (lambda L, x: L.cummin(x, 0)[0], [np.round(A * 2) / 2]),
    "logcumsumexp": (lambda L, x: x.logcumsumexp(1), [A]),
    "logcumsumexp_wide": (lambda L, x: L.logcumsumexp(x * 500, 1), [A]),
    "dot": (lambda L, x, y: x[0].dot(y[1]), [A, B]),
    "mv": (lambda L, x, y: x.mv(y[0]), [A, B]),
    "kron": (lambda L, x, y: L.kron(x[:2, :3], y[:, :2]), [A, B]),
    "kron_nd": (lambda L, x, y: x[0].kron(y[:2]), [A, B]),
    "diff": (lambda L, x: x.diff(), [A]),
    "diff_n2_pre": (lambda L, x, y: L.diff(x, n=2, dim=0, prepend=y[:1], append=y[1:]), [A, B]),
    "take_along_dim": (lambda L, x: L.take_along_dim(x, L.tensor(np.argsort(A, 1)[:, :2]), 1),
                       [A]),
    "take_along_dim_bc": (lambda L, x: x.take_along_dim(L.tensor([[0], [4], [2]]), dim=1), [A]),
    "take_along_dim_flat": (lambda L, x: x.take_along_dim(L.tensor([7, 1])), [A]),
    "rot90": (lambda L, x: L.cat([x.rot90(k).reshape(-1) for k in range(-1, 4)]), [A]),
    "fliplr_flipud": (lambda L, x: (x.fliplr(), x.flipud()), [A]),
    "aminmax": (lambda L, x: tuple(x.aminmax(dim=1)), [A]),
    "tensor_split": (lambda L, x: x.tensor_split(3, dim=1), [A]),
    "tensor_split_idx": (lambda L, x: L.tensor_split(x, [1, 4], dim=1), [A]),
    "unfold": (lambda L, x: x.unfold(1, 2, 2), [A]),
    "unfold_dim0": (lambda L, x: x.unfold(0, 2, 1), [A]),
    "hstack": (lambda L, x, y: L.hstack([x, y]), [A, B]),
    "vstack": (lambda L, x, y: L.vstack([x[0], y]), [A, B]),
    "dstack": (lambda L, x, y: L.dstack([x, y]), [A, B]),
    "column_stack": (lambda L, x, y: L.column_stack([x[0], y.T]), [A, B]),
    "atleast": (lambda L, x: (L.atleast_2d(x[0]), L.atleast_3d(x), L.atleast_1d(x[0, 0])), [A]),
    "broadcast": (lambda L, x, y: L.broadcast_tensors(x[:, :1], y[0]), [A, B]),
    "broadcast_to": (lambda L, x: L.broadcast_to(x[0], (2, 5)), [A]),
    "std_mean": (lambda L, x: L.std_mean(x, 1), [A]),
    "var_mean": (lambda L, x: L.var_mean(x, 0, correction=0), [A]),
    "block_diag": (lambda L, x, y: L.block_diag(x[:2, :2], y[0], x[2:, 3:]), [A, B]),
    "cartesian_prod": (lambda L, x, y: L.cartesian_prod(x[0, :3], y[0, :2]), [A, B]),
    "cov": (lambda L, x: L.cov(x), [A]),
    "corrcoef": (lambda L, x: L.corrcoef(x), [A]),
    "cosine_similarity": (lambda L, x, y: L.cosine_similarity(x, y), [A, B]),
    "triu_tril_": (lambda L, x: (x * 1).triu_(1) + (x * 2).tril_(-1), [A]),
    "float_power": (lambda L, x: x.abs().float_power(2.5), [A]),
    "dist": (lambda L, x, y: x.dist(y, p=3), [A, B]),
    "hsplit_vsplit": (lambda L, x: (*x.hsplit([2]), *L.vsplit(x, 3), *x[0, :4].hsplit(2)),
                      [A]),
    "pdist": (lambda L, x: L.pdist(x), [A]),
    "combinations": (lambda L, x: L.combinations(x[0], 2), [A]),
    "combinations_rep": (lambda L, x: L.combinations(x[0, :3], 3, with_replacement=True), [A]),
    "trapezoid": (lambda L, x: L.trapezoid(x), [A]),
    "trapezoid_x": (lambda L, x, y: L.trapezoid(x, y[0].cumsum(0), dim=1), [A, B]),
    "trapezoid_dx": (lambda L, x: L.trapezoid(x, dx=0.3, dim=0), [A]),
    "special": (lambda L, x, p: (L.special.expit(x), L.special.logit(p), L.special.erfc(x),
                                 L.special.ndtr(x), L.special.gammaln(p * 3),
                                 L.special.psi(p * 2), L.special.log_softmax(x, 1),
                                 L.special.exp2(x)), [A, P]),
    "clip_": (lambda L, x: (x * 1).clip_(-0.5, 0.5), [A]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_against_torch(name):
    fn, arrays = CASES[name]
    (os_, gs), (ot, gt) = _both(fn, *arrays)
    assert len(os_) == len(ot)
    for a, b in zip(os_, ot):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-13, err_msg=name)
    # torch's trigamma (digamma's gradient) is good to ~1e-10 only (mpmath: scipy's is exact)
    rtol = 1e-8 if name in ("digamma", "special") else 1e-10
    for a, b in zip(gs, gt):
        assert (a is None) == (b is None)
        if a is not None:
            assert np.isfinite(a).all()
            np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-12, err_msg=name)


def test_digamma_gradient_against_mpmath():
    mpmath = pytest.importorskip("mpmath")
    x = skiff.tensor(POS, requires_grad=True)
    x.digamma().sum().backward()
    want = np.vectorize(lambda v: float(mpmath.polygamma(1, v)))(POS)
    np.testing.assert_allclose(_np(x.grad), want, rtol=1e-13)


NO_GRAD = {
    "signbit": lambda L: L.tensor([-0.0, 0.0, -2.0, 3.0]).signbit(),
    "sgn": lambda L: L.tensor([-2.0, 0.0, 3.0]).sgn(),
    "heaviside": lambda L: L.tensor([-1.0, 0.0, 2.0]).heaviside(L.tensor([0.5])),
    "isin": lambda L: L.isin(L.tensor([1, 2, 3, 4]), L.tensor([2, 4])),
    "logical": lambda L: L.stack([L.logical_and(L.tensor([1, 0, 1]), L.tensor([1, 1, 0])),
                                  L.tensor([1, 0, 1]).logical_or(L.tensor([0, 0, 1])),
                                  L.tensor([1, 0, 1]).logical_xor(L.tensor([1, 1, 1])),
                                  L.tensor([0.0, 2.0, 0.0]).logical_not()]),
    "searchsorted": lambda L: L.searchsorted(L.tensor([1.0, 3.0, 5.0, 7.0]),
                                             L.tensor([3.0, 6.0, 9.0, 0.0])),
    "searchsorted_right_2d": lambda L: L.searchsorted(
        L.tensor([[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]]), L.tensor([[3.0, 6.0], [4.0, 1.0]]),
        right=True),
    "bucketize": lambda L: L.bucketize(L.tensor([1.0, 5.0, 7.0]), L.tensor([1.0, 5.0, 9.0])),
    "bucketize_right": lambda L: L.bucketize(L.tensor([1.0, 5.0, 7.0]),
                                             L.tensor([1.0, 5.0, 9.0]), right=True),
    "tril_indices": lambda L: L.tril_indices(3, 4, 1),
    "triu_indices": lambda L: L.triu_indices(4, 3, -1),
    "cummax_indices": lambda L: L.tensor([1.0, 3.0, 3.0, 2.0, 5.0, 5.0]).cummax(0).indices,
    "argwhere": lambda L: L.tensor([[0.0, 1.0], [2.0, 0.0]]).argwhere(),
    "byte_char_short": lambda L: L.stack([L.tensor([3.7, -1.2]).char().short(),
                                         L.tensor([3.7, 1.2]).byte().short()]),
    "isclose": lambda L: L.tensor([1.0, 2.0]).isclose(L.tensor([1.0 + 1e-9, 2.1])),
}


@pytest.mark.parametrize("name", list(NO_GRAD))
def test_values_against_torch(name):
    s, t = NO_GRAD[name](skiff), NO_GRAD[name](torch)
    assert str(s.dtype) == str(t.dtype).replace("torch.", "")
    np.testing.assert_array_equal(_np(s), _np(t))


def test_scalars_shapes_and_errors():
    for lib in (skiff, torch):
        a = lib.tensor([1.0, 2.0])
        assert a.equal(lib.tensor([1.0, 2.0])) and not a.equal(lib.tensor([1.0, 2.5]))
        assert a.allclose(lib.tensor([1.0, 2.0 + 1e-9]))
        with pytest.raises(RuntimeError, match="1D tensors expected"):
            lib.ones(2, 2).dot(lib.ones(2))
        with pytest.raises(RuntimeError, match="not divisible"):
            lib.ones(2, 5).hsplit(2)
    assert skiff.broadcast_shapes((3, 1), (1, 4), 4) == tuple(torch.broadcast_shapes(
        (3, 1), (1, 4), 4))


def test_runtime_switches():
    n = skiff.get_num_threads()
    skiff.set_num_threads(1)
    assert skiff.get_num_threads() == 1
    skiff.set_num_threads(n)
    with pytest.raises(ValueError, match="positive integer"):
        skiff.set_num_threads(0)
    skiff.use_deterministic_algorithms(True)
    assert skiff.are_deterministic_algorithms_enabled()
    skiff.use_deterministic_algorithms(False)
    skiff.set_float32_matmul_precision("high")
    assert skiff.get_float32_matmul_precision() == "high"
    skiff.set_float32_matmul_precision("highest")
    state = skiff.get_rng_state()
    a = skiff.randn(3)
    skiff.set_rng_state(state)
    np.testing.assert_array_equal(_np(skiff.randn(3)), _np(a))
    with pytest.raises(TypeError, match="get_rng_state"):
        skiff.set_rng_state(torch.get_rng_state())
    assert skiff.cuda.is_available() == (skiff.cuda.device_count() > 0)
    skiff.cuda.manual_seed_all(3)
    b = skiff.randn(2)
    skiff.manual_seed(3)
    np.testing.assert_array_equal(_np(skiff.randn(2)), _np(b))
    skiff.cuda.synchronize()
    skiff.cuda.empty_cache()
    import skiff.cuda as sc  # the module form, as `import torch.cuda`

    assert sc.is_available is skiff.cuda.is_available
    np_opts = np.get_printoptions()
    try:
        skiff.set_printoptions(precision=2)
        assert "1.23" in repr(skiff.tensor([1.23456], dtype=skiff.float64)) and \
            "1.2346" not in repr(skiff.tensor([1.23456], dtype=skiff.float64))
    finally:
        np.set_printoptions(**np_opts)
