"""Round 46 (h6): a user's matrices and options through ``skiff.solve``, against SciPy."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import skiff


def _helmholtz(n=12, k=8.0):
    """``-Laplace u - k^2 (1 - 0.1 i) u``, Dirichlet: complex symmetric (A = A^T)."""
    h = 1.0 / (n + 1)
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n)) / h ** 2
    A = sp.kronsum(T, T) - k ** 2 * (1 - 0.1j) * sp.identity(n * n)
    rng = np.random.default_rng(0)
    return sp.csr_matrix(A), rng.standard_normal(n * n) + 1j * rng.standard_normal(n * n)


def test_cocg_refuses_ilut_and_names_what_works():
    """COCG's short recurrence needs ``M = M^T``; ILUT drops by rows, so it is not (round 45
    ran it unflagged). One line, naming the preconditioners COCG takes and the methods ILUT
    suits; those run, x = spsolve's."""
    A, b = _helmholtz()
    with pytest.raises(ValueError, match="precond='ilu'.*method='gmres'") as e:
        skiff.solve(A, b, method="cocg", precond="ilut")
    assert "\n" not in str(e.value)
    ref = spla.spsolve(A.tocsc(), b)
    for method, precond in (("cocg", "ilu"), ("gmres", "ilut")):
        got = skiff.solve(A, b, method=method, precond=precond, rtol=1e-10)
        assert got.converged, (method, precond)
        assert np.abs(got.x - ref).max() <= 1e-7 * np.abs(ref).max()


def test_diverging_candidate_sweeps_keep_the_candidate_finite():
    """Central differences of a strong convection (``-1e-3 Laplace u + u_x``, 64^2, cell
    Peclet 7.7): far from diagonally dominant, so Gauss-Seidel on ``A x = 0`` grew AMG's
    constant candidate 1e50 a sweep and overflowed (a RuntimeWarning shown by the CLI as
    ``skiff: warning: overflow encountered in square``). Now the sweep that diverges is
    undone. (Auto still solves it: GMRES + AMG stalls, as pyamg's SA does, then the sparse
    LU; not run here, 1-3 s of setup.)"""
    import warnings

    from skiff.kernels.solve.amg import SmoothedAggregation

    n = 64
    h = 1.0 / (n + 1)
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n)) / h ** 2
    D = sp.diags([-1.0, 1.0], [-1, 1], shape=(n, n)) / (2 * h)
    A = sp.csr_matrix(1e-3 * sp.kronsum(T, T) + sp.kron(sp.identity(n), D))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        ml = SmoothedAggregation(A)
    assert all(np.all(np.isfinite(lv[0].data)) for lv in ml.levels)


def test_a_graph_in_pieces_names_the_cli_flag():
    """A graph Laplacian in two pieces with b of mean zero overall, not on each piece: the
    refusal named the keyword only; a CLI / %solve user reads the flag too (as the one-piece
    refusal says). With it, each piece's mean is removed: x solves the projected b."""
    P = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(20, 20)).tolil()
    P[0, 0] = P[-1, -1] = 1.0
    L = sp.csr_matrix(sp.block_diag([P, P]))
    b = np.concatenate([np.full(20, 1.0), np.full(20, -1.0)]) + np.sin(np.arange(40))
    b -= b.mean()
    with pytest.raises(ValueError, match="--compatibility project"):
        skiff.solve(L, b)
    got = skiff.solve(L, b, compatibility="project", rtol=1e-10)
    bp = b - np.repeat([b[:20].mean(), b[20:].mean()], 20)
    assert np.linalg.norm(L @ got.x - bp) <= 1e-8 * np.linalg.norm(bp)


def test_the_solution_says_why_auto_switched():
    """Central differences of a strong convection, 24^2: auto's GMRES + AMG stalls and the
    sparse LU solves it. The CLI summary read ``direct + none ... converged in 31
    iterations`` with no word of the switch; the Solution's record now carries it
    (``switched``, for the job's summary), x = spsolve's."""
    n = 24
    h = 1.0 / (n + 1)
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n)) / h ** 2
    D = sp.diags([-1.0, 1.0], [-1, 1], shape=(n, n)) / (2 * h)
    A = sp.csr_matrix(1e-3 * sp.kronsum(T, T) + sp.kron(sp.identity(n), D))
    b = np.ones(n * n)
    got = skiff.solve(A, b)
    assert got.method == "direct" and "gmres stagnated" in got.to_json()["switched"]
    ref = spla.spsolve(A.tocsc(), b)
    assert np.abs(got.x - ref).max() <= 1e-10 * np.abs(ref).max()
    assert "switched" not in skiff.solve(T.tocsr(), np.ones(n)).to_json()
