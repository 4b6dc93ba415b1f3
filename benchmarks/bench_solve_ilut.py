"""skiff's ILUT (``precond='ilut'``) against SciPy's ``spilu`` as GMRES's preconditioner
(round 44 h13): iterations, fill (nnz(L+U)/nnz(A)), CPU seconds of the factorisation and of
the solve, on a convection-dominated upwind matrix and an anisotropic Laplacian, with
skiff's ILU(0) beside. Round 44 (h17): 'ilut' factors in reverse Cuthill-McKee order by default
(the row "A's order" is ``reorder=None``), and each matrix is also run numbered at random (a
mesh generator's numbering: spilu orders by COLAMD, so it does not care).
CPU time (``time.process_time``): the machine may be shared.

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_solve_ilut.py [m ...]   (grids m x m)
"""

from __future__ import annotations

import sys
import time

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from skiff.kernels.solve import Solver


def convection(m, eps=1e-3):
    h = 1.0 / (m + 1)
    T = sp.diags([-eps / h**2 - 1 / h, 2 * eps / h**2 + 1 / h, -eps / h**2], [-1, 0, 1],
                 shape=(m, m))
    return sp.kronsum(T, T).tocsr()


def anisotropic(m, eps=1e-3):
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m))
    return (sp.kron(sp.identity(m), T) + eps * sp.kron(T, sp.identity(m))).tocsr()


def scipy_row(A, b):
    t = time.process_time()
    M = spla.spilu(A.tocsc())
    setup = time.process_time() - t
    count = [0]
    t = time.process_time()
    x, _ = spla.gmres(A, b, M=spla.LinearOperator(A.shape, M.solve), rtol=1e-8, restart=30,
                      callback=lambda r: count.__setitem__(0, count[0] + 1),
                      callback_type="pr_norm", maxiter=100)
    solve = time.process_time() - t
    res = np.linalg.norm(b - A @ x) / np.linalg.norm(b)
    return count[0], M.nnz / A.nnz, setup, solve, res


def skiff_row(A, b, precond):
    t = time.process_time()
    S = Solver(A, method="gmres", precond=precond)
    setup = time.process_time() - t
    t = time.process_time()
    s = S.solve(b)
    solve = time.process_time() - t
    fill = getattr(getattr(S.M, "ilu", None), "fill", 1.0)
    res = np.linalg.norm(b - A @ s.x) / np.linalg.norm(b)
    return s.iterations, fill, setup, solve, res


def shuffled(make):
    def build(m):
        A = make(m)
        q = np.random.default_rng(0).permutation(A.shape[0])
        return A[q][:, q].tocsr()
    return build


def main(sizes):
    Solver(convection(8), method="gmres", precond="ilut").solve(np.ones(64))   # numba warm
    Solver(convection(8), method="gmres", precond="ilu").solve(np.ones(64))
    print("| matrix | n | preconditioner | iterations | fill | setup CPU s | solve CPU s "
          "| true |r|/|b| |")
    print("|---|---|---|---|---|---|---|---|")
    for m in sizes:
        for name, make in (("convection 1e-3 upwind", convection),
                           ("anisotropic 1e-3", anisotropic),
                           ("upwind, random numbering", shuffled(convection)),
                           ("anisotropic, random numbering", shuffled(anisotropic))):
            A = make(m)
            b = np.ones(A.shape[0])
            rows = [("skiff ilu (ILU(0))", skiff_row(A, b, "ilu")),
                    ("skiff ilut (RCM order)", skiff_row(A, b, "ilut")),
                    ("skiff ilut (A's order)", skiff_row(A, b, ("ilut", {"reorder": None}))),
                    ("scipy spilu", scipy_row(A, b))]
            for label, (it, fill, setup, solve, res) in rows:
                print(f"| {name} | {A.shape[0]} | {label} | {it} | {fill:.2f} | {setup:.4f} "
                      f"| {solve:.4f} | {res:.1e} |")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [100, 300])
