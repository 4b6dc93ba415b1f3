"""MINRES with SciPy's stopping test (round 27, ``stop='scipy'``): the same iteration count as
``scipy.sparse.linalg.minres`` on the same problem, with and without a preconditioner, and a
solution of the same quality. skiff's default test (the true residual) takes more iterations
at the same rtol (SciPy's is a backward error relative to its estimate of |A| |x|)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import skiff


def _lap(n):
    one = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    return (sp.kron(sp.eye(n), one) + sp.kron(one, sp.eye(n))).tocsr()


def _systems():
    L = _lap(24)
    n = L.shape[0]
    B = sp.random(120, n, density=0.01, random_state=1, format="csr") + sp.eye(120, n)
    return {"shifted": (L - 0.5 * sp.eye(n)).tocsr(),
            "saddle": sp.bmat([[L, B.T], [B, None]]).tocsr()}


@pytest.mark.parametrize("name", ["shifted", "saddle"])
@pytest.mark.parametrize("diag_m", [False, True])
@pytest.mark.parametrize("rtol", [1e-5, 1e-9])
def test_stop_scipy_gives_scipys_iterations(name, diag_m, rtol):
    A = _systems()[name]
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    M = None
    if diag_m:
        d = np.abs(A.diagonal())
        M = sp.diags(1.0 / np.where(d == 0, 1.0, d))
    count = [0]
    x_ref, info = spla.minres(A, b, rtol=rtol, M=M,
                              callback=lambda xk: count.__setitem__(0, count[0] + 1))
    kw = {"M": M} if M is not None else {"precond": "none"}
    sol = skiff.solve(A, b, method="minres", rtol=rtol, stop="scipy", **kw)
    assert info == 0 and sol.converged
    assert sol.iterations == count[0]
    res = np.linalg.norm(b - A @ sol.x) / np.linalg.norm(b)
    res_ref = np.linalg.norm(b - A @ x_ref) / np.linalg.norm(b)
    assert res <= 3 * res_ref + 1e-14, (res, res_ref)
    default = skiff.solve(A, b, method="minres", rtol=rtol, **kw)   # the true residual's
    assert default.true_residual <= rtol and default.iterations >= sol.iterations


def test_stop_scipy_is_minres_only_and_checked():
    A = _systems()["shifted"]
    b = np.ones(A.shape[0])
    with pytest.raises(ValueError, match="method='minres'"):
        skiff.solve(A, b, method="gmres", stop="scipy")
    with pytest.raises(ValueError, match="'residual'"):
        skiff.solve(A, b, method="minres", stop="backward")
