"""BiCGStab + Jacobi on a shuffled convection-diffusion matrix split by rows over the ranks
(``parallel/rows.py``); each rank saves its x to ``OUT/rank<r>.npz``."""

import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from mpi4py import MPI

from skiff.kernels.solve.parallel.rows import row_solve

n = 20
T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
A = sp.kronsum(T, T) + 4.0 * sp.kron(sp.eye(n), sp.diags([-1.0, 1.0], [-1, 0], shape=(n, n)))
perm = np.random.default_rng(0).permutation(n * n)
A = sp.csr_matrix(A)[perm][:, perm].tocsr()
b = np.random.default_rng(2).standard_normal(A.shape[0])
comm = MPI.COMM_WORLD
x, info = row_solve(A, b, method="bicgstab", rtol=1e-10, comm=comm)
np.savez(Path(sys.argv[1]) / f"rank{comm.Get_rank()}.npz", x=x, info=info,
         size=comm.Get_size())
