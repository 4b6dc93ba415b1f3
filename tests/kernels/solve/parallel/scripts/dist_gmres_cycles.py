"""Run on N ranks: distributed GMRES whose ``maxiter`` counts restart cycles (SciPy's meaning).

Rank 0 also runs SciPy's gmres with the same restart and maxiter on the problem's matrix (the
independent reference) and prints one ``RESULT {json}`` line per rank.
"""

import json

import numpy as np
import scipy.sparse.linalg as spla
from mpi4py import MPI

from skiff.kernels.solve.parallel.halo import SolveComm
from skiff.kernels.solve.parallel.solver import DistributedSolver
from skiff.kernels.solve.problems import grid_problem

# ``COMM`` given by ``dist_all.py`` (runpy's init_globals): the 1-rank run as MPI.COMM_SELF
world = globals().get("COMM") or MPI.COMM_WORLD
rank = world.Get_rank()


def body(n):
    c = (np.indices((n, n)) + 0.5) / n
    sdf = np.hypot(c[0] - 0.4, c[1] - 0.5) - 0.15
    return grid_problem((n, n), sdf=sdf, source=0.0, body_bc=("dirichlet", 0.5),
                        bc={"x-": ("dirichlet", 1.0), "x+": ("dirichlet", 0.0)}, name="body")


problem = body(32)
CASES = [  # (name, restart, maxiter)
    ("restart5-maxiter3", 5, 3),
    ("restartNone-maxiter2", None, 2),
]
out = {"rank": rank, "size": world.Get_size(), "cases": {}}
for name, restart, maxiter in CASES:
    sol = DistributedSolver(problem, method="gmres", precond="none", restart=restart,
                            comm=SolveComm(world)).solve(rtol=1e-10, maxiter=maxiter)
    if rank == 0:
        A = problem.matrix().tocsr()
        b = problem.rhs.ravel().copy()
        ref, info = spla.gmres(A, b, rtol=1e-10, restart=restart, maxiter=maxiter)
        out["cases"][name] = {
            "x": sol.field.ravel().tolist(), "iterations": sol.iterations,
            "cycles": sol.cycles, "scipy_info": sol.scipy_info, "converged": sol.converged,
            "status": sol.status, "ref_info": int(info),
            "vs_scipy": float(np.abs(sol.field.ravel() - ref).max() / np.abs(ref).max())}
print("RESULT " + json.dumps(out), flush=True)
