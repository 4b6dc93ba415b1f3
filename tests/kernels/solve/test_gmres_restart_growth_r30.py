"""Round 30: on a symmetric indefinite matrix (a shifted Laplacian, Helmholtz-like) 'auto'
goes on with GMRES(30)+AMG once CG finds it indefinite; restart 30 took 501 iterations at
128^2, k = 30, and did not converge in 20 010 at k = 50 (restart 200: 196). 'auto''s GMRES
now doubles its restart after a cycle that gained less than tenfold. Oracles: SciPy's
spsolve (x) and SciPy's gmres(restart=30) with the same V-cycle (iterations). Since round 30b
'auto' takes MINRES for a symmetric matrix Lanczos finds indefinite at setup, so the growth is
tested on the shifted Laplacian with a little upwind convection (nonsymmetric: GMRES at once)."""

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import skiff


def _shifted_laplacian(n, k):
    h = 1.0 / (n + 1)
    d = sp.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1]) / h**2
    lap = sp.kron(sp.identity(n), d) + sp.kron(d, sp.identity(n))
    return (lap - k**2 * sp.identity(n * n)).tocsr()


def test_auto_gmres_grows_its_restart_on_a_shifted_laplacian():
    n = 64
    upwind = sp.diags([-np.ones(n - 1), np.ones(n)], [-1, 0]) * (n + 1)   # d/dx, upwind
    A = (_shifted_laplacian(n, 30.0) + sp.kron(sp.identity(n), upwind)).tocsr()
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    sol = skiff.solve(A, b, rtol=1e-8)
    assert sol.method == "gmres" and sol.converged
    assert "grown to" in sol.info["solver"]
    ref = spla.spsolve(A.tocsc(), b)
    assert np.linalg.norm(sol.x - ref) <= 1e-6 * np.linalg.norm(ref)
    M = skiff.Solver(A, method="gmres", precond="amg").aspreconditioner()
    its = [0]
    x, info = spla.gmres(A, b, M=M, rtol=1e-8, restart=30, maxiter=100, callback_type="pr_norm",
                         callback=lambda r: its.__setitem__(0, its[0] + 1))
    assert info == 0 and np.linalg.norm(b - A @ x) <= 1e-7 * np.linalg.norm(b)
    assert sol.iterations < 0.5 * its[0]           # measured 340 against SciPy's 1319


def test_an_explicit_gmres_keeps_scipys_restart():
    A = _shifted_laplacian(64, 30.0)
    b = np.random.default_rng(1).standard_normal(A.shape[0])
    sol = skiff.solve(A, b, rtol=1e-8, method="gmres", maxiter=3)   # 3 cycles of 30, SciPy's
    M = skiff.Solver(A, method="gmres", precond="amg").aspreconditioner()
    x, info = spla.gmres(A, b, M=M, rtol=1e-8, restart=30, maxiter=3)
    assert info > 0 and not sol.converged and sol.iterations == 90
    assert "grown" not in sol.info["solver"]
    theirs = np.linalg.norm(b - A @ x) / np.linalg.norm(b)
    ours = np.linalg.norm(b - A @ sol.x) / np.linalg.norm(b)
    assert 0.5 * theirs <= ours <= 2 * theirs       # the same 3 cycles of 30
