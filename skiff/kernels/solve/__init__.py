"""Solving kernels: grid problems (matrix-free stencils), Krylov methods, geometric and algebraic
multigrid, fused kernels with reference twins, and the ``Solution`` they return.

>>> import skiff
>>> from skiff.kernels.solve import poisson
>>> sol = skiff.solve(poisson((64, 64)), method="cg", precond="mg", rtol=1e-8)
>>> sol.converged
True

A solver whose setup is reused for many right-hand sides (a pressure equation each time step)::

    solver = Solver(problem, method="cg", precond="mg")
    for step in range(steps):
        p = solver.solve(rhs(step)).field
"""

from .amg import SmoothedAggregation
from .amg_modes import rigid_body_modes
from .amg_rs import RugeStuben
from .krylov import SolveError
from .problems import GridProblem, convection_diffusion, diffusion, grid_problem, poisson
from .solution import Solution
from .solver import METHODS, PRECONDS, Solver, solve

__all__ = [
    "GridProblem", "METHODS", "PRECONDS", "RugeStuben", "Solution", "SmoothedAggregation",
    "SolveError",
    "Solver", "convection_diffusion", "diffusion", "grid_problem", "poisson",
    "rigid_body_modes", "solve",
]
