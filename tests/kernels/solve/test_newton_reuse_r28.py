"""A nonlinear PDE by Newton (Bratu, ``-Δu = λ eᵘ``): the Jacobian's values change every step,
its pattern does not; ``Solver.update`` keeps AMG's aggregates then (round 28). Oracles:
Newton with SciPy's ``spsolve`` (the iterates) and pyamg rebuilt each step (CG iterations)."""

from __future__ import annotations

import numpy as np
import pyamg
import scipy.sparse as sp
import scipy.sparse.linalg as sla

from skiff.kernels.solve import Solver


def _bratu(m=80, lam=6.0):
    h = 1.0 / (m + 1)
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m))
    L = (sp.kronsum(T, T) / h**2).tocsr()

    def residual(u):
        return L @ u - lam * np.exp(u)

    def jacobian(u):
        return (L - sp.diags(lam * np.exp(u))).tocsr()

    return L.shape[0], residual, jacobian


def _newton(n, residual, jacobian, step, steps=5):
    u = np.zeros(n)
    for _ in range(steps):
        u = u + step(jacobian(u), -residual(u))
    return u


def test_newton_with_reused_aggregates_matches_spsolve_newton():
    n, F, J = _bratu()
    ref = _newton(n, F, J, lambda A, r: sla.spsolve(A.tocsc(), r))
    solver, its, reused = None, [], []

    def step(A, r):
        nonlocal solver
        solver = Solver(A, method="cg", precond="amg") if solver is None else solver.update(A)
        sol = solver.solve(r, rtol=1e-12)
        its.append(sol.iterations)
        reused.append("aggregates reused" in solver.describe())
        return sol.x

    u = _newton(n, F, J, step)
    assert np.linalg.norm(u - ref) <= 1e-9 * np.linalg.norm(ref)
    assert reused == [False, True, True, True, True]
    pyamg_its = []

    def pyamg_step(A, r):
        res = []
        x = pyamg.smoothed_aggregation_solver(A).solve(r, tol=1e-12, accel="cg", residuals=res)
        pyamg_its.append(len(res) - 1)
        return x

    _newton(n, F, J, pyamg_step)
    assert max(its) <= max(pyamg_its) + 6


def test_reuse_follows_new_values_and_not_a_new_pattern():
    """The same pattern with very different values (the kept aggregates, new prolongators
    and coarse matrices): spsolve's x; reuse=False and another pattern set up afresh."""
    n, _, J = _bratu(m=60)
    A = J(np.zeros(n))
    s = Solver(A, method="cg", precond="amg")
    B = (4.0 * A + sp.diags(np.linspace(0.0, 5e4, n))).tocsr()   # same pattern
    b = np.random.default_rng(2).standard_normal(n)
    sol = s.update(B).solve(b, rtol=1e-10)
    assert "aggregates reused" in s.describe() and sol.converged
    ref = sla.spsolve(B.tocsc(), b)
    assert np.linalg.norm(sol.x - ref) <= 1e-8 * np.linalg.norm(ref)
    fresh = Solver(B, method="cg", precond="amg").solve(b, rtol=1e-10)
    assert sol.iterations <= fresh.iterations + 3
    s.update(B, reuse=False)
    assert "reused" not in s.describe()
    C = (B + sp.eye(n, k=7) + sp.eye(n, k=-7)).tocsr()   # another pattern
    s.update(C)
    assert "reused" not in s.describe()
    assert s.solve(b, rtol=1e-10).converged
