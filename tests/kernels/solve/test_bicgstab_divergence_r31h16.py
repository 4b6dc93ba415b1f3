"""BiCGStab's divergence stop (round 31, h16): a residual that grows without bound stops with
the best iterate and a status naming what to try; converging runs that pass far above their
best on the way keep their iterates. Oracles: scipy.sparse.linalg.bicgstab with the same
preconditioner, NumPy's residual of the returned x."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import skiff
from skiff.kernels.solve import amg, krylov, solver
from skiff.kernels.solve.solver import Solver, load_numba


@pytest.fixture(autouse=True)
def _numba_loaded():
    # both runs of a comparison on the same kernels (a small first solve runs on the
    # references while numba loads: another rounding)
    load_numba(wait=True)


def lap2(n):
    T = sp.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1])
    eye = sp.identity(n)
    return (sp.kron(T, eye) + sp.kron(eye, T)).tocsr()


def row_scaled(n, spread, seed=12):
    """A Laplacian's rows scaled by 10^U(-spread/2, spread/2), b random (not scaled alike)."""
    A = lap2(n)
    rng = np.random.default_rng(seed)
    D = sp.diags(10.0 ** rng.uniform(-spread / 2, spread / 2, A.shape[0]))
    return (D @ A).tocsr(), rng.standard_normal(A.shape[0])


def as_operator(solver, n):
    def apply(r):
        out = np.empty(n)
        solver.M(np.ascontiguousarray(r, dtype=np.float64), out)
        return out
    return spla.LinearOperator((n, n), apply)


def test_growing_residual_stops_with_best_x(monkeypatch):
    # the AMG without its row scaling (before round 31) on D A: BiCGStab's residual grows to
    # 1e10 |b| and stays (it ran 20 000 iterations to 1e9 at 150^2: 261 s)
    monkeypatch.setattr(amg, "ROW_SCALE_SPREAD", float("inf"))
    A, b = row_scaled(60, 12)
    n = A.shape[0]
    solver = Solver(A, method="bicgstab", precond="amg")
    sol = solver.solve(b, maxiter=2000)
    assert not sol.converged
    assert sol.status.startswith("bicgstab: diverged")
    assert "method='gmres'" in sol.status
    assert sol.iterations <= 3 * krylov.DIVERGE_WINDOW
    x, info = sol
    assert info == sol.iterations > 0          # SciPy's "not converged", no breakdown code
    # the x returned has the smallest residual seen (within the factor 2 of its copying),
    # measured by NumPy, not the last one's (1e6 times larger)
    true = np.linalg.norm(b - A @ x)
    assert true <= 2.0 * min(sol.residuals) * (1 + 1e-8)
    assert max(sol.residuals) > 1e6 * true
    # oracle: SciPy's bicgstab with the same preconditioner diverges as well
    res = []
    xs, info_s = spla.bicgstab(A, b, M=as_operator(solver, n), maxiter=sol.iterations,
                               rtol=1e-8, callback=lambda xk: res.append(
                                   np.linalg.norm(b - A @ xk)))
    assert info_s != 0
    assert max(res) > 1e6 * np.linalg.norm(b)


def test_strict_raises_naming_the_divergence(monkeypatch):
    monkeypatch.setattr(amg, "ROW_SCALE_SPREAD", float("inf"))
    A, b = row_scaled(60, 12)
    with pytest.raises(skiff.kernels.solve.krylov.SolveError, match="diverged"):
        Solver(A, method="bicgstab", precond="amg").solve(b, maxiter=2000, strict=True)


@pytest.mark.parametrize("spread", [8, 12])
def test_converging_spike_keeps_its_iterates(spread, monkeypatch):
    # BiCGStab + Jacobi on D A spikes to 1e9-1e10 |b| and then converges (SciPy's too): the
    # stop must not fire; the iterates are those without the watch (the factor set to inf)
    A, b = row_scaled(30, spread)
    Mj = sp.diags(1.0 / A.diagonal())
    res = []
    _, info = spla.bicgstab(A, b, M=Mj, maxiter=2000, rtol=1e-8,
                            callback=lambda xk: res.append(np.linalg.norm(b - A @ xk)))
    assert info == 0 and max(res) > 1e5 * np.linalg.norm(b)   # SciPy converges past a spike
    with monkeypatch.context() as m:   # round 42: without the restart from the true residual
        m.setattr(solver, "REPLACEMENTS", 0)
        first = skiff.solve(A, b, method="bicgstab", M=Mj, maxiter=2000)
    assert abs(first.iterations - len(res)) <= 0.15 * len(res)
    sol = skiff.solve(A, b, method="bicgstab", M=Mj, maxiter=2000)
    assert "diverged" not in sol.status
    assert max(sol.residuals) > 1e5 * np.linalg.norm(b)
    assert sol.true_residual < 1e-3 and sol.true_residual <= first.true_residual
    assert sol.iterations <= 2 * len(res)
    old = krylov.DIVERGE_FACTOR
    try:
        krylov.DIVERGE_FACTOR = float("inf")
        ref = skiff.solve(A, b, method="bicgstab", M=Mj, maxiter=2000)
    finally:
        krylov.DIVERGE_FACTOR = old
    assert ref.iterations == sol.iterations
    np.testing.assert_allclose(ref.residuals, sol.residuals, rtol=1e-6)
    np.testing.assert_allclose(ref.x, sol.x, rtol=1e-6, atol=1e-12 * np.abs(ref.x).max())


def test_watch_unit():
    # a residual rising 10x per step past 1e6 its best, then flat: stops after two windows
    x = np.zeros(3)
    w = krylov._Watch("t", 1.0, x)
    hist = [1.0]
    with pytest.raises(krylov.Divergence) as exc:
        for it in range(1, 1000):
            hist.append(min(10.0 ** it, 1e9))
            w.see(it, hist[-1], x + it, hist)
    assert exc.value.x.tolist() == [0.0, 0.0, 0.0]
    assert it == 6 + 2 * krylov.DIVERGE_WINDOW   # above from 7 on: two windows
    # one falling a decade every 40 iterations from 1e9 is let through
    w = krylov._Watch("t", 1.0, x)
    hist = [1.0]
    for it in range(1, 400):
        hist.append(1e9 * 10.0 ** (-it / 40))
        w.see(it, hist[-1], x, hist)


def jump_matrix(n, contrast):
    """A 5-point diffusion matrix with a checkerboard coefficient 1 : contrast (SPD)."""
    i, j = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    k = np.where(((i * 4 // (n + 1)) + (j * 4 // (n + 1))) % 2 == 0, 1.0, contrast)
    kx = 0.5 * (k[:-1, 1:] + k[1:, 1:])[:n, :n]
    ky = 0.5 * (k[1:, :-1] + k[1:, 1:])[:n, :n]
    idx = np.arange(n * n).reshape(n, n)
    rows, cols, vals = [], [], []
    diag = np.zeros((n, n))
    for (a, b_), w in (((slice(1, None), slice(None)), kx), ((slice(None), slice(1, None)), ky)):
        lo = idx[(slice(None, -1), slice(None)) if a.start else (slice(None), slice(None, -1))]
        hi = idx[a, b_]
        ww = w[a, b_]
        rows += [lo.ravel(), hi.ravel()]
        cols += [hi.ravel(), lo.ravel()]
        vals += [-ww.ravel(), -ww.ravel()]
        diag[a, b_] += ww
        diag[(slice(None, -1), slice(None)) if a.start else (slice(None), slice(None, -1))] += ww
    diag += 1e-3
    A = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                      shape=(n * n, n * n)) + sp.diags(diag.ravel())
    return A.tocsr()


def test_cg_on_a_jump_keeps_scipys_iterates():
    # unpreconditioned CG on a 1:1e6 checkerboard: an erratic residual, SciPy's count, and
    # the same history with the watch switched off
    A = jump_matrix(24, 1e6)
    assert abs(A - A.T).max() == 0
    b = np.ones(A.shape[0])
    res = []
    _, info = spla.cg(A, b, rtol=1e-8, maxiter=5000, callback=lambda xk: res.append(0))
    sol = skiff.solve(A, b, method="cg", precond="none", maxiter=5000)
    assert info == 0 and "diverged" not in sol.status   # (true residual 2e-6: "attainable")
    assert abs(sol.iterations - len(res)) <= 2
    old = krylov.DIVERGE_FACTOR
    try:
        krylov.DIVERGE_FACTOR = float("inf")
        ref = skiff.solve(A, b, method="cg", precond="none", maxiter=5000)
    finally:
        krylov.DIVERGE_FACTOR = old
    assert ref.iterations == sol.iterations
    np.testing.assert_allclose(ref.residuals, sol.residuals, rtol=1e-6)
