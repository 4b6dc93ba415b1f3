"""Round 44 (h17): ``precond='ilut'`` factors ``P A P^T`` in reverse Cuthill-McKee order by
default, so its GMRES iterations do not hang on how the user numbered the unknowns.

SciPy's ``spilu`` orders the columns by COLAMD before it factors, so a matrix read from a
mesh generator's file (any numbering) takes the iterations of the grid-numbered one; skiff's
ILUT factored A in its own order: on the 60^2 upwind matrix numbered at random GMRES took 7
iterations against 4 on the grid's numbering and spilu's 3, on the 60^2 Poisson matrix 13
against 8. Oracles: the same matrix in the grid's numbering, SciPy's ``spilu`` + ``gmres``
and ``spsolve``."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from skiff.kernels.solve import Solver


def _convection(m, eps=1e-3):
    h = 1.0 / (m + 1)
    T = sp.diags([-eps / h**2 - 1 / h, 2 * eps / h**2 + 1 / h, -eps / h**2], [-1, 0, 1],
                 shape=(m, m))
    return sp.kronsum(T, T).tocsr()


def _poisson(m):
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m))
    return sp.kronsum(T, T).tocsr()


def _spilu_iterations(A, b):
    M = spla.spilu(A.tocsc())
    count = [0]
    spla.gmres(A, b, M=spla.LinearOperator(A.shape, M.solve), rtol=1e-8, restart=30,
               callback=lambda r: count.__setitem__(0, count[0] + 1),
               callback_type="pr_norm")
    return count[0]


@pytest.mark.parametrize("make", [_convection, _poisson])
def test_ilut_iterations_do_not_hang_on_the_numbering(make):
    A = make(60)
    q = np.random.default_rng(0).permutation(A.shape[0])
    Aq = A[q][:, q].tocsr()                    # the same matrix, unknowns numbered at random
    b = np.ones(A.shape[0])
    grid = Solver(A, method="gmres", precond=("ilut", {"reorder": None})).solve(b)
    shuffled = Solver(Aq, method="gmres", precond="ilut")
    sol = shuffled.solve(b)
    assert "RCM order" in shuffled.M.describe()
    # measured (60^2, skiff's GMRES(30), rtol 1e-8): upwind grid order 4, random order 7
    # before (RCM now 3), spilu 3 / 3; Poisson 8, 13 before (RCM 6), spilu 37 / 58
    assert sol.converged and sol.iterations <= grid.iterations
    assert sol.iterations <= max(_spilu_iterations(Aq, b), grid.iterations)
    ref = spla.spsolve(Aq.tocsc(), b)
    assert np.linalg.norm(sol.x - ref) <= 1e-6 * np.linalg.norm(ref)
    # A's own order is still there, and it is the numbering-bound one
    own = Solver(Aq, method="gmres", precond=("ilut", {"reorder": "none"}))
    assert "RCM order" not in own.M.describe()
    assert own.solve(b).iterations > sol.iterations


@pytest.mark.parametrize("make,method", [(_convection, "gmres"), (_poisson, "cg")])
def test_ilu0_on_a_matrix_numbered_at_random(make, method):
    # ILU(0) keeps A's pattern: with no locality in the numbering it is close to Jacobi
    # (60^2 upwind GMRES 89 iterations against 11 on the grid's numbering; Poisson CG 81
    # against 49). RCM when it halves the bandwidth: the grid's iterations back; a grid's
    # own numbering is kept (RCM gives the same iterations there, at two gathers a step).
    A = make(60)
    q = np.random.default_rng(1).permutation(A.shape[0])
    Aq = A[q][:, q].tocsr()
    b = np.ones(A.shape[0])
    grid = Solver(A, method=method, precond="ilu")
    assert "RCM order" not in grid.describe()
    shuffled = Solver(Aq, method=method, precond="ilu")
    assert "RCM order" in shuffled.describe()
    g, s = grid.solve(b), shuffled.solve(b, maxiter=1000)
    assert s.converged and s.iterations <= g.iterations + 1, (s.iterations, g.iterations)
    ref = spla.spsolve(Aq.tocsc(), b)
    assert np.linalg.norm(s.x - ref) <= 1e-6 * np.linalg.norm(ref)


def test_refusals_name_the_users_row_after_the_reordering():
    A = _convection(30)
    q = np.random.default_rng(2).permutation(A.shape[0])
    Aq = sp.lil_matrix(A[q][:, q])
    Aq[17, :] = 0                                # row 17 of the user's matrix is empty
    with pytest.raises(ValueError, match=r"row 17 of the matrix is all zeros"):
        Solver(sp.csr_matrix(Aq), method="gmres", precond="ilut")
    Aq = sp.lil_matrix(A[q][:, q])
    Aq[23, 23] = 0                               # and row 23 has no diagonal entry
    Aq = sp.csr_matrix(Aq)
    Aq.eliminate_zeros()
    with pytest.raises(ValueError, match=r"precond='ilu': row 23 has no diagonal entry"):
        Solver(Aq, method="gmres", precond="ilu")
