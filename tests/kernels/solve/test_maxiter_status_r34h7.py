"""Round 34 (h7): a solve cut short by ``maxiter`` while converging well says how many more
iterations reach the tolerance, not another method.

Before: ``skiff.solve(A, b, maxiter=3)`` on a 5-point Poisson matrix (CG + AMG, the residual
falling ninefold a step) said "errors local but not constant (jumps inside higher-order
elements) need a block smoother: try smoother='schwarz'", the remedy of a stalled solve.
Oracle: the solve rerun with that many more iterations converges; SciPy's ``cg`` with the
same preconditioner stops at ``maxiter`` too (info > 0); a stalled solve keeps its remedy."""

from __future__ import annotations

import re

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import cg, spsolve

import skiff
from skiff.kernels.solve.amg import SmoothedAggregation
from skiff.kernels.solve.solver import _rate


def _poisson(n=80):
    e = np.ones(n)
    T = sp.diags([-e[1:], 2 * e, -e[1:]], [-1, 0, 1])
    eye = sp.identity(n)
    return (sp.kron(eye, T) + sp.kron(T, eye)).tocsr()


def test_cut_short_while_converging_says_how_far():
    A = _poisson()
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    short = skiff.solve(A, b, maxiter=3)
    assert not short.converged and short.iterations == 3
    assert "schwarz" not in short.status and "raise maxiter" in short.status
    more = int(re.search(r"about (\d+) more iterations", short.status).group(1))
    done = skiff.solve(A, b, maxiter=3 + more)
    assert done.converged and done.iterations <= 3 + more
    ref = spsolve(A.tocsc(), b)
    assert np.linalg.norm(done.x - ref) <= 1e-7 * np.linalg.norm(ref)
    # SciPy: the same maxiter stops CG with AMG short of the tolerance too
    _, info = cg(A, b, M=SmoothedAggregation(A).aspreconditioner(), rtol=1e-8, maxiter=3)
    assert info > 0


def test_a_stalled_solve_keeps_its_remedy():
    # unpreconditioned GMRES(5) on a symmetric matrix: slow (|r| x ~0.99 a step)
    A = _poisson(40)
    b = np.random.default_rng(1).standard_normal(A.shape[0])
    slow = skiff.solve(A, b, method="gmres", precond="none", restart=5, maxiter=4)
    assert not slow.converged and "raise maxiter" not in slow.status
    assert "method='cg'" in slow.status


def test_rate():
    assert _rate([1.0]) is None
    assert _rate([1.0, 0.0]) == 0.0
    assert abs(_rate([8.0, 4.0, 2.0, 1.0]) - 0.5) < 1e-15
