"""Run on N ranks: distributed solves of several grid problems against references.

Rank 0 also solves each problem with the serial skiff Solver and with SciPy's spsolve (an
independent reference) and prints one ``RESULT {json}`` line per rank.
"""

import json
import sys

import numpy as np
import scipy.sparse.linalg as spla
from mpi4py import MPI

from skiff.kernels.solve.parallel import Decomposition
from skiff.kernels.solve.parallel.halo import SolveComm
from skiff.kernels.solve.parallel.operator import BlockLevel
from skiff.kernels.solve.parallel.solver import DistributedSolver
from skiff.kernels.solve.problems import diffusion, grid_problem, poisson
from skiff.kernels.solve.solver import Solver

world = MPI.COMM_WORLD
rank = world.Get_rank()


def body(n):
    c = (np.indices((n, n)) + 0.5) / n
    sdf = np.hypot(c[0] - 0.4, c[1] - 0.5) - 0.15
    return grid_problem((n, n), sdf=sdf, source=0.0, body_bc=("dirichlet", 0.5),
                        bc={"x-": ("dirichlet", 1.0), "x+": ("dirichlet", 0.0)}, name="body")


def jump(shape):
    c = np.indices(shape).astype(float)
    inside = np.all([(c[a] + 0.5) / shape[a] > 0.3 for a in range(len(shape))], axis=0)
    return diffusion(shape, np.where(inside, 1000.0, 1.0), name="jump")


CASES = [  # (name, problem, options)
    ("poisson-2d", poisson((64, 64)), {}),
    ("poisson-3d", poisson((24, 24, 24)), {}),
    ("poisson-odd", poisson((50, 38)), {}),
    ("jump", jump((64, 64)), {}),
    ("body", body(64), {}),
    ("neumann", poisson((48, 48), bc="neumann",
                        source=lambda x, y: np.cos(np.pi * x) * np.cos(np.pi * y)),
     {"compatibility": "project"}),
    ("stationary-W", poisson((48, 40)), {"method": "mg", "cycle": "W"}),
    ("jacobi", poisson((32, 32)), {"precond": "jacobi"}),
    ("tiny", poisson((6, 5)), {}),   # one level: every cycle gathered
    ("pipecg", jump((64, 64)), {"method": "pipecg"}),
    ("bicgstab", poisson((48, 40)), {"method": "bicgstab"}),
    ("gmres", body(48), {"method": "gmres", "restart": 10}),
]
only = sys.argv[1:]
out = {"rank": rank, "size": world.Get_size(), "cases": {}}
for name, problem, options in CASES:
    if only and name not in only:
        continue
    sol = DistributedSolver(problem, **options).solve(rtol=1e-8)
    if rank == 0:
        serial = Solver(problem, **options).solve(rtol=1e-8)
        A = problem.matrix().tocsc()
        b = problem.rhs.ravel().copy()
        if problem.singular:
            b -= b.mean()
            A = A + 1e-12 * spla.norm(A) * __import__("scipy.sparse").sparse.identity(A.shape[0])
        ref = spla.spsolve(A, b)
        if problem.singular:
            ref -= ref.mean()
        x = sol.field.ravel()
        scale = float(np.abs(ref).max())
        out["cases"][name] = {
            "iterations": sol.iterations, "serial_iterations": serial.iterations,
            "converged": sol.converged,
            "vs_serial": float(np.abs(x - serial.field.ravel()).max()) / scale,
            "vs_scipy": float(np.abs(x - ref).max()) / scale,
            "serial_vs_scipy": float(np.abs(serial.field.ravel() - ref).max()) / scale,
            "ranks": sol.info["ranks"], "subdomains": sol.info["subdomains"],
            "halo_bytes": sol.info["halo_bytes"], "shape": list(problem.shape)}

# the halo count of one exchange is the faces this rank sends (corners included)
p = poisson((40, 24, 16))
dec = Decomposition(p.shape3, world.Get_size())
comm = SolveComm(world)
level = BlockLevel(p.stencil, dec, rank, p.signs, comm)
level.apply(level.zeros(), level.zeros())
out["one_exchange"] = {"counted": comm.halo_bytes, "expected": 8 * dec.halo_cells(rank)}
print("RESULT " + json.dumps(out), flush=True)
