"""Round 44 (h23): the block solve's damping in CG's two-level V-cycle ``B, Q, B``. ``omega =
min(1, 1.8 / lambda)`` with ``lambda`` the largest eigenvalue of ``B A``: six power steps
saw 1.6-1.87 where ``lambda`` is 1.97-2.0 (the jumping coefficient, elasticity over 8-16
ranks), so ``omega`` stayed near 1, ``omega lambda`` near 2, and B's top modes went almost
undamped (elasticity 50^2 over 16 ranks 19 CG iterations, one rank 5). Eight Lanczos steps
(the same cost a step) find 1.9-1.97, ``omega`` 0.90-0.94: 12. Poisson keeps its count.
Thread ranks; the matrices from pyamg's gallery and the jump of round 43."""

from __future__ import annotations

import numpy as np
import pyamg
import scipy.sparse.linalg as spla

from skiff.kernels.solve.parallel.rows import RowSolver

from .test_coarse_cut_r43h7 import _jump
from .thread_ranks import on_threads


def _cg(A, b, size):
    def job(comm):
        s = RowSolver(A, method="cg", precond="amg", comm=comm, coarse="amg")
        r = s.iterate(b, rtol=1e-8, maxiter=200)
        return r.iterations, s.M.lam, s.gather(r.x)
    return on_threads(size, job)[0]


def test_the_damping_from_lanczos_takes_fewer_cg_iterations_past_a_few_ranks():
    """Six power steps -> eight Lanczos steps, CG iterations (rtol 1e-8, block AMG + an AMG
    coarse level): elasticity 30^2 (pyamg's gallery) over 8 ranks 16 -> 12 (one rank, pyamg
    SA ``accel='cg'`` 8 with its rigid body modes, 27 without); the jump 60^2 seed 3 over 4
    ranks 14 -> 11; Poisson 40^2 over 4 ranks 7 -> 7. Round 45 (h4): B's damping replaced by
    a degree-2 Chebyshev polynomial in B A over [1.1 lambda / 4, 1.1 lambda]: 12 -> 7, 11
    -> 7, 7 -> 6 (one rank: 5, 5, 5); the bounds below held the damped B at 13 / 12 / 7.
    x = spsolve's."""
    rng = np.random.default_rng(0)
    E = pyamg.gallery.linear_elasticity((30, 30), format="csr")[0].tocsr()
    J = _jump(60, seed=3)
    P = pyamg.gallery.poisson((40, 40), format="csr").tocsr()
    for A, size, most in ((E, 8, 8), (J, 4, 8), (P, 4, 6)):
        b = rng.standard_normal(A.shape[0])
        its, lam, x = _cg(A, b, size)
        assert its <= most, (A.shape, size, its, lam)
        # B A's top (the damping was 1.8 / lambda; round 45: Chebyshev's interval to 1.1 lambda)
        assert 1.86 < lam < 2.1, lam
        ref = spla.spsolve(A.tocsc(), b)
        assert np.abs(x - ref).max() <= 1e-6 * np.abs(ref).max()
