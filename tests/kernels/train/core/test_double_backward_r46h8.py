"""Round 46 (h8): double backward through complex ``inv``/``det``/``slogdet``/``solve``/
``solve_triangular``/``eigh``, ``linalg.eig`` and ``svd`` (values and vectors), ``angle``,
``index_put``, the rotary embedding and ``scatter_reduce(reduce='prod')`` with zero factors;
derivatives whose value is a constant still in the graph (``pow``/``relu``/``hardtanh``, as
torch's); each against torch 2.13 on the CPU (float64)."""

from __future__ import annotations

import numpy as np
import pytest

import skiff

torch = pytest.importorskip("torch")

LIBS = (skiff, torch)


def _np(t):
    return t.detach().resolve_conj().numpy() if hasattr(t, "resolve_conj") else (
        t.detach().numpy())


def _red(L, y):
    n = y.numel()
    w = L.tensor(np.cos(np.arange(n)).reshape(tuple(y.shape)))
    if y.is_complex():
        w2 = L.tensor(np.sin(np.arange(n) + 0.3).reshape(tuple(y.shape)))
        return (y.real * w).sum() + (y.imag * w2).sum()
    return (y * w).sum()


def _derivatives(L, f, x0):
    """First, second and third derivatives (``sum(g sin g)`` then ``sum(h^2)`` taken again)."""
    x = L.tensor(x0, requires_grad=True)
    (g,) = L.autograd.grad(_red(L, f(L, x)), x, create_graph=True)
    (h,) = L.autograd.grad(_red(L, g * g.sin()), x, create_graph=True)
    (k,) = L.autograd.grad(_red(L, h * h), x)
    return [_np(v) for v in (g, h, k)]


_RNG = np.random.default_rng(0)
_A = _RNG.standard_normal((3, 3)) + 3 * np.eye(3)
_AC = _A + 1j * _RNG.standard_normal((3, 3))
_BC = _RNG.standard_normal((2, 3, 3)) + 1j * _RNG.standard_normal((2, 3, 3)) + 3 * np.eye(3)
_R = _RNG.standard_normal((4, 3))
_RC = _R + 1j * _RNG.standard_normal((4, 3))
_Z = _RNG.standard_normal(5) + 1j * _RNG.standard_normal(5)


def _rotary(L, x):
    c, s = L.tensor(np.cos(np.arange(5.0))), L.tensor(np.sin(np.arange(5.0)))
    if L is skiff:
        return skiff.nn.functional.rotary_embedding(x, c, s) ** 3
    x0, x1 = x[..., 0::2], x[..., 1::2]  # the GPT-J/ERNIE interleaved pairs, in torch
    return L.stack([x0 * c - x1 * s, x1 * c + x0 * s], -1).flatten(-2) ** 3


def _svd_all(L, a, full=False):
    return sum(((t * t).cos() * (1 + i)).sum()
               for i, t in enumerate(L.linalg.svd(a, full_matrices=full)))


_CASES = {
    "inv_complex": (lambda L, a: L.linalg.inv(a), _AC),
    "inv_complex_batched": (lambda L, a: L.linalg.inv(a), _BC),
    "det_complex": (lambda L, a: L.linalg.det(a), _AC),
    "slogdet_complex": (lambda L, a: L.linalg.slogdet(a)[1] + L.linalg.slogdet(a)[0].imag, _AC),
    "solve_complex": (lambda L, a: L.linalg.solve(a, a[:, :2].sin()), _AC),
    "solve_complex_vector": (lambda L, a: L.linalg.solve(a, a[0]), _AC),
    "solve_triangular_complex": (lambda L, a: L.linalg.solve_triangular(
        a, a[:, :2] * 2, upper=True), _AC),
    "eigvalsh_complex": (lambda L, a: L.linalg.eigvalsh(a + a.mH), _AC),
    "eigh_vectors_complex": (lambda L, a: L.linalg.eigh(a + a.mH)[1].abs() ** 2, _AC),
    "eigvals_real": (lambda L, a: L.linalg.eigvals(a), _A),
    "eigvals_complex": (lambda L, a: L.linalg.eigvals(a), _AC),
    "eig_vectors_real": (lambda L, a: L.linalg.eig(a)[1].abs(), _A),
    "eig_vectors_complex_batched": (lambda L, a: L.linalg.eig(a)[1].abs() ** 2, _BC),
    "svd_u": (lambda L, a: L.linalg.svd(a, full_matrices=False)[0] ** 2, _R),
    "svd_all": (_svd_all, _R),
    "svd_all_wide": (lambda L, a: _svd_all(L, a.mT), _R),
    "svd_full_tall": (lambda L, a: _svd_all(L, a, True), _R),
    "svd_full_wide": (lambda L, a: _svd_all(L, a.mT, True), _R),
    "svd_vh_batched": (lambda L, a: L.linalg.svd(a.reshape(2, 2, 3),
                                                 full_matrices=False)[2] ** 2, _R),
    # U and Vh (torch's first double backward through a complex S costs it 1.3 s)
    "svd_complex_u_vh": (lambda L, a: sum((t.abs() ** 2 * (1 + i)).sin().sum() for i, t in
                                          enumerate(L.linalg.svd(a, full_matrices=False)[::2])),
                         _RC),
    "angle": (lambda L, a: L.angle(a), _Z),
    "index_put_accumulate": (lambda L, a: L.zeros(6, dtype=L.float64).index_put_(
        (L.tensor([0, 2, 2, 5]),), a[:4].real ** 2, accumulate=True), _Z),
    "index_put": (lambda L, a: (a.real * 2).index_put((L.tensor([0, 2, 4]),), a[:3].imag ** 3),
                  _Z),
    "rotary": (lambda L, a: _rotary(L, a.real.reshape(1, 10) * a.imag.reshape(1, 10)),
               np.concatenate([_Z, _Z[::-1]])),
}


@pytest.mark.parametrize("name", list(_CASES))
def test_third_derivative_matches_torch(name):
    got, want = (_derivatives(L, *_CASES[name]) for L in LIBS)
    for a, b in zip(got, want):
        assert np.abs(b).max() > 1e-3  # not a vacuous comparison
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11 * np.abs(b).max())


def test_gradgradcheck_as_torchs():
    """The ``gradcheck``/``gradgradcheck`` pattern (finite differences of skiff's own first and
    second derivatives) passes on eig, svd's ``U``, angle and the rotary embedding."""
    L = skiff
    fns = [lambda a: L.linalg.eigvals(a).real,
           lambda a: L.linalg.svd(a, full_matrices=False)[0] ** 2,
           lambda a: L.angle(L.complex(a, a.flip(0) + 0.5)), lambda a: _rotary(L, a.reshape(1, 10))]
    inputs = [_A, _R, _R, np.concatenate([_R.ravel(), [0.5, -0.2]])[:10]]
    for f, x0 in zip(fns, inputs):
        x = skiff.tensor(x0, requires_grad=True)
        assert skiff.autograd.gradcheck(f, (x,))
        assert skiff.autograd.gradgradcheck(f, (x,))


# ---- scatter_reduce(reduce='prod') with zero factors: torch's formulas --------------------
_IDX = [[0, 1, 0], [1, 1, 0], [0, 0, 1], [1, 0, 0]]
_Z1 = np.ones((4, 3))
_Z1[1, 1] = 0  # one zero source in group (1, 1)
_Z2 = _Z1.copy()
_Z2[0, 1] = 0  # two in it


def _prod_cases(L):
    i = L.tensor(_IDX)
    z1, z2 = L.tensor(_Z1), L.tensor(_Z2)
    zs = L.tensor([[0.0, 1, 1], [1, 1, 0]])
    return {
        "source_zero": lambda L, a: (a[:2] * 3).scatter_reduce(0, i, a * z1, "prod"),
        "self_zero": lambda L, a: (a[:2] * zs).scatter_reduce(0, i, a + 0.5, "prod"),
        "self_and_source_zero": lambda L, a: (a[:2] * zs).scatter_reduce(0, i, a * z1, "prod"),
        "exclude_self": lambda L, a: (a[:2] * 3).scatter_reduce(0, i, a * z1, "prod",
                                                                include_self=False),
        "two_zeros": lambda L, a: (a[:2] * 3).scatter_reduce(0, i, a * z2, "prod"),
    }


@pytest.mark.parametrize("name", list(_prod_cases(skiff)))
def test_scatter_prod_zero_factor_as_torchs(name):
    x0 = np.random.default_rng(3).standard_normal((4, 3))
    if name == "two_zeros":  # torch: the first gradient, then its DelayedError
        msgs = []
        for L in LIBS:
            x = L.tensor(x0, requires_grad=True)
            y = _red(L, _prod_cases(L)[name](L, x))
            (g,) = L.autograd.grad(y, x, create_graph=True)
            msgs.append(_np(g))
            with pytest.raises(RuntimeError) as e:
                L.autograd.grad((g * g).sum(), x)
            msgs.append(str(e.value))
        np.testing.assert_allclose(msgs[0], msgs[2], rtol=1e-12)
        assert msgs[1] == msgs[3]
        return
    got, want = (_derivatives(L, _prod_cases(L)[name], x0) for L in LIBS)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11 * np.abs(b).max())


# ---- a derivative that is a constant stays in the graph where torch's does -----------------
def _const_cases(L):
    F = L.nn.functional
    c = L.tensor([1.0, 2.0, -1.0, 0.5, 3.0], dtype=L.float64)
    return {
        "pow2": lambda x: x ** 2, "square": lambda x: x.square() * c,
        "pow3": lambda x: x ** 3 * c, "pow1": lambda x: x ** 1 * c,
        "relu_x": lambda x: F.relu(x) * x, "relu": lambda x: F.relu(x) * 2,
        "relu6_sq": lambda x: F.relu6(x * x), "hardtanh_sq": lambda x: F.hardtanh(x * x),
        "hardtanh": lambda x: F.hardtanh(x * 1.5),
        # torch's gradients that are constants (no graph): the same error
        "mul_const": lambda x: x * x * c, "fmod_sq": lambda x: L.fmod(x * x, 1.5),
        "clamp_sq": lambda x: (x * x).clamp(0.1, 2.0), "mse": lambda x: F.mse_loss(
            x, c, reduction="none"),
    }


def _const_chain(L, name):
    x = L.tensor([-2.0, -0.5, 0.3, 1.5, 3.0], dtype=L.float64, requires_grad=True)
    out = []
    y = _const_cases(L)[name](x).sum()
    for _ in range(4):
        try:
            (y,) = L.autograd.grad(y.sum(), x, create_graph=True)
        except RuntimeError as e:
            out.append(str(e)[:60])
            with pytest.raises(RuntimeError) as e:  # the other path, torch's words too
                L.autograd.grad(y.sum(), x)
            out.append(str(e.value)[:60])
            break
        out.append((_np(y), y.requires_grad))
    return out


@pytest.mark.parametrize("name", list(_const_cases(skiff)))
def test_constant_derivative_in_the_graph_as_torchs(name):
    """Each derivative, whether it requires grad, and where a next one fails, torch's
    message."""
    got, want = (_const_chain(L, name) for L in LIBS)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        if isinstance(b, str):
            assert a == b
        else:
            np.testing.assert_array_equal(a[0], b[0])
            assert a[1] == b[1]


def test_relu_pinn_second_derivative_as_torchs():
    """A torch user's PINN with a ReLU MLP: ``u_xx`` is zeros in the graph (torch's), the loss
    on it trains the weights (skiff raised: ``u_x`` did not reach ``x``)."""
    res = []
    for L in LIBS:
        nn = L.nn
        net = nn.Sequential(nn.Linear(1, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(),
                            nn.Linear(8, 1)).double()
        rng = np.random.default_rng(0)
        with L.no_grad():
            for p in net.parameters():
                p.copy_(L.tensor(rng.standard_normal(tuple(p.shape))))
        x = L.linspace(-1, 1, 7, dtype=L.float64).reshape(-1, 1).requires_grad_()
        u = net(x)
        ux = L.autograd.grad(u, x, L.ones_like(u), create_graph=True)[0]
        uxx = L.autograd.grad(ux, x, L.ones_like(ux), create_graph=True)[0]
        loss = ((uxx + 1.0) ** 2).mean() + (u ** 2).mean()
        loss.backward()
        res.append([_np(uxx), _np(loss)] + [_np(p.grad) for p in net.parameters()])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
