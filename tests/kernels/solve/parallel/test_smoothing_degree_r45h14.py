"""Round 45 (h14): CG's V-cycle over the ranks smooths a plain Poisson-like matrix past 8
ranks with the damped block solve again (degree 1), every other matrix with round 45 h4's
degree-2 Chebyshev polynomial in ``B A``. On Poisson the Chebyshev cut at most one CG
iteration past 8 ranks (160^2 over 24 thread ranks 8 -> 8) for twice the block solves and
halo exchanges an iteration: the solve's CPU 1.3x. Thread ranks; matrices from pyamg's
gallery and round 43's jump."""

from __future__ import annotations

import numpy as np
import pyamg
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from skiff.kernels.solve.parallel.coarse import CHEB_DEGREE, smoothing_degree
from skiff.kernels.solve.parallel.rows import RowSolver, whole_contrast

from .test_coarse_cut_r43h7 import _jump
from .thread_ranks import on_threads


def _aniso(n, eps=0.01):
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    return (sp.kron(sp.identity(n), T) + eps * sp.kron(T, sp.identity(n))).tocsr()


def test_the_degree_is_one_for_a_plain_laplacian_past_eight_ranks_only():
    P = pyamg.gallery.poisson((20, 20), format="csr").tocsr()
    shifted = (P + 0.5 * sp.identity(P.shape[0])).tocsr()   # a reaction term: still plain
    E = pyamg.gallery.linear_elasticity((10, 10), format="csr")[0].tocsr()
    J = _jump(20, seed=3)
    k = np.exp(np.random.default_rng(1).standard_normal(400))   # a variable coefficient
    V = sp.csr_matrix(sp.diags(np.sqrt(k)) @ P @ sp.diags(np.sqrt(k)))
    for A, size, want in ((P, 16, 1), (shifted, 12, 1), (P, 8, CHEB_DEGREE),
                          (E, 16, CHEB_DEGREE), (J, 16, CHEB_DEGREE),
                          (_aniso(20), 16, CHEB_DEGREE), (V, 16, CHEB_DEGREE)):
        assert smoothing_degree(A, size, whole_contrast(A)) == want, (A.shape, size)


def test_poisson_over_twelve_ranks_pays_one_block_solve_a_smoothing():
    """Poisson 32^2 over 12 thread ranks (block AMG, the AMG coarse level, rtol 1e-8): 8 CG
    iterations and 26 products with A (3 an iteration, the initial and the true residual);
    the Chebyshev (HEAD) 6 and 32 (5 an iteration): the block solves 16 -> 24, the same
    solve CPU on this small a matrix, 1.3x on 160^2 over 24 ranks. x = spsolve's."""
    A = pyamg.gallery.poisson((32, 32), format="csr").tocsr()
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    calls = [0]

    def job(comm):
        s = RowSolver(A, method="cg", precond="amg", comm=comm, coarse="amg")
        plain = s.op.matvec

        def counted(x):
            if comm.Get_rank() == 0:
                calls[0] += 1
            return plain(x)
        s.op.matvec = counted   # the two-level closure calls op.matvec at each use
        r = s.iterate(b, rtol=1e-8, maxiter=100)
        return r.iterations, s.M.degree, s.gather(r.x)

    its, degree, x = on_threads(12, job)[0]
    assert calls[0] <= 3 * its + 2, (calls[0], its, degree)
    assert its <= 9 and degree == 1, (its, degree)
    ref = spla.spsolve(A.tocsc(), b)
    assert np.abs(x - ref).max() <= 1e-6 * np.abs(ref).max()
