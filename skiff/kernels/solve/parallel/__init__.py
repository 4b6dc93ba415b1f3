"""Distributed solving: a structured grid split over MPI ranks.

| file | holds |
|---|---|
| ``decompose.py`` | the Cartesian split, one block per rank; ``plan`` (what a launch holds) |
| ``problems.py`` | the built-in Poisson built per block (no whole-grid arrays) |
| ``halo.py`` | the messages: ghost-layer exchange, sums, gathers; byte counts |
| ``operator.py`` | one rank's block of a level: stencil apply, smoother, grid transfers |
| ``multigrid.py`` | the serial multigrid cycle over the blocks, coarse levels gathered |
| ``krylov.py`` | the serial Krylov loops' operator on a block: global sums |
| ``solver.py`` | ``DistributedSolver``: set up, solve, gather the field to rank 0 |
| ``rows.py`` | a user's sparse matrix by blocks of rows: the halo from its column pattern, |
|  | ``RowSolver`` / ``row_solve`` (CG / BiCGStab / GMRES with Jacobi over the ranks) |
| ``block_local.py`` | block Jacobi for the row split: ILU(0) / IC(0), ILUT or an AMG |
|  | V-cycle of each rank's diagonal block (``precond='ilu'`` / ``'ilut'`` / ``'amg'``) |
| ``rows_job.py`` | the job ``solve A.mtx --np N``: the files split by rows, rank 0 reports |
"""

from .decompose import Decomposition, plan, process_grid
from .rows import row_solve
from .solver import DistributedSolver, check_distributed

__all__ = ["Decomposition", "DistributedSolver", "check_distributed", "plan", "process_grid",
           "row_solve"]
