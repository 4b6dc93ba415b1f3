"""Incompressible flow around a body in a channel: Taylor-Hood P2/P1 finite elements on a
body-fitted gmsh mesh (assembled with scikit-fem), steady Newton and BDF2 pressure-correction
time stepping, forces as volume integrals; every linear solve through skiff's ``Solver``.

>>> from skiff.kernels.solve.flow import run_case
>>> res = run_case("2d-1", resolution=32)          # doctest: +SKIP
>>> round(res.cd, 1)                               # doctest: +SKIP
5.6

Files: ``mesh.py`` (gmsh channel meshes), ``spaces.py`` (the P2/P1 matrices and the fast
convection assembly), ``steady.py`` (Newton), ``unsteady.py`` (time stepping), ``dfg.py``
(the Schäfer-Turek cases and their measurements), ``result.py`` (``FlowResult`` and plots),
``job.py`` (the ``%solve cylinder`` entry).
"""

from .dfg import CASES, Case, coefficients, run_case, strouhal
from .mesh import DFG_CHANNEL, MIN_RESOLUTION, Channel, channel_mesh, tag_boundaries
from .result import FlowResult
from .spaces import TaylorHood
from .steady import FlowProblem, FlowState, momentum_residual, solve_steady
from .unsteady import Stepper, run_steps

__all__ = [
    "CASES", "Case", "Channel", "DFG_CHANNEL", "FlowProblem", "FlowResult", "FlowState",
    "MIN_RESOLUTION", "Stepper", "TaylorHood", "channel_mesh", "coefficients",
    "momentum_residual", "run_case", "run_steps", "solve_steady", "strouhal", "tag_boundaries",
]
