"""The built-in 1000:1 jump (24x40, Dirichlet: symmetric positive definite, condition number
3.7e5) without a preconditioner, where the Krylov methods' errors named the wrong cause:
pipelined CG stopped with "not positive definite" (its recurred denominator went negative from
round-off), BiCGStab's breakdown blamed convection on a symmetric matrix, and GMRES(30)'s
maxiter (SciPy's stalls the same) did not point at CG. SciPy is the oracle."""

from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spl

from skiff.kernels.solve import SolveError, Solver, solve
from skiff.kernels.solve.entry import build_problem, solver_from_config
from skiff.kinds.solve import to_config


def _jump(method, precond="none"):
    """``python -m skiff solve jump --grid 24x40 --contrast 1000 --method M --precond P``."""
    cfg = to_config({"problem": "jump", "grid": "24x40", "contrast": 1000.0, "method": method,
                     "precond": precond, "bc": "dirichlet"})
    p = build_problem(cfg)
    return p, cfg


def _count(fn, A, b, **kw):
    n = [0]
    x, info = fn(A, b, rtol=1e-8, callback=lambda *_: n.__setitem__(0, n[0] + 1), **kw)
    return x, info, n[0]


def test_pipecg_tells_round_off_from_indefiniteness_on_the_jump():
    p, cfg = _jump("pipecg")
    A, b = p.matrix().tocsr(), p.rhs.ravel()
    assert abs(A - A.T).max() == 0 and A.diagonal().min() > 0
    _, info, scipy_its = _count(spl.cg, A, b, maxiter=10 * A.shape[0])
    assert info == 0                                   # scipy's CG: 777 iterations
    sol = solver_from_config(p, cfg).solve(None, rtol=1e-8, maxiter=cfg.get("maxiter"))
    # it stopped with "not positive definite" at iteration 736 (902 in the user's probe)
    assert sol.converged and sol.relative_residual <= 1.01e-8
    assert np.linalg.norm(b - A @ sol.field.ravel()) <= 1.01e-8 * np.linalg.norm(b)
    assert sol.iterations <= 2 * scipy_its             # 1113: one restart from the true r
    ref = spl.spsolve(A.tocsc(), b)
    assert np.linalg.norm(sol.field.ravel() - ref) <= 1e-6 * np.linalg.norm(ref)


@pytest.mark.parametrize("shift", [60.0, 200.0])
def test_pipecg_still_finds_an_indefinite_matrix(shift):
    m = 40
    e = np.ones(m)
    T = sp.diags([-e[:-1], 2 * e, -e[:-1]], [-1, 0, 1]) * (m + 1) ** 2
    A = (sp.kronsum(T, T) - shift * sp.eye(m * m)).tocsr()   # a few eigenvalues below zero
    assert np.linalg.eigvalsh(A.toarray()).min() < 0
    b = np.random.default_rng(0).standard_normal(m * m)
    with pytest.raises(SolveError, match="not positive definite"):
        solve(A, b, method="pipecg", precond="none", rtol=1e-10)


def test_bicgstab_breakdown_on_a_symmetric_matrix_names_cg_not_convection():
    p, cfg = _jump("bicgstab")
    A, b = p.matrix().tocsr(), p.rhs.ravel()
    _, info, _ = _count(spl.bicgstab, A, b, maxiter=10 * A.shape[0])
    assert info < 0                                    # scipy's BiCGStab breaks down too
    # a breakdown stops short as SciPy's does: the iterate, not converged, a negative info
    sol = solver_from_config(p, cfg).solve(None, rtol=1e-8, maxiter=cfg.get("maxiter"))
    assert not sol.converged and sol.scipy_info in (-10, -11)
    assert re.search(r"breakdown.*symmetric.*method='cg'", sol.status)
    assert "convection" not in sol.status              # it said "convection-dominated"
    with pytest.raises(SolveError, match=r"breakdown.*symmetric.*method='cg'") as err:
        solver_from_config(p, cfg).solve(None, rtol=1e-8, maxiter=cfg.get("maxiter"),
                                         strict=True)
    assert "convection" not in str(err.value)


def test_gmres_stalls_on_the_jump_as_scipys_and_points_at_cg():
    p, cfg = _jump("gmres")
    A, b = p.matrix().tocsr(), p.rhs.ravel()
    # 60 restart cycles (1 800 iterations), not the default 320: both stall the same way
    # (round 40: 3.5 -> 0.6 CPU s; at 320 cycles SciPy 8.0e-2, skiff 6.6e-2)
    x, info = spl.gmres(A, b, rtol=1e-8, restart=30, maxiter=60)
    assert info > 0 and np.linalg.norm(b - A @ x) > 1e-3 * np.linalg.norm(b)  # 0.43
    sol = solver_from_config(p, cfg).solve(None, rtol=1e-8, maxiter=60)
    assert not sol.converged and sol.relative_residual > 1e-3                # 0.40
    assert "maxiter" in sol.status and "method='cg'" in sol.status
    cg = Solver(p, method="cg").solve(rtol=1e-8)                             # CG + MG
    assert cg.converged and cg.iterations <= 20
