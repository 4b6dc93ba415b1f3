"""Round 35 (h4): ``skiff.linalg`` on complex matrices against torch 2.13 in complex128:
values and the gradients of real losses (torch's convention, ``dL/dx + i dL/dy``). Before,
the norms of a complex matrix were 0 and the gradients of ``eigh``/``eigvalsh``, ``qr``,
``cholesky``, ``slogdet``, ``matrix_exp`` were the conjugate of torch's or worse; ``eig``,
``eigvals`` were missing and ``svd(full_matrices=True)`` refused a gradient."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import skiff  # noqa: E402
import skiff.linalg as SL  # noqa: E402

R = np.random.default_rng(35)


def _c(*shape):
    return R.standard_normal(shape) + 1j * R.standard_normal(shape)


def _herm_pd(n, batch=()):
    z = _c(*batch, n, n)
    return z @ np.conj(np.swapaxes(z, -1, -2)) + n * np.eye(n)


def _w(shape):
    return R.standard_normal(shape)


def _loss(lib, out, ws):
    """A real loss of each output: |y|^2 weighted (phase-free, so a gauge-invariant loss of
    eigen/singular vectors) plus the real part of y weighted for outputs without a gauge."""
    tot = 0
    for y, (w, phase_free) in zip(out, ws):
        t = (y.abs() ** 2 * lib.tensor(w)).sum()
        if not phase_free:
            part = y.real if y.is_complex() else y
            t = t + (part * lib.tensor(w)).sum()
        tot = tot + t
    return tot


def _check(fn_s, fn_t, a, ws, rtol=1e-9):
    sa = skiff.tensor(a, requires_grad=True)
    ta = torch.tensor(a, requires_grad=True)
    so, to = fn_s(sa), fn_t(ta)
    so = so if isinstance(so, tuple) else (so,)
    to = to if isinstance(to, tuple) else (to,)
    ls, lt = _loss(skiff, so, ws), _loss(torch, to, ws)
    np.testing.assert_allclose(float(np.asarray(ls.detach())), float(lt.detach()), rtol=rtol)
    ls.backward()
    lt.backward()
    g_s, g_t = np.asarray(sa.grad), ta.grad.numpy()
    assert g_s.dtype == g_t.dtype
    np.testing.assert_allclose(g_s, g_t, rtol=rtol, atol=rtol * np.abs(g_t).max())


N = 4


@pytest.mark.parametrize("name", ["norm", "vector_norm", "matrix_norm", "nuc", "spec", "inf"])
def test_norms_of_complex(name):
    a = _c(2, N, N)
    f = {"norm": lambda m, x: m.norm(x.reshape(-1)),
         "vector_norm": lambda m, x: m.vector_norm(x, dim=-1),
         "matrix_norm": lambda m, x: m.matrix_norm(x),
         "nuc": lambda m, x: m.matrix_norm(x, "nuc"),
         "spec": lambda m, x: m.matrix_norm(x, 2),
         "inf": lambda m, x: m.vector_norm(x, float("inf"), dim=(-2, -1))}[name]
    sa = skiff.tensor(a)
    y = f(SL, sa)
    assert y.dtype == np.float64  # the norm of a complex tensor is real, as torch's
    shape = tuple(f(torch.linalg, torch.tensor(a)).shape)
    _check(lambda x: f(SL, x), lambda x: f(torch.linalg, x), a, [(_w(shape), False)])


@pytest.mark.parametrize("name", ["eigh", "eigvalsh", "cholesky", "cholesky_upper", "slogdet",
                                  "inv", "det", "svdvals"])
def test_hermitian_and_square(name):
    a = _herm_pd(N, (2,))
    ws = {"eigh": [(_w((2, N)), False), (_w((2, N, N)), True)],
          "eigvalsh": [(_w((2, N)), False)],
          "cholesky": [(_w((2, N, N)), False)], "cholesky_upper": [(_w((2, N, N)), False)],
          "slogdet": [(_w((2,)), True), (_w((2,)), False)],
          "inv": [(_w((2, N, N)), False)], "det": [(_w((2,)), False)],
          "svdvals": [(_w((2, N)), False)]}[name]
    if name in ("slogdet", "inv", "det", "svdvals"):
        a = _c(2, N, N)  # a general complex matrix

    def f(m):
        return {"eigh": lambda x: tuple(m.eigh(x)), "eigvalsh": lambda x: m.eigvalsh(x),
                "cholesky": lambda x: m.cholesky(x),
                "cholesky_upper": lambda x: m.cholesky(x, upper=True),
                "slogdet": lambda x: tuple(m.slogdet(x)), "inv": lambda x: m.inv(x),
                "det": lambda x: m.det(x), "svdvals": lambda x: m.svdvals(x)}[name]

    if name == "slogdet":  # through logabsdet alone, and through the complex sign too
        _check(lambda x: SL.slogdet(x).logabsdet, lambda x: torch.linalg.slogdet(x).logabsdet,
               a, ws[1:])
        np.testing.assert_allclose(np.asarray(SL.slogdet(skiff.tensor(a)).sign),
                                   torch.linalg.slogdet(torch.tensor(a)).sign.numpy(), rtol=1e-12)
        ws = [(_w((2,)), False), (_w((2,)), False)]  # Re(sign) weighted: not phase-free
    _check(f(SL), f(torch.linalg), a, ws)


@pytest.mark.parametrize("shape", [(N, N), (6, 3), (2, 3, 5)])
@pytest.mark.parametrize("full", [False, True])
def test_svd_complex(shape, full):
    a = _c(*shape)
    m, n = shape[-2:]
    k = min(m, n)
    bu = shape[:-1] + ((m,) if full else (k,))
    bv = shape[:-2] + ((n, n) if full else (k, n))
    _check(lambda x: tuple(SL.svd(x, full_matrices=full)),
           lambda x: tuple(torch.linalg.svd(x, full_matrices=full)),
           a, [(_w(bu), True), (_w(shape[:-2] + (k,)), False), (_w(bv), True)], rtol=1e-8)


@pytest.mark.parametrize("shape", [(N, N), (6, 3)])
def test_qr_complex(shape):
    a = _c(*shape)
    k = min(shape)
    _check(lambda x: tuple(SL.qr(x)), lambda x: tuple(torch.linalg.qr(x)), a,
           [(_w(shape[:-1] + (k,)), False), (_w((k, shape[-1])), False)])


@pytest.mark.parametrize("real", [False, True])
def test_eig_and_eigvals(real):
    a = R.standard_normal((2, N, N)) if real else _c(2, N, N)
    _check(lambda x: tuple(SL.eig(x)), lambda x: tuple(torch.linalg.eig(x)), a,
           [(_w((2, N)), False), (_w((2, N, N)), True)])
    _check(SL.eigvals, torch.linalg.eigvals, a, [(_w((2, N)), False)])
    # the values themselves (eigenvalues in LAPACK's order, as torch's)
    np.testing.assert_allclose(np.asarray(SL.eigvals(skiff.tensor(a))),
                               torch.linalg.eigvals(torch.tensor(a)).numpy(), rtol=1e-10)


def test_matrix_exp_lstsq_solve_pinv_complex():
    a = _c(N, N) / 2
    _check(SL.matrix_exp, torch.linalg.matrix_exp, a, [(_w((N, N)), False)])
    b = _c(6, 2)
    at = _c(6, 3)
    _check(lambda x: SL.lstsq(x, skiff.tensor(b)).solution,
           lambda x: torch.linalg.lstsq(x, torch.tensor(b)).solution, at, [(_w((3, 2)), False)])
    _check(lambda x: SL.solve(x, skiff.tensor(b[:N])), lambda x: torch.linalg.solve(
        x, torch.tensor(b[:N])), a, [(_w((N, 2)), False)])
    _check(SL.pinv, torch.linalg.pinv, at, [(_w((3, 6)), False)])


def test_logdet_complex_and_imag_of_a_scalar():
    """``logdet`` of a complex matrix is ``log|det| + log(sign)``, both in the graph (the sign
    was a constant); ``.imag`` of a 0-d result (its gradient a Python number) backpropagates."""
    a = _c(N, N)
    out = []
    for L, logdet in ((skiff, SL.logdet), (torch, torch.logdet)):
        x = L.tensor(a, requires_grad=True)
        y = logdet(x)
        (y.real * 2 + y.imag * 3).backward()
        out.append((np.asarray(y.detach()), np.asarray(x.grad)))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-12)
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=1e-10)
