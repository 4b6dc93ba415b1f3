"""Round 45 (h17): ``broadcast_shapes`` a ``torch.Size`` with torch's errors; ``instance_norm``,
``masked_fill`` and ``softmax`` of a channels-last tensor row-major as torch's; double backward
of ``linalg`` ops, each against torch 2.13 on the CPU (float64)."""

from __future__ import annotations

import numpy as np
import pytest

import skiff

torch = pytest.importorskip("torch")

LIBS = (skiff, torch)


def _np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


# ---- broadcast_shapes -----------------------------------------------------------------------
@pytest.mark.parametrize("args", [((2, 1), (1, 3)), (3, (2, 1)), (), ((),), ((0, 1), [1, 3]),
                                  ((2,), (3, 1), (1, 1, 1)), (None, (2, 1))])
def test_broadcast_shapes_is_a_size(args):
    s, t = (lib.broadcast_shapes(*args) for lib in LIBS)
    assert repr(s) == repr(t) and s == t
    assert repr(s[1:]) == repr(t[1:]) and s.numel() == t.numel()


@pytest.mark.parametrize("args", [((2,), (3,)), ((2, 3), (4, 1, 5)), ((-1,), (2,)),
                                  ((2,), (-1,)), (2.5,), ((2,), "ab")])
def test_broadcast_shapes_errors_as_torchs(args):
    got = []
    for lib in LIBS:
        with pytest.raises(Exception) as e:
            lib.broadcast_shapes(*args)
        got.append((e.type, str(e.value)))
    assert issubclass(got[0][0], got[1][0]) and got[0][1] == got[1][1]


@pytest.mark.parametrize("shapes", [((2,), (3,)), ((2, 3), (4, 1, 5)),
                                    ((1, 3), (2, 1), (4, 1, 1), (2, 5))])
def test_broadcast_tensors_mismatch_is_torchs_error(shapes):
    got = []
    for lib in LIBS:
        with pytest.raises(RuntimeError) as e:
            lib.broadcast_tensors(*[lib.zeros(s) for s in shapes])
        got.append(str(e.value))
    assert got[0] == got[1]


# ---- row-major results of a channels-last input (torch's layout) ------------------------
def _layout_cases(lib):
    F = lib.nn.functional
    return {
        "instance_norm": lambda x, m: F.instance_norm(x),
        "instance_norm_affine": lambda x, m: F.instance_norm(
            x, weight=lib.ones(3, dtype=lib.float64), bias=lib.zeros(3, dtype=lib.float64)),
        "InstanceNorm2d": lambda x, m: lib.nn.InstanceNorm2d(3, affine=True).double()(x),
        "masked_fill": lambda x, m: x.masked_fill(m, 0.0),
        "masked_fill_cl_mask": lambda x, m: x.masked_fill(
            m.to(memory_format=lib.channels_last), 0.0),
        "masked_fill_bcast_mask": lambda x, m: x.masked_fill(m[0, 0], -1.0),
        "softmax1": lambda x, m: F.softmax(x, dim=1),
        "softmax-1": lambda x, m: lib.softmax(x, -1),
        "softmax0": lambda x, m: x.softmax(0),
        "softmin1": lambda x, m: F.softmin(x, dim=1),
    }


@pytest.mark.parametrize("name", list(_layout_cases(skiff)))
def test_channels_last_input_gives_torchs_layout(name):
    x0 = np.random.default_rng(1).standard_normal((2, 3, 4, 5))
    res = []
    for lib in LIBS:
        x = lib.tensor(x0).to(memory_format=lib.channels_last).requires_grad_()
        out = _layout_cases(lib)[name](x, lib.tensor(x0 > 0.3))
        (g,) = lib.autograd.grad((out * lib.tensor(x0)).sum(), x)
        res.append((out.stride(), out.is_contiguous(), _np(out), g.stride(), _np(g)))
    (so, co, vo, sg, vg), (to, tco, tvo, tg, tvg) = res
    assert (so, co, sg) == (to, tco, tg)
    np.testing.assert_allclose(vo, tvo, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(vg, tvg, rtol=1e-10, atol=1e-12)


# ---- third derivatives through linalg/index_add (refused before: NoDoubleBackward) ----------
_RNG = np.random.default_rng(0)
_A = _RNG.standard_normal((3, 3))
_S = _A @ _A.T + 3 * np.eye(3)
_R = _RNG.standard_normal((4, 3))
_B = _RNG.standard_normal((2, 3, 3))


def _third_cases(L):
    def spd(a):
        return a @ a.mT + 3 * L.eye(3, dtype=L.float64)

    return {
        "cholesky": (lambda a: L.linalg.cholesky(spd(a)), _A),
        "cholesky_batched": (lambda a: L.linalg.cholesky(spd(a)), _B),
        "eigvalsh": (lambda a: L.linalg.eigvalsh(a + a.mT), _S),
        "eigh_vectors": (lambda a: L.linalg.eigh(a + a.mT)[1] ** 2, _S),
        "matrix_exp": (lambda a: L.linalg.matrix_exp(a * 0.5), _A),
        "matrix_exp_batched": (lambda a: L.linalg.matrix_exp(a * 0.5), _B),
        "index_add": (lambda a: L.zeros(5, 3, dtype=L.float64).index_add(
            0, L.tensor([0, 2, 2, 4]), a * a), _R),
        "index_add_dim1_alpha": (lambda a: L.ones(4, 5, dtype=L.float64).index_add(
            1, L.tensor([4, 0, 4]), a.sin(), alpha=-1.5), _R),
        "qr": (lambda a: sum((t * t.cos()).sum() for t in L.linalg.qr(a)), _R),
        "qr_batched_r_only": (lambda a: L.linalg.qr(a)[1], _B),
        "svdvals_tall": (lambda a: L.linalg.svdvals(a), _R),
        "svdvals_wide": (lambda a: L.linalg.svdvals(a.mT), _R),
        "svdvals_batched": (lambda a: L.linalg.svdvals(a), _B),
        "pinv_tall": (lambda a: L.linalg.pinv(a), _R),
        "pinv_wide": (lambda a: L.linalg.pinv(a.mT), _R),
        "scatter_reduce_sum": (lambda a: L.zeros(2, 3, dtype=L.float64).scatter_reduce(
            0, L.tensor(_IDX), a * a, "sum"), _R),
        "scatter_reduce_mean_exclude_self": (lambda a: (a[:2] * 3).scatter_reduce(
            1, L.tensor([[0, 1], [2, 1]]), a[2:, :2].exp(), "mean", include_self=False), _R),
        "scatter_reduce_amax": (lambda a: L.ones(2, 3, dtype=L.float64).scatter_reduce(
            0, L.tensor(_IDX), a * a, "amax"), _R),
        "scatter_reduce_amin_self": (lambda a: (a[:2] * 3).scatter_reduce(
            0, L.tensor(_IDX), a * a, "amin"), _R),
        "scatter_reduce_prod_self": (lambda a: (a[:2] * 3).scatter_reduce(
            0, L.tensor(_IDX), a * a + 0.5, "prod"), _R),
        "scatter_reduce_prod_exclude_self": (lambda a: (a[:2] * 3).scatter_reduce(
            1, L.tensor([[0, 1], [2, 1]]), a[2:, :2].exp(), "prod", include_self=False), _R),
    }


_IDX = [[0, 1, 0], [1, 1, 0], [0, 0, 1], [1, 0, 0]]


def _derivatives(L, f, x0):
    x = L.tensor(x0, dtype=L.float64, requires_grad=True)
    y = f(x)
    y = (y * L.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)))).sum()
    (g,) = L.autograd.grad(y, x, create_graph=True)
    (h,) = L.autograd.grad((g * g.sin()).sum(), x, create_graph=True)
    (k,) = L.autograd.grad((h * h).sum(), x)
    return [_np(v) for v in (g, h, k)]


@pytest.mark.parametrize("name", list(_third_cases(skiff)))
def test_third_derivative_matches_torch(name):
    got, want = (_derivatives(L, *_third_cases(L)[name]) for L in LIBS)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-11 * max(1.0, np.abs(b).max()))


def test_scatter_prod_with_a_zero_factor_first_order_as_torchs():
    # (its double backward, refused here before, is torch's since round 46: test_*_r46h8.py)
    x = skiff.tensor(_R, requires_grad=True)
    src = x * skiff.tensor((np.arange(12) != 4).reshape(4, 3).astype(float))  # one zero
    y = skiff.ones(2, 3, dtype=skiff.float64).scatter_reduce(0, skiff.tensor(_IDX), src, "prod")
    # first order: torch's ("all the others" product where a factor is zero)
    xt = torch.tensor(_R, requires_grad=True)
    yt = torch.ones(2, 3, dtype=torch.float64).scatter_reduce(
        0, torch.tensor(_IDX), xt * torch.tensor(_np(src) != 0).double(), "prod")
    np.testing.assert_allclose(_np(skiff.autograd.grad(y.sum(), x)[0]),
                               _np(torch.autograd.grad(yt.sum(), xt)[0]), rtol=1e-13)
