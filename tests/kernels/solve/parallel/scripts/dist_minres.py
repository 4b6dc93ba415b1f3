"""Run on N ranks: distributed MINRES (the serial loop with global sums) against the serial
Solver's MINRES and SciPy's spsolve; one ``RESULT {json}`` line per rank."""

import json

import numpy as np
import scipy.sparse.linalg as spla
from mpi4py import MPI

from skiff.kernels.solve.parallel.solver import DistributedSolver
from skiff.kernels.solve.problems import diffusion, poisson
from skiff.kernels.solve.solver import Solver

world = MPI.COMM_WORLD
rank = world.Get_rank()
c = np.indices((48, 40)).astype(float)
jump = diffusion((48, 40), np.where((c[0] + 0.5) / 48 > 0.3, 100.0, 1.0), name="jump")
CASES = [("poisson-mg", poisson((64, 48)), {"precond": "mg"}),
         ("jump-jacobi", jump, {"precond": "jacobi"}),
         ("poisson3d-none", poisson((12, 10, 8)), {"precond": "none"})]
out = {"rank": rank, "cases": {}}
for name, problem, options in CASES:
    # a random b (the same on every rank): the built-in Poisson's is one eigenvector
    b = np.random.default_rng(5).standard_normal(problem.shape)
    sol = DistributedSolver(problem, method="minres", **options).solve(b, rtol=1e-9)
    if rank == 0:
        serial = Solver(problem, method="minres", **options).solve(b, rtol=1e-9)
        ref = spla.spsolve(problem.matrix().tocsc(), b.ravel())
        scale = float(np.abs(ref).max())
        out["cases"][name] = {
            "iterations": sol.iterations, "serial_iterations": serial.iterations,
            "converged": sol.converged, "method": sol.method,
            "vs_serial": float(np.abs(sol.field.ravel() - serial.field.ravel()).max()) / scale,
            "vs_scipy": float(np.abs(sol.field.ravel() - ref).max()) / scale}
print("RESULT " + json.dumps(out), flush=True)
