"""Kind ``solve``: ``%solve`` / ``%%solve`` / ``python -m skiff solve`` / the Solve form.

``%solve PROBLEM [B] [--grid 1024x1024] [--method cg] [--precond mg] [--rtol 1e-8]
[--device auto] [--np N] [--launcher slurm --nodes K --gpus-per-node G [--dry-run]] [--wait]
[-o NAME]``. With several ranks every rank solves its block of the grid
(``kernels/solve/parallel``), or of a matrix file's rows (``parallel/rows_job.py``: cg,
bicgstab, gmres; Jacobi, block AMG); the launch records the decomposition and the memory each rank
needs (``--dry-run`` writes the Slurm script and shows them without queueing). PROBLEM is a
built-in problem (poisson, diffusion, jump, convection, body) or, in a notebook, a variable
holding a matrix (then B names the right-hand side) or a GridProblem. ``%solve cylinder
--case 2d-1|2d-2|2d-3 [--resolution N] [--re RE] [--dt DT] [--t-end T]`` runs the DFG flow
benchmark (``kernels/solve/flow``); its value is a ``FlowResult``. ``%solve train-nose
[--length 3] [--bluntness 0.4] [--clearance 0.15] [--re 1000] [--adapt
uniform|graded|estimator|learned] [--flow auto|steady|unsteady]`` solves the flow around a
train's nose near the ground (``kernels/solve/flow/nose*.py``); its value is a ``NoseFlow``.
``%%solve`` takes a short spec in the cell (read by :func:`parse_spec`)::

    domain: 256x256                      # cells per axis; "extent 2x1" after it sets the box
    coefficient: 1 + 999*(x > 0.5)       # k(x, y[, z]): a number or an expression
    boundaries: x-=dirichlet 1; x+=dirichlet 0; y-=neumann; y+=neumann
    source: sin(pi*x) * sin(pi*y)        # f(x, y[, z])
    body: hypot(x - 0.5, y - 0.5) - 0.2  # signed distance; cells where it is < 0 drop out
                                         # ("...; dirichlet 1": value on its surface)
    velocity: 10, 0                      # convection (then use bicgstab or gmres)
    solver: cg mg rtol=1e-8 maxiter=200  # method, preconditioner, options

Expressions see x, y, z (cell or face centres) and numpy's sin, cos, exp, log, sqrt, tanh,
abs, hypot, minimum, maximum, where, pi. A notebook matrix or GridProblem is solved on a thread
of the kernel (its numbers live there); the job's value is the
:class:`~skiff.kernels.solve.solution.Solution`.
"""

from __future__ import annotations

import argparse
import ast
import functools
import math
import os
import re
import shlex
from pathlib import Path
from types import SimpleNamespace

from skiff.grammar.common import (
    cluster_options,
    command,
    device_option,
    did_you_mean,
    grid_shape,
    launch_options,
    missing_file,
    nonneg_float,
    nonneg_int,
    positive_float,
    positive_int,
    relative_tolerance,
    unknown_name,
    was_given,
)
from skiff.kernels.backend.devices import DEFAULT_DEVICE

from .base import JobRequest, Kind, figure

__all__ = ["COMMAND", "KIND", "to_config", "parse_spec", "PROBLEMS", "EXPR_NAMES",
           "check_expression", "is_system"]

PROBLEMS = ("poisson", "diffusion", "jump", "convection", "body", "cylinder", "train-nose",
            "custom")
EXPR_NAMES = ("x", "y", "z", "sin", "cos", "tan", "exp", "log", "sqrt", "tanh", "abs", "hypot",
              "minimum", "maximum", "where", "pi", "arctan2", "cosh", "sinh")
SOLVER_OPTIONS = ("rtol", "atol", "maxiter", "restart", "cycle", "smoother", "pre", "post",
                  "compatibility", "amg")
AMG_KINDS = ("auto", "sa", "classical")
# --interpolation: geometric multigrid's (Solver's interpolation=), classical AMG's (pyamg's)
GRID_INTERPOLATIONS = ("auto", "linear", "constant")


def _amg_interpolations() -> tuple:
    """Classical AMG's interpolations (pyamg's names: classical, direct, extended+i)."""
    from skiff.kernels.solve.amg_rs import INTERPOLATIONS

    return tuple(INTERPOLATIONS)


STRENGTHS = ("symmetric", "evolution", "classical")
# AMG's options a pyamg user writes as keywords (round 35): in the config only when given
AMG_KEYWORDS = ("strength", "max_coarse", "near_nullspace")
# what a matrix refused with --np can do instead (round 39: the row split of parallel/rows.py)
ROW_SPLIT = ("scipy.sparse.save_npz('A.npz', A) and %solve A.npz --np 2 split it by rows "
             "over the job's ranks; a script run as mpirun -n 2 python script.py splits a "
             "sparse matrix by rows: "
             "skiff.kernels.solve.parallel.row_solve(A, b, method='cg', comm=MPI.COMM_WORLD)")
# the highest Reynolds number a cylinder run takes (the nose's limit is its own, MAX_RE)
CYLINDER_MAX_RE = 1000.0
SPEC_KEYS = ("domain", "coefficient", "boundaries", "source", "body", "velocity", "solver")


@functools.cache
def _k() -> SimpleNamespace:
    """The solve kernels' names and checks, imported the first time a solve command is
    built or checked: they bring in SciPy (~0.3 s), which ``python -m skiff ocr`` and
    ``%load_ext skiff`` need not wait for."""
    from skiff.kernels.solve.estimate import check_fits
    from skiff.kernels.solve.flow.adapt import ADAPT
    from skiff.kernels.solve.flow.dfg import CASES, check_steps
    from skiff.kernels.solve.flow.mesh import MIN_RESOLUTION
    from skiff.kernels.solve.multigrid import CYCLES, SMOOTHERS
    from skiff.kernels.solve.problems import BC_KINDS, SIDES
    from skiff.kernels.solve.solver import (
        AMG_SMOOTHERS,
        METHODS,
        PRECONDS,
        check_tolerances,
        takes_precond,
    )

    return SimpleNamespace(check_fits=check_fits, NOSE_ADAPT=ADAPT, FLOW_CASES=CASES,
                           check_steps=check_steps, FLOW_MIN_RESOLUTION=MIN_RESOLUTION,
                           CYCLES=CYCLES,
                           SMOOTHERS=SMOOTHERS, AMG_SMOOTHERS=AMG_SMOOTHERS,
                           BC_KINDS=BC_KINDS, SIDES=SIDES,
                           METHODS=METHODS, PRECONDS=PRECONDS,
                           check_tolerances=check_tolerances, takes_precond=takes_precond)


def _nose_flag_hint(name: str) -> str | None:
    """``--yaw``, ``--speed`` and the like: why train-nose has no such flag (the kernel's
    words), read only when a flag is unrecognized."""
    from skiff.kernels.solve.flow.nose_job import keyword_why

    why = keyword_why(name)
    if not why:
        return None
    return f"train-nose: {why}" + ("; the flag is --re RE" if "re = U H" in why else "")


@command("solve", help="Solve a PDE on a grid or a linear system: built-in problems, notebook "
                       "matrices, or a %%solve cell spec.")
@launch_options
@cluster_options
@device_option
def COMMAND(p):
    p.flag_hint = _nose_flag_hint
    p.add_argument("problem", nargs="?", default=None, metavar="PROBLEM",
                   help=f"built-in problem ({', '.join(PROBLEMS[:-1])}), a matrix file (.mtx, "
                        ".npz, .npy) or a notebook variable (matrix or GridProblem)")
    p.add_argument("b", nargs="?", default=None, metavar="B",
                   help="the right-hand side of a matrix: a notebook variable, or a file "
                        "(.npy, .txt, .mtx); left out for a matrix file, b = A 1")
    p.add_argument("--grid", type=solve_grid, default=(256, 256), metavar="NxN[xN]",
                   help="cells per axis, e.g. 1024x1024 or 64x64x64 (default 256x256)")
    p.add_argument("--method", choices=_k().METHODS, default=None,
                   help="default: cg on the built-in problems (bicgstab with convection), auto "
                        "for a notebook matrix (cg when symmetric with a positive diagonal, "
                        "else gmres)")
    p.add_argument("--precond", default="auto", metavar="{" + ",".join(_k().PRECONDS) + "}|VAR",
                   help="auto: geometric multigrid on grids, AMG on matrices; with a notebook "
                        "matrix also a notebook variable holding your preconditioner (SciPy's "
                        "M: a LinearOperator, a function r -> M r, an (n, n) matrix, spilu(A) "
                        "or pyamg's ml.aspreconditioner())")
    p.add_argument("--drop-tol", type=nonneg_float, default=None, metavar="X",
                   help="ILUT's drop tolerance (with --precond ilut; SciPy's spilu "
                        "drop_tol): entries under X times their row's 2-norm are dropped "
                        "(default 1e-4; smaller keeps more fill, fewer iterations)")
    p.add_argument("--fill-factor", type=positive_float, default=None, metavar="F",
                   help="ILUT's fill bound (with --precond ilut; SciPy's spilu fill_factor, "
                        ">= 1): each row of L and of U keeps at most F/2 times the row's "
                        "entries in A (default 10)")
    p.add_argument("--cycle", choices=_k().CYCLES, default="V",
                   help="geometric multigrid's cycle (grids, where it runs: --precond mg "
                        "or auto, --method mg or fmg)")
    p.add_argument("--smoother", choices=_k().SMOOTHERS + _k().AMG_SMOOTHERS, default="rbgs",
                   help="rbgs, chebyshev: geometric multigrid's (grids); schwarz, "
                        "schwarz-overlap: AMG's block smoothers (a matrix, or --precond amg), "
                        "for coefficients that jump inside elements; gauss-seidel: AMG's "
                        "nodal-block symmetric Gauss-Seidel (taken for systems by itself)")
    p.add_argument("--amg", choices=AMG_KINDS, default="auto",
                   help="AMG's kind (a matrix, or --precond amg): sa, smoothed aggregation; "
                        "classical, Ruge-Stueben (pyamg's ruge_stuben_solver), for scalar "
                        "diffusion with jumping coefficients; auto picks from the matrix")
    p.add_argument("--amg-options", type=amg_options_arg, default=None,
                   metavar="KEY=VALUE,...",
                   help="classical AMG's options (with --amg classical), as pyamg's "
                        "ruge_stuben_solver takes them: second_pass=true, "
                        "interpolation=classical|direct, theta=0.25, order=lowest|pyamg, "
                        "max_coarse=400, sweeps=K (Gauss-Seidel sweeps a side: pyamg's "
                        "presmoother=('gauss_seidel', {'iterations': K})), cf=RS|PMIS "
                        "(pyamg's CF=), aggressive=K (the first K levels coarsened twice)")
    p.add_argument("--strength", type=strength_arg, default=None, metavar="NAME[:THETA]",
                   help="AMG's strength of connection, as pyamg's strength=: symmetric or "
                        "evolution (smoothed aggregation), classical (--amg classical); "
                        ":THETA its threshold (symmetric:0.25 is pyamg's ('symmetric', "
                        "{'theta': 0.25}))")
    p.add_argument("--max-coarse", type=positive_int, default=None, metavar="N",
                   help="AMG's coarsest level size, solved directly (pyamg's max_coarse)")
    p.add_argument("--interpolation", choices=GRID_INTERPOLATIONS + _amg_interpolations(),
                   default=None,
                   help="multigrid's interpolation: linear or constant, geometric "
                        "multigrid's (grids; auto: its own choice); classical, direct or "
                        "extended+i, classical AMG's (pyamg's interpolation=; --amg "
                        "classical)")
    p.add_argument("--near-nullspace", default=None, metavar="PATH|VAR",
                   help="the vectors AMG's coarse levels must hold (pyamg's B, e.g. "
                        "elasticity's rigid-body modes): a .npy, a .npz (its B), a .txt or "
                        ".csv table, one row per unknown; in a notebook also a variable "
                        "holding the (n, k) array")
    p.add_argument("--pre", type=positive_int, default=2, metavar="N",
                   help="geometric multigrid's smoothing sweeps before the coarse grid (default 2)")
    p.add_argument("--post", type=positive_int, default=2, metavar="N",
                   help="geometric multigrid's smoothing sweeps after the coarse grid (default 2)")
    p.add_argument("--rtol", type=relative_tolerance, default=1e-8, metavar="X",
                   help="stop at |b - Ax| <= max(rtol |b|, atol) (SciPy's rtol; default 1e-8, "
                        "not SciPy's 1e-5)")
    p.add_argument("--atol", type=nonneg_float, default=0.0, metavar="X",
                   help="absolute tolerance on |b - Ax| (SciPy's atol)")
    p.add_argument("--maxiter", type=nonneg_int, default=None, metavar="N",
                   help="iteration limit; for gmres restart cycles, as SciPy's (0: no "
                        "iteration, x0 back with its residual, as SciPy's cg; one rank)")
    p.add_argument("--restart", type=positive_int, default=30, metavar="M",
                   help="GMRES restart length (default 30; SciPy's gmres: 20)")
    p.add_argument("--overlap", type=nonneg_int, default=0, metavar="K",
                   help="a matrix file over ranks (--np 2) with --precond ilu or amg: K (1 to "
                        "4) grows each rank's block by K layers of its neighbours' rows "
                        "(additive Schwarz, PETSc's -pc_type asm -pc_asm_overlap K); 0, "
                        "block Jacobi. CG with --coarse auto's AMG coarse level drops it "
                        "(fewer iterations without; the summary says so; --coarse amg keeps "
                        "it)")
    p.add_argument("--schwarz", choices=("auto", "basic", "weighted", "restrict"),
                   default=None,
                   help="a matrix file over ranks with --overlap: the overlap's form; basic "
                        "adds every block's correction (CG's auto), weighted scales each by "
                        "1/sqrt(the blocks holding the unknown), symmetric too (fewer CG "
                        "iterations on smooth coefficients, more on jumping ones), restrict "
                        "keeps the own rows' (BiCGStab / GMRES's auto; not for CG)")
    p.add_argument("--coarse", choices=("auto", "amg", "aggregates", "ranks", "none"),
                   default=None,
                   help="a matrix file over ranks (--np 2) with --precond amg or ilu: a coarse "
                        "level across the ranks (a two-level method, as PETSc's GAMG): amg, "
                        "each rank's first AMG level smoothed across the ranks, gathered and "
                        "solved by an AMG V-cycle (auto's choice for amg up to 32 ranks); "
                        "aggregates, each rank's AMG coarsest grid gathered (auto's past 32); "
                        "ranks, one aggregate a rank; none, the blocks alone (auto's for ilu)")
    p.add_argument("--reorder", choices=("auto", "rcm", "none"), default=None,
                   help="a matrix file over ranks (--np 2): rcm renumbers the rows by reverse "
                        "Cuthill-McKee before the split (rows in a random order, a graph's); "
                        "auto (the default) where it halves the bandwidth; none, as given. "
                        "x comes back in the file's order. With --precond ilut: the order ILUT "
                        "factors in (each rank's block with --np), rcm (auto's) or none "
                        "(A's own)")
    p.add_argument("--stop", choices=("residual", "scipy"), default="residual",
                   help="residual: |b - Ax| <= max(rtol |b|, atol); scipy: SciPy's minres "
                        "stopping tests (method minres: SciPy's iteration count)")
    p.add_argument("--bc", choices=_k().BC_KINDS, default="dirichlet",
                   help="condition on every side of the built-in problems")
    p.add_argument("--contrast", type=positive_float, default=1000.0, metavar="K",
                   help="coefficient ratio of the 'jump' problem")
    p.add_argument("--velocity", default=None, metavar="VX,VY[,VZ]",
                   help="convection velocity of the 'convection' problem (default 20,5)")
    p.add_argument("--compatibility", choices=("project",), default=None,
                   help="project: make a pure-Neumann right-hand side compatible")
    p.add_argument("--save", default=None, metavar="PATH",
                   help="write the solution to PATH (.npz or .vtk; cylinder and train-nose: "
                        ".vtu or .vtk for ParaView, .npz, .csv for the surface's cp, "
                        ".history.csv for the coefficients in time, .json for the numbers; "
                        "its missing folders are made)")
    p.add_argument("--x0", default=None, metavar="PATH",
                   help="warm start (SciPy's x0, the first iterate): a stopped solve's "
                        "RUN/partial.npz, a --save'd solution (.npz) or a .npy array; "
                        "cylinder: a stopped 2d-2 / 2d-3 run's RUN/flow-state.npz (it goes "
                        "on from there, with its case, grid, Re, dt and channel)")
    p.add_argument("--case", choices=tuple(_k().FLOW_CASES), default=None,
                   help="cylinder: DFG benchmark case (2d-1 steady Re 20, 2d-2 periodic "
                        "Re 100, 2d-3 unsteady inflow); default 2d-1")
    p.add_argument("--resolution", type=positive_int, default=None, metavar="N",
                   help=f"cylinder: edges around the cylinder (>= {_k().FLOW_MIN_RESOLUTION}; "
                        "default per case); train-nose: cells per train height on the body")
    p.add_argument("--re", type=float, default=None, metavar="RE",
                   help="cylinder: Reynolds number U_mean D / nu (default the case's); "
                        "train-nose: U H / nu (default 1000)")
    p.add_argument("--dt", type=float, default=None, metavar="DT",
                   help="cylinder: time step of the unsteady cases")
    p.add_argument("--t-end", type=float, default=None, metavar="T",
                   help="cylinder: simulated time of the unsteady cases")
    p.add_argument("--channel", default=None, metavar="height=H[,length=L][,centre=X:Y]",
                   help="cylinder: another channel around the benchmark's cylinder (D 0.1 m), "
                        "in metres; DFG's is height=0.41,length=2.2,centre=0.2:0.2")
    p.add_argument("--length", type=float, default=3.0, metavar="L",
                   help="train-nose: nose length in train heights")
    p.add_argument("--bluntness", type=float, default=0.4, metavar="B",
                   help="train-nose: 0 (slender) .. 1 (blunt face)")
    p.add_argument("--clearance", type=float, default=0.15, metavar="C",
                   help="train-nose: gap to the ground in train heights")
    p.add_argument("--profile", default=None, metavar="CSV",
                   help="train-nose: the nose's own outline, a CSV of x, y points in any "
                        "unit (then --length and --bluntness are not used; --adapt graded "
                        "by default)")
    p.add_argument("--adapt", choices=_k().NOSE_ADAPT, default="learned",
                   help="train-nose: how the grid is sized (one size everywhere, graded from "
                        "the body, an a-posteriori estimator loop, or a network trained on "
                        "other shapes)")
    p.add_argument("--flow", choices=("auto", "steady", "unsteady"), default="auto",
                   help="train-nose: steady Newton, time-averaged unsteady, or steady with "
                        "the unsteady fallback")


def solve_grid(text) -> tuple[int, ...]:
    """``--grid`` of a solve: 2 or 3 sizes (``256x256``, ``64x64x64``); the grids the solver
    builds are 2-D or 3-D, so a single size is refused here, before any run folder exists."""
    if isinstance(text, str):
        parts = re.split(r"[x×,]", text.strip().lower())
        sizes = tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) else None
    else:
        sizes = tuple(int(n) for n in text)
    if sizes is not None and (len(sizes) not in (2, 3) or min(sizes) < 2):
        shown = text if isinstance(text, str) else "x".join(map(str, sizes))
        raise argparse.ArgumentTypeError(
            f"expected a grid of 2 or 3 sizes of at least 2, like 256x256 or 64x64x64, "
            f"got {shown!r}")
    return grid_shape(text) if isinstance(text, str) else sizes


def _velocity(text, ndim):
    if text is None:
        return None
    if isinstance(text, (list, tuple)):
        parts = list(text)
    else:
        parts = [t for t in re.split(r"[,\s]+", str(text).strip()) if t]
    try:
        vel = [float(v) for v in parts]
    except ValueError:
        raise ValueError(f"velocity must be numbers like 20,5, got {text!r}") from None
    if len(vel) != ndim:
        raise ValueError(f"velocity needs {ndim} components for a {ndim}D grid, got {text!r}")
    return vel


def check_expression(text: str, what: str) -> str:
    """Accept a numeric expression of x, y, z and numpy functions; return it stripped."""
    text = str(text).strip()
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise ValueError(f"{what}: cannot read the expression {text!r}") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id not in EXPR_NAMES:
            raise ValueError(f"{what}: unknown name {node.id!r} in {text!r}; expressions may "
                             f"use {', '.join(EXPR_NAMES)}")
        if isinstance(node, (ast.Attribute, ast.Lambda, ast.Subscript, ast.comprehension)):
            raise ValueError(f"{what}: only arithmetic and functions are allowed, got {text!r}")
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float)):
            raise ValueError(f"{what}: {node.value!r} is not a real number, in {text!r}")
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitXor):
            raise ValueError(f"{what}: '^' is not a power in Python, write '**' "
                             f"({text.replace('^', '**')!r})")
    return text


# Options only some problems read: given to another, they used to be dropped without a word
# (`poisson --re 100` solved Poisson; `train-nose --grid 64x64 --method mg` ignored both).
_ONLY_FOR = {"case": ("cylinder",), "channel": ("cylinder",), "dt": ("cylinder", "train-nose"),
             "t_end": ("cylinder", "train-nose"),
             "resolution": ("cylinder", "train-nose"), "re": ("cylinder", "train-nose"),
             "length": ("train-nose",), "bluntness": ("train-nose",),
             "clearance": ("train-nose",), "adapt": ("train-nose",), "flow": ("train-nose",),
             "profile": ("train-nose",),
             "contrast": ("jump",),
             # `poisson --velocity 1,2` solved Poisson without convection (round 34)
             "velocity": ("convection", "custom")}
# the grid and linear-solver options: the flow problems mesh and choose their own solvers
_GRID_ONLY = ("grid", "method", "precond", "cycle", "smoother", "pre", "post", "rtol", "atol",
              "maxiter", "restart", "bc", "velocity", "compatibility", "stop", "amg",
              "amg_options", "x0", "strength", "max_coarse", "interpolation",
              "near_nullspace", "overlap", "reorder", "coarse", "schwarz", "drop_tol",
              "fill_factor")
_FLOW = ("cylinder", "train-nose")


def strength_arg(text) -> str:
    """``--strength symmetric:0.25``: checked, as text (a form renders it back)."""
    parse_strength(text)
    return str(text).strip()


def parse_strength(value):
    """``NAME[:THETA]`` -> pyamg's ``strength=``: ``'evolution'`` or ``['symmetric',
    {'theta': 0.25}]`` (a list in the JSON config; the kernel reads it as pyamg's tuple);
    a config's own value passes through."""
    if isinstance(value, (list, tuple)):
        return list(value)
    name, sep, theta = str(value).strip().partition(":")
    name = name.strip().lower()
    if name not in STRENGTHS:
        raise argparse.ArgumentTypeError(str(unknown_name("strength", name, STRENGTHS)))
    if not sep:
        return name
    try:
        t = float(theta)
    except ValueError:
        t = -1.0
    if not 0.0 <= t < 1.0:
        raise argparse.ArgumentTypeError(f"--strength {value}: THETA is the threshold in "
                                         f"[0, 1) (pyamg's 0.25 for symmetric), got {theta!r}")
    if name == "evolution":
        raise argparse.ArgumentTypeError("--strength evolution takes no THETA (pyamg's "
                                         "evolution measure has its own epsilon): --strength "
                                         "evolution, or symmetric:THETA")
    return [name, {"theta": t}]


def _strength_name(value):
    return value[0] if isinstance(value, (list, tuple)) else str(value).partition(":")[0]


def amg_keywords_config(values: dict) -> dict:
    """The config keys of ``--strength``, ``--max-coarse``, ``--interpolation`` and
    ``--near-nullspace`` (round 35: the kernel entry reads them as pyamg's keywords),
    only those given: a job without them has the config it had."""
    out = {}
    if values.get("strength") is not None:
        out["strength"] = parse_strength(values["strength"])
    if values.get("max_coarse") is not None:
        out["max_coarse"] = int(values["max_coarse"])
    if values.get("interpolation") not in (None, "auto"):
        out["interpolation"] = values["interpolation"]
    nn = values.get("near_nullspace")
    if nn is not None:
        out["near_nullspace"] = nn if not isinstance(nn, str) else \
            os.path.abspath(os.path.expanduser(nn))
    return out


def check_amg_keywords(problem: str, values: dict, system: str | None) -> None:
    """``--strength``, ``--max-coarse``, ``--interpolation``, ``--near-nullspace`` where
    nothing would read them, refused in one line before any job (the flows refuse them
    with their other solver options): AMG's where AMG is the preconditioner (a matrix, or
    ``--precond amg``); ``--interpolation linear|constant`` where geometric multigrid runs
    (a grid), ``classical|direct`` classical AMG's; ``--near-nullspace`` a matrix's
    smoothed aggregation. ``values``: the parsed options or a built-in problem's config."""
    if problem in _FLOW:
        return
    given = [n for n in ("strength", "max_coarse", "near_nullspace")
             if values.get(n) is not None]
    interp = values.get("interpolation")
    amg = values.get("amg") or "auto"
    options = values.get("amg_options") or {}
    if isinstance(options, str):
        options = parse_amg_options(options)
    if interp is not None and interp not in GRID_INTERPOLATIONS:
        given.append("interpolation")
    precond = values.get("precond")
    amg_runs = precond == "amg" or (system == "matrix" and precond in (None, "auto"))
    if given and not amg_runs:
        flags = ", ".join(_flag(n) + (f" {interp}" if n == "interpolation" else "")
                          for n in given)
        verb = "is" if len(given) == 1 else "are"
        if system == "matrix":
            raise ValueError(f"{flags} {verb} algebraic multigrid's and the preconditioner is "
                             f"{precond!r}: use --precond amg (or leave it out), or drop "
                             f"{flags}")
        who = ("a GridProblem" if system == "grid" else "a %%solve cell" if problem == "custom"
               else repr(problem))
        extra = (" (a matrix's option: a grid's AMG has no near null space to give)"
                 if given == ["near_nullspace"] else "")
        raise ValueError(f"{flags} {verb} algebraic multigrid's and {who} is preconditioned "
                         f"by geometric multigrid: add --precond amg, or drop "
                         f"{flags}{extra}")
    if values.get("near_nullspace") is not None and system != "matrix":
        raise ValueError("--near-nullspace is for a matrix (a file or a notebook matrix) "
                         "solved with smoothed aggregation: a grid problem's rows are its "
                         "own; drop it")
    if interp in GRID_INTERPOLATIONS[1:] and (system == "matrix" or precond == "amg" or
                                                _mg_unused(values.get("method"), precond)):
        if system == "matrix" or precond == "amg":
            where = ("a matrix is preconditioned by AMG" if system == "matrix" else
                     "--precond amg is algebraic multigrid")
            raise ValueError(f"--interpolation {interp} is geometric multigrid's, and "
                             f"{where}: classical AMG's are "
                             f"{', '.join(_amg_interpolations())} (--amg classical), or drop "
                             f"--interpolation")
        raise ValueError(f"--interpolation {interp} is geometric multigrid's, and --method "
                         f"{values.get('method')} --precond {precond} runs none: use "
                         f"--precond mg (or --method mg), or drop --interpolation")
    strength = values.get("strength")
    sname = None if strength is None else _strength_name(strength)
    amg_interp = interp is not None and interp not in GRID_INTERPOLATIONS
    classical_asked = amg_interp or sname == "classical"
    if classical_asked and amg == "sa":
        what = f"--interpolation {interp}" if amg_interp else "--strength classical"
        raise ValueError(f"{what} is classical AMG's (Ruge-Stueben) and --amg sa is smoothed "
                         f"aggregation: use --amg classical, or drop {what}")
    if sname in ("symmetric", "evolution") and (amg == "classical" or amg_interp):
        raise ValueError(f"--strength {sname} is smoothed aggregation's and "
                         + ("--amg classical" if amg == "classical" else
                            f"--interpolation {interp} (classical AMG's)")
                         + " is Ruge-Stueben: --strength classical[:THETA] there (or "
                           "--amg-options theta=T), or --amg sa")
    if values.get("near_nullspace") is not None and (amg == "classical" or classical_asked):
        raise ValueError("--near-nullspace is smoothed aggregation's (pyamg's B); classical "
                         "AMG takes none: drop it, or --amg sa")
    for key, flag in (("interpolation", "--interpolation"), ("max_coarse", "--max-coarse")):
        if key in options and values.get(key) not in (None, "auto") and \
                options[key] != values.get(key):
            raise ValueError(f"{flag} {values.get(key)} and --amg-options {key}="
                             f"{options[key]} disagree: give one")
    if "theta" in options and strength is not None and \
            isinstance(parse_strength(strength), list):
        raise ValueError("--strength NAME:THETA and --amg-options theta= both set the "
                         "threshold: give one")


def _near_nullspace_value(values: dict, n: int, user_ns: dict | None = None):
    """``--near-nullspace``'s array for a matrix of ``n`` unknowns, checked before any job:
    a notebook variable (the array itself) or a file the kernel reads (its path). Returns
    ``(config value, array or None)``: the array a notebook job passes itself."""
    import numpy as np

    from skiff.kernels.solve.entry import load_near_nullspace

    given = values.get("near_nullspace")
    if given is None:
        return None, None
    ns = user_ns or {}
    if isinstance(given, str) and given in ns:
        array, where = ns[given], f"the notebook variable {given!r}"
    else:
        path = os.path.abspath(os.path.expanduser(str(given)))
        if not os.path.isfile(path) and ns and not os.path.splitext(str(given))[1]:
            arrays = [k for k, v in ns.items() if not k.startswith("_")
                      and getattr(v, "ndim", 0) in (1, 2)]
            raise ValueError(f"--near-nullspace {given}: no notebook variable or file of that "
                             f"name{did_you_mean(given, arrays)}; it takes an (n, k) array "
                             f"or a .npy/.npz/.txt/.csv file")
        if not os.path.isfile(path):
            raise missing_file(str(given), "--near-nullspace file", ": ")
        try:
            array = load_near_nullspace(path)
        except (OSError, ValueError) as exc:
            raise ValueError(f"--near-nullspace {given}: {exc}") from None
        where = path
    try:
        array = np.asarray(array, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"--near-nullspace {given}: {where} is not an array of numbers "
                         f"(an (n, k) array, one row per unknown)") from None
    if array.ndim == 1:
        array = array[:, None]
    if array.ndim != 2 or array.shape[0] != n or array.shape[1] < 1:
        raise ValueError(f"--near-nullspace {given}: shape {tuple(array.shape)}, and the "
                         f"matrix has {n:,} unknowns: give ({n}, k), a row per unknown "
                         f"(pyamg's B)")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"--near-nullspace {given}: it holds NaN or inf")
    if isinstance(given, str) and given in ns:
        return f"<notebook {given}>", array
    return where, None


def amg_options_arg(text) -> str:
    """``--amg-options second_pass=true,theta=0.5`` checked, as text (a form renders it back
    into the line); the config holds :func:`parse_amg_options`'s dict."""
    options = parse_amg_options(text)
    return ",".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}"
                    for k, v in options.items())


def parse_amg_options(text) -> dict:
    """``second_pass=true,theta=0.5``: classical AMG's options (the kernel's
    ``amg_options=``), each key and value checked (a dict, a resumed job's config, passes
    through)."""
    if isinstance(text, dict):
        return text
    from skiff.kernels.solve.amg_rs import INTERPOLATIONS, SPLIT_ORDERS, SPLITTINGS
    from skiff.kernels.solve.solver import AMG_OPTIONS_BY_KIND

    # what classical AMG reads (--strength is its own flag)
    keys = tuple(k for k in AMG_OPTIONS_BY_KIND["classical"] if k != "strength")
    out: dict = {}
    for part in filter(None, (p.strip() for p in str(text).split(","))):
        key, sep, value = part.partition("=")
        key, value = key.strip().replace("-", "_"), value.strip()
        if not sep or not value:
            raise argparse.ArgumentTypeError(f"expected KEY=VALUE pairs, like "
                                             f"second_pass=true,theta=0.5; got {part!r}")
        if key not in keys:
            raise argparse.ArgumentTypeError(str(unknown_name("classical AMG option", key,
                                                              keys)))
        if key == "second_pass":
            if value.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise argparse.ArgumentTypeError(f"second_pass is true or false, got {value!r}")
            out[key] = value.lower() in ("true", "1", "yes")
        elif key == "theta":
            try:
                out[key] = float(value)
            except ValueError:
                out[key] = -1.0
            if not 0.0 <= out[key] < 1.0:
                raise argparse.ArgumentTypeError(f"theta is the strength threshold in [0, 1) "
                                                 f"(pyamg's 0.25), got {value!r}")
        elif key in ("max_coarse", "sweeps"):
            if not value.isdigit() or int(value) < 1:
                raise argparse.ArgumentTypeError(f"{key} is a positive integer, got "
                                                 f"{value!r}")
            out[key] = int(value)
        elif key == "aggressive":   # levels coarsened twice (hypre's aggressive coarsening)
            if not value.isdigit():
                raise argparse.ArgumentTypeError(f"aggressive is a number of levels (>= 0), "
                                                 f"got {value!r}")
            out[key] = int(value)
        elif key == "cf":           # pyamg's CF=: 'RS' or 'PMIS'
            names = {n.lower(): n for n in SPLITTINGS}
            if value.lower() not in names:
                raise argparse.ArgumentTypeError(str(unknown_name("cf", value, SPLITTINGS)))
            out[key] = names[value.lower()]
        else:
            names = INTERPOLATIONS if key == "interpolation" else SPLIT_ORDERS
            if value not in names:
                raise argparse.ArgumentTypeError(str(unknown_name(key, value, names)))
            out[key] = value
    if not out:
        raise argparse.ArgumentTypeError("expected KEY=VALUE pairs, like second_pass=true")
    if out.get("cf") == "PMIS" and (out.get("second_pass") or "order" in out):
        raise argparse.ArgumentTypeError("second_pass and order are Ruge-Stueben's (cf=RS); "
                                         "cf=PMIS takes neither")
    return out


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


# what a user's matrix (a file or a notebook variable) does not read: it has its own size, no
# sides and no velocity, and AMG is its multigrid (a notebook GridProblem reads the cycle options)
_SYSTEM_UNREAD = ("grid", "bc", "velocity", "contrast")
_MATRIX_UNREAD = ("cycle", "smoother", "pre", "post")


def _option_refusal(problem: str, name: str, system: str | None) -> str | None:
    """Why ``problem`` (``system``: as :func:`check_options_apply` takes it) refuses the
    option ``name`` given typed, as the error's line; None: it reads it. The one rule
    :func:`check_options_apply` raises from and :meth:`SolveKind.typed_refusals` answers by."""
    if system is not None:
        unread = _SYSTEM_UNREAD + (_MATRIX_UNREAD if system == "matrix" else ())
        if name not in unread and name not in _ONLY_FOR:
            return None
        what = ("a matrix" if system == "matrix" else "a GridProblem")
        why = {"grid": "its size is its own", "bc": "its boundary rows are its own",
               "velocity": "its convection is in its entries",
               "contrast": "its coefficients are its own"}.get(
            name, "it is geometric multigrid's, and a matrix is preconditioned "
                  "by AMG" if name in _MATRIX_UNREAD else "it is another problem's")
        return f"{_flag(name)} is not read by {problem!r}, {what} ({why}); drop it"
    if problem in _FLOW and name in _GRID_ONLY and (problem, name) != ("cylinder", "x0"):
        size = ("--resolution sets its mesh" if name == "grid" else
                "its linear solves are the flow solver's own")
        return (f"{_flag(name)} is not an option of problem {problem!r} (a "
                f"finite-element flow: {size}); drop it")
    users = _ONLY_FOR.get(name)
    if users and problem not in users:
        named = " and ".join("a %%solve cell" if u == "custom" else u for u in users)
        return (f"{_flag(name)} is an option of {named}; problem {problem!r} does not "
                f"read it")
    return None


# the options some problem refuses: any other is read by every problem
_CHECKED = (*_ONLY_FOR, *_GRID_ONLY, *_MATRIX_UNREAD)


def check_options_apply(problem: str, values: dict, *, system: str | None = None) -> None:
    """Refuse an option the user gave (typed, even at its default: ``cylinder --grid
    256x256`` passed silently; from a panel, set off its default) that ``problem`` does not
    read. ``system``: ``"matrix"`` or ``"grid"`` when ``problem`` names a user's matrix (a
    file or a notebook variable) or a notebook GridProblem rather than a built-in problem."""
    defaults = COMMAND.defaults()
    amg_smoother = values.get("smoother") in _k().AMG_SMOOTHERS
    if amg_smoother and system != "matrix" and problem not in _FLOW \
            and values.get("precond") != "amg":
        raise ValueError(f"--smoother {values['smoother']} is AMG's block smoother and "
                         f"{problem!r} is preconditioned by geometric multigrid: add "
                         f"--precond amg, or use --smoother rbgs or chebyshev")
    for name in _CHECKED:
        if name == "smoother" and amg_smoother and system == "matrix":
            continue  # a matrix reads AMG's smoothers (the geometric ones it refuses)
        if name in values and was_given(values, name, defaults.get(name)):
            why = _option_refusal(problem, name, system)
            if why is not None:
                raise ValueError(why)


def check_restart(values: dict, method: str | None) -> None:
    """``--restart M`` is GMRES's cycle length: with another method (``method``: the one the
    job will use, None or ``auto`` where the solver chooses, maybe GMRES) it was dropped
    without a word (``poisson --restart 10`` solved by CG)."""
    if method in (None, "auto", "gmres") or not was_given(values, "restart", 30):
        return
    raise ValueError(f"--restart is GMRES's restart length, and the method is {method}: "
                     f"add --method gmres, or drop --restart")


_MG_OPTIONS = ("cycle", "pre", "post", "smoother")


def _mg_unused(method: str | None, precond) -> bool:
    """Whether a grid job with ``method`` and ``precond`` (as the job will run them) uses no
    geometric multigrid: its cycle, sweeps and smoother are then read by nothing."""
    if method in ("mg", "fmg"):
        return False
    return method == "direct" or precond not in (None, "auto", "mg")


def mg_refusals(values: dict, method: str | None, precond) -> list[str]:
    """The geometric-multigrid options typed (``--cycle``, ``--pre``, ``--post``, a
    geometric ``--smoother``) that a grid job with ``method`` and ``precond`` never reads."""
    if not _mg_unused(method, precond):
        return []
    defaults = {"cycle": "V", "pre": 2, "post": 2, "smoother": "rbgs"}
    return [name for name in _MG_OPTIONS if was_given(values, name, defaults[name])
            and not (name == "smoother" and values.get("smoother") in _k().AMG_SMOOTHERS)]


def check_mg_options(values: dict, method: str | None, precond) -> None:
    """``--cycle W --precond jacobi`` (or ``--pre 3 --method direct``) on a grid: geometric
    multigrid's options where none runs were dropped without a word."""
    unread = mg_refusals(values, method, precond)
    if unread:
        flags = ", ".join(_flag(n) for n in unread)
        verb = "is" if len(unread) == 1 else "are"
        if method == "direct":
            raise ValueError(f"{flags} {verb} geometric multigrid's, and --method direct "
                             f"runs none (a sparse factorization): drop {flags}, or use "
                             f"--method mg")
        raise ValueError(f"{flags} {verb} geometric multigrid's, and --method {method} "
                         f"--precond {precond} runs none: use --precond mg (or --method mg), "
                         f"or drop {flags}")


def check_amg_kind(problem: str, values: dict, system: str | None) -> None:
    """Refuse ``--amg sa|classical`` where AMG is not the preconditioner (``values``: the
    parsed options, or a built-in problem's config), before a job is made: ``poisson --amg
    classical`` (geometric multigrid) and ``A.mtx --precond jacobi --amg classical`` made a
    job that failed at once on the solver's Python names (``amg='classical' ... use
    precond='amg'``), not the flags."""
    check_amg_keywords(problem, values, system)
    amg = values.get("amg")
    if values.get("amg_options") and amg != "classical" and problem not in _FLOW:
        raise ValueError(f"--amg-options are classical AMG's (Ruge-Stueben): add --amg "
                         f"classical{'' if system == 'matrix' else ' --precond amg'}"
                         + (f" (--amg {amg})" if amg not in (None, "auto") else ""))
    if amg in (None, "auto") or problem in _FLOW:   # the flows refuse --amg as theirs
        return
    precond = values.get("precond")
    if precond == "amg" or (system == "matrix" and precond in (None, "auto")):
        return
    if precond in (None, "auto"):
        who = ("a GridProblem" if system == "grid" else "a %%solve cell" if problem == "custom"
               else repr(problem))
        what = f"{who} is preconditioned by geometric multigrid"
    else:
        what = f"the preconditioner is {precond!r}"
    raise ValueError(f"--amg {amg} chooses the kind of algebraic multigrid (--precond amg) "
                     f"and {what}: add --precond amg, or drop --amg")


def _system_of(problem: str | None, user_ns: dict) -> str | None:
    """What ``solve PROBLEM`` is, as :meth:`SolveKind.prepare` tells it: ``"matrix"`` (a
    notebook matrix or a matrix file), ``"grid"`` (a notebook GridProblem) or None (a
    built-in problem)."""
    if problem is None or problem in PROBLEMS:
        return None
    if problem in user_ns:
        from skiff.kernels.solve import GridProblem

        return "grid" if isinstance(user_ns[problem], GridProblem) else "matrix"
    return "matrix" if _matrix_file(problem) else None


def to_config(values: dict, *, memory: bool = True) -> dict:
    """Validate parsed values (and a ``spec`` dict from :func:`parse_spec`) and return the
    ``solve`` kernel config. ``memory``: refuse a grid too big for this machine's device (a
    launch checks it instead in ``check_launch``, where it knows the ranks sharing it)."""
    spec = values.get("spec") or {}
    problem = values.get("problem") or ("custom" if spec else None)
    if problem is None:
        raise ValueError(f"solve needs a PROBLEM: one of {', '.join(PROBLEMS[:-1])}")
    if problem not in PROBLEMS:
        _refuse_file_like(problem)
        raise unknown_name("problem", problem, PROBLEMS[:-1],
                           " (or, in a notebook, a variable holding a matrix or GridProblem)")
    if problem == "custom" and not spec:
        raise ValueError("problem 'custom' needs a %%solve cell with its spec")
    check_options_apply(problem, values)
    if problem == "cylinder":
        return _cylinder_config(values)
    if problem == "train-nose":
        return nose_config(values)
    try:
        grid = solve_grid(spec.get("grid") or values.get("grid") or (256, 256))
    except argparse.ArgumentTypeError as exc:
        raise ValueError(f"--grid: {exc}") from None
    explicit = "method" in spec or values.get("method") is not None
    method = spec.get("method", values.get("method") or "cg")
    precond = spec.get("precond", values.get("precond", "auto"))
    k = _k()
    for name, value, valid in (("method", method, k.METHODS), ("precond", precond, k.PRECONDS)):
        if value not in valid:
            raise unknown_name(name, value, valid, "" if name == "method" else
                               " (or, with a notebook matrix, a notebook variable holding "
                               "your preconditioner)")
    ilut_options = ilut_options_of(values, precond)
    velocity = spec.get("velocity", values.get("velocity"))
    if problem == "convection" and velocity is None:
        velocity = "20,5" if len(grid) == 2 else "20,5,0"
    velocity = _velocity(velocity, len(grid))
    if velocity is not None and method in ("cg", "pipecg"):
        if explicit:   # it used to be replaced by bicgstab without a word
            raise ValueError(f"--method {method} needs a symmetric problem; convection makes "
                             f"it non-symmetric: use --method bicgstab or gmres (or leave "
                             f"--method out: bicgstab)")
        method = "bicgstab"   # the default method cannot solve a non-symmetric problem
    bc = spec.get("bc", values.get("bc", "dirichlet"))
    if velocity is not None and bc == "neumann":
        raise ValueError("convection with Neumann on every side (--bc neumann, "
                         "'boundaries: neumann') has no unique solution (u + c solves it too) "
                         "and, for its source, none at all: make a side Dirichlet")
    if velocity is not None and method in ("mg", "fmg"):
        # the cycles hold the diffusion only: they converged to the solution without
        # convection and the summary blamed round-off ("attainable accuracy", |r|/|b| = 2.7)
        raise ValueError(f"--method {method} runs geometric multigrid cycles, which hold the "
                         f"diffusion only, and convection is not in them: use --method "
                         f"bicgstab or gmres (with --precond mg or amg)")
    if method == "auto":  # a built-in grid: symmetric unless it convects
        method = "gmres" if velocity is not None else "cg"
    if not k.takes_precond(method, precond):
        raise ValueError(f"--method {method} takes no preconditioner (got --precond {precond}):"
                         f" a preconditioner goes with a Krylov method, e.g. --method cg "
                         f"--precond {precond}")
    save = values.get("save")
    if save and not str(save).lower().endswith((".npz", ".vtk")):
        raise ValueError(f"--save writes .npz or .vtk files, got {save!r}")
    _save_folder(save)
    opts = spec.get("options", {})
    for key in opts:  # a misspelt or foreign option (scipy's tol) must not be dropped silently
        if key not in SOLVER_OPTIONS:
            raise unknown_name("solver option", key, SOLVER_OPTIONS)
    config = {
        "problem": problem,
        "grid": list(grid),
        "method": method,
        "precond": precond,
        "cycle": opts.get("cycle", values.get("cycle", "V")),
        "smoother": opts.get("smoother", values.get("smoother", "rbgs")),
        "amg": opts.get("amg", values.get("amg") or "auto"),
        "amg_options": (parse_amg_options(values["amg_options"])
                        if values.get("amg_options") else None),
        "pre": opts.get("pre", values.get("pre", 2)),
        "post": opts.get("post", values.get("post", 2)),
        "rtol": opts.get("rtol", values.get("rtol", 1e-8)),
        "atol": opts.get("atol", values.get("atol", 0.0)),
        "maxiter": opts.get("maxiter", values.get("maxiter")),
        "restart": opts.get("restart", values.get("restart", 30)),
        **({"overlap": int(values["overlap"])} if values.get("overlap") else {}),
        **({"reorder": values["reorder"]} if values.get("reorder") and not ilut_options
           else {}),
        **({"ilut_options": ilut_options} if ilut_options else {}),
        **({"coarse": values["coarse"]} if values.get("coarse") else {}),
        **({"schwarz": values["schwarz"]} if values.get("schwarz") else {}),
        "stop": values.get("stop") or "residual",
        "bc": spec.get("bc", values.get("bc", "dirichlet")),
        "contrast": float(values.get("contrast", 1000.0)),
        "velocity": velocity,
        "compatibility": opts.get("compatibility", values.get("compatibility")),
        "device": values.get("device", DEFAULT_DEVICE),
        "save": save,
        **({"x0": _x0_file(values["x0"])} if values.get("x0") else {}),
        **amg_keywords_config(values),
        "k": spec.get("k"),
        "source": spec.get("source"),
        "sdf": spec.get("sdf"),
        "body_bc": spec.get("body_bc"),
        "extent": spec.get("extent"),
    }
    if config["cycle"] not in _k().CYCLES:
        raise unknown_name("cycle", config["cycle"], _k().CYCLES)
    if config["smoother"] not in _k().SMOOTHERS + _k().AMG_SMOOTHERS:
        raise unknown_name("smoother", config["smoother"], _k().SMOOTHERS + _k().AMG_SMOOTHERS)
    if config["amg"] not in AMG_KINDS:
        raise unknown_name("amg", config["amg"], AMG_KINDS)
    for key, kind in (("rtol", float), ("atol", float), ("maxiter", int), ("pre", int),
                      ("post", int), ("restart", int)):
        config[key] = _spec_number(key, config[key], kind)
    # 0 is SciPy's "no iteration" (x0 back, as the one-rank Solver.solve takes it)
    _k().check_tolerances(config["rtol"], config["atol"], config["maxiter"], least=0)
    if config["stop"] not in ("residual", "scipy"):
        raise unknown_name("stop", config["stop"], ("residual", "scipy"))
    if config["stop"] == "scipy" and config["method"] not in (
            "minres", "cg", "pipecg", "bicgstab", "auto", None):
        raise ValueError(f"--stop scipy is MINRES's option (SciPy's minres stops on its own "
                         f"test) and the method is {config['method']!r}: --method minres")
    if config["restart"] < 1 or config["pre"] < 1 or config["post"] < 1:
        bad = next(k for k in ("restart", "pre", "post") if config[k] < 1)
        raise ValueError(f"{bad} must be a positive integer, got {config[bad]!r}")
    if problem == "custom":
        _check_axes(config)
        _sample_spec(config)
    if memory:
        _check_memory(config)
    return config


ILUT_FLAGS = ("drop_tol", "fill_factor")


def ilut_options_of(values: dict, precond) -> dict | None:
    """``--drop-tol`` / ``--fill-factor`` / ``--reorder`` with ``--precond ilut`` (round 44
    h26): the dict ``precond=('ilut', {...})`` takes (SciPy's spilu names), None when none was
    given. ILUT's flags with another preconditioner are refused in one line, before any job
    (they would be read by nothing)."""
    given = [k for k in ILUT_FLAGS if values.get(k) is not None]
    if not (isinstance(precond, str) and precond == "ilut"):  # a notebook M: any object
        if given:
            flags = " and ".join(_flag(k) for k in given)
            shown = precond if isinstance(precond, str) else "your own M"
            raise ValueError(f"{flags} {'is' if len(given) == 1 else 'are'} ILUT's (SciPy's "
                             f"spilu {', '.join(given)}), and the preconditioner is "
                             f"{shown!r}: add --precond ilut, or drop {flags}")
        return None
    options = {k: float(values[k]) for k in given}
    if values.get("reorder"):
        options["reorder"] = None if values["reorder"] == "none" else "rcm"
    if options:
        from skiff.kernels.solve.ilut import DROP_TOL, FILL_FACTOR, check_options

        try:
            check_options(options.get("drop_tol", DROP_TOL),
                          options.get("fill_factor", FILL_FACTOR))
        except ValueError as exc:
            raise ValueError(f"--precond ilut: {exc}") from None
    return options or None


def ilut_options_text(options: dict | None) -> str:
    """``drop_tol 1e-06, fill_factor 10, A's order``: ILUT's options as the summary shows."""
    from skiff.kernels.solve.ilut import DROP_TOL, FILL_FACTOR

    options = options or {}
    order = "A's order" if "reorder" in options and options["reorder"] is None else "RCM order"
    return (f"drop_tol {figure(options.get('drop_tol', DROP_TOL))}, fill_factor "
            f"{figure(options.get('fill_factor', FILL_FACTOR))}, {order}")


def _check_axes(config: dict) -> None:
    """Refuse ``z`` in an expression of a 2-D domain: it was 0 there, so ``source: z``
    solved a zero source to u = 0 and called it converged."""
    if len(config["grid"]) != 2:
        return
    named = [("coefficient", config.get("k")), ("source", config.get("source")),
             ("body", config.get("sdf")),
             ("body value", (config.get("body_bc") or [None, None])[1])]
    if isinstance(config.get("bc"), dict):
        named += [(f"boundary {side}", value) for side, (_, value) in config["bc"].items()]
    for what, text in named:
        if isinstance(text, str) and any(isinstance(n, ast.Name) and n.id == "z"
                                         for n in ast.walk(ast.parse(text, mode="eval"))):
            raise ValueError(f"%%solve {what}: {text!r} uses z, and the domain "
                             f"{'x'.join(map(str, config['grid']))} is 2-D (x, y); give a "
                             f"third size for a 3-D domain")


def _sample_spec(config: dict) -> None:
    """Build the spec's problem on a 16-cell-per-axis grid before any job exists, so that a
    negative coefficient, a source that is not finite or an expression numpy cannot evaluate
    is said at once in one line, not in a failed job's traceback (the full grid checks again)."""
    from skiff.kernels.solve.entry import build_problem

    small = {**config, "grid": [16] * len(config["grid"])}
    try:
        build_problem(small)
    except ValueError as exc:
        # a side a 2-D grid has not (z-), a negative or extra extent, convection around a body
        # or with no Dirichlet side: they went on to the job and failed in its run folder
        raise ValueError(f"%%solve: {exc}") from None
    except (ArithmeticError, TypeError, NameError) as exc:
        raise ValueError(f"%%solve: an expression cannot be evaluated on the grid: "
                         f"{type(exc).__name__}: {exc}") from None


def _spec_number(key: str, value, kind):
    """A number of the options (``solver: cg mg rtol=1e-8 maxiter=200`` or the line) as
    ``kind``; text that is not one is refused with the key and the value."""
    if value is None or (isinstance(value, kind) and not isinstance(value, bool)):
        return value
    try:
        number = float(value) if kind is float else int(str(value).strip())
    except (TypeError, ValueError):
        what = "a number" if kind is float else "an integer"
        raise ValueError(f"{key} must be {what}, got {value!r}") from None
    return number


def _check_memory(config: dict) -> None:
    """Refuse a grid that cannot fit in the memory of the device the solve would run on,
    before a run folder or a job exists."""
    from skiff.kernels.backend.devices import DEFAULT_DEVICE, DeviceError, resolve_device

    if not config.get("grid"):
        return
    try:
        device = resolve_device(config.get("device") or DEFAULT_DEVICE)
    except DeviceError:
        return  # the grammar (or the launch) names the device problem
    variable = config.get("problem") in ("diffusion", "jump") or config.get("k") is not None
    _k().check_fits(config["grid"], device.free_memory, device.name,
               method=config.get("method", "cg"), precond=config.get("precond", "auto"),
               restart=config.get("restart", 30), variable=variable)

def _check_rank_memory(config: dict, split: dict) -> None:
    """Refuse a split whose one rank cannot fit the memory of one device of this machine's
    kind (a certain refusal: a rank never has more than one device)."""
    from skiff.kernels.backend.devices import DeviceError, resolve_device
    from skiff.kernels.solve.estimate import format_bytes

    spec = str(config.get("device") or DEFAULT_DEVICE)
    try:
        device = resolve_device("cuda:0" if spec.startswith("cuda") else spec)
    except DeviceError:
        return   # a GPU elsewhere (a cluster launch): its memory is not known here
    need = split["bytes_per_rank"]
    if device.free_memory and need > device.free_memory:
        raise ValueError(f"--np {split['ranks']}: each rank needs at least "
                         f"{format_bytes(need)} on {device.name}, which has "
                         f"{format_bytes(device.free_memory)} available: use more ranks or a "
                         "smaller --grid")


FLOW_SAVES = (".vtu", ".vtk", ".npz", ".csv", ".json")


def _flow_save(values: dict, no_history: str | None = None) -> str | None:
    """A flow's ``--save``: .vtu / .vtk (ParaView), .npz, .csv (the surface's cp),
    .history.csv (the coefficients in time), .json (the numbers); the absolute path, as the
    job runs elsewhere. ``no_history``: why a run known to be steady has no history CSV
    (round 47: refused after the solve, the job failed and its result was lost)."""
    save = values.get("save")
    if not save:
        return None
    if not str(save).lower().endswith(FLOW_SAVES):
        raise ValueError(f"--save writes .vtu or .vtk (ParaView), .npz, .csv (the surface's "
                         f"cp), .history.csv (the coefficients in time) or .json (the "
                         f"numbers) for a flow, got {save!r}")
    if no_history and str(save).lower().endswith(".history.csv"):
        raise ValueError(f"--save {save}: {no_history}")
    _save_folder(save)
    return os.path.abspath(os.path.expanduser(str(save)))


def _warm_start_line(job) -> str | None:
    """``to go on from its last iterate: COMMAND --x0 RUN/partial.npz`` for a stopped solve
    that kept one (the command it was started with, any --x0 of it replaced); None else."""
    try:
        path = Path(job.run_dir) / "partial.npz"
        if getattr(job, "status", None) not in ("cancelled", "failed") or not path.is_file():
            return None
        command = str((getattr(job, "meta", None) or {}).get("command") or "")
        words = shlex.split(command)
        if len(words) < 2 or "<notebook" in str((job.config or {}).get("problem", "")):
            return f"its last iterate: {path} (x0= of skiff.solve, or --x0 {path})"
        kept, skip = [], False
        for word in words:
            if skip:
                skip = False
                continue
            if word == "--x0":
                skip = True
                continue
            if not word.startswith("--x0="):
                kept.append(word)
        return (f"to go on from its last iterate: {shlex.join(kept)} --x0 "
                f"{shlex.quote(str(path))}")
    except Exception:  # noqa: BLE001 - a hint is not worth an error in a summary
        return None


def _resume_unconverged(job, config: dict, again: str) -> dict:
    """``jobs resume`` of a solve that ran to its end without converging (its ``maxiter``,
    a stagnation) goes on from its last iterate (``RUN/partial.npz``, kept since round 38)
    or its ``--save FILE.npz``, as ``--x0`` would, for as many iterations again; one that
    kept nothing (a job of an older skiff) says how to go on (it said "nothing to resume",
    and its command ran into the same limit again)."""
    result = getattr(job, "result", None) or {}
    if result.get("converged", True) is not False or result.get("columns") is not None:
        raise ValueError(f"job {job.id} ended done: nothing to resume{again}")
    kept = Path(job.run_dir) / "partial.npz"   # its last iterate (round 38)
    if kept.is_file():
        return {**config, "x0": str(kept)}
    save = config.get("save")
    if save and str(save).lower().endswith(".npz"):
        meta = getattr(job, "meta", None) or {}
        saved = Path(meta.get("cwd") or ".", os.path.expanduser(str(save)))
        if saved.is_file():
            return {**config, "x0": str(saved.resolve())}
    raise ValueError(f"job {job.id} ended without converging ({result.get('status', '?')}) "
                     f"and kept no iterate to go on from: solve it again with a higher "
                     f"--maxiter, or with --save FILE.npz (then jobs resume goes on from "
                     f"it){again}")


def _x0_file(x0) -> str:
    """``--x0 PATH``: a file there, of a kind the warm start reads (.npz: a stopped run's
    ``partial.npz`` or a ``--save``d solution; .npy), made absolute (the job may run
    elsewhere); its size is checked by the solve against the unknowns."""
    path = os.path.abspath(os.path.expanduser(str(x0)))
    if not str(x0).lower().endswith((".npz", ".npy")):
        raise ValueError(f"--x0 reads a .npz (a stopped solve's RUN/partial.npz, a --save'd "
                         f"solution) or a .npy array, got {x0!r}")
    if not os.path.isfile(path):
        raise missing_file(str(x0), "--x0 file", ": ")
    return path


def _save_folder(save) -> None:
    """``--save PATH``: the folders of PATH that are not there are made when the job starts
    (:meth:`SolveKind.output_folders`, as ``ocr --out`` and ``train --checkpoint-dir``
    make theirs); refused before the job when the nearest one that is there is a file or
    not writable (the job solved, then failed on the write and kept no solution)."""
    if not save:
        return
    folder = os.path.dirname(os.path.abspath(os.path.expanduser(str(save))))
    there = folder
    while not os.path.exists(there) and os.path.dirname(there) != there:
        there = os.path.dirname(there)
    if not os.path.isdir(there):
        raise ValueError(f"--save {save}: {there} is a file, not a folder (save it "
                         f"elsewhere, e.g. --save {os.path.basename(str(save))})")
    if not os.access(there, os.W_OK | os.X_OK):
        raise ValueError(f"--save {save}: cannot write in {there} (not writable by you): "
                         f"save it elsewhere")


def _check_matrix_save(values: dict) -> None:
    """A matrix's solution is a vector, not a grid field: ``--save x.vtk`` solved, then the
    job failed on "VTK export needs a 2D or 3D grid field" and kept no solution."""
    save = values.get("save")
    if save and str(save).lower().endswith(".vtk"):
        raise ValueError(f"--save {save}: .vtk writes a grid field, and a matrix's solution "
                         f"is a vector of unknowns: --save {os.path.splitext(str(save))[0]}.npz")


def parse_channel(text) -> dict:
    """``--channel height=H[,length=L][,centre=X:Y]`` (round 46 h6: the Python API and a
    job's config took a channel, the magic / CLI did not) as the flow's dict, checked by
    :func:`~skiff.kernels.solve.flow.dfg.check_channel` (one line for a bad one)."""
    if isinstance(text, dict):
        out = dict(text)
    else:
        out = {}
        for part in str(text).replace(" ", "").split(","):
            key, eq, value = part.partition("=")
            key = {"center": "centre", "h": "height", "l": "length"}.get(key.lower(),
                                                                         key.lower())
            if not eq or key not in ("height", "length", "centre"):
                raise ValueError(f"--channel {text}: give height=H[,length=L][,centre=X:Y] "
                                 f"in metres (DFG's: height=0.41,length=2.2,centre=0.2:0.2)")
            if key in out:
                raise ValueError(f"--channel {text}: {key} given twice")
            out[key] = value.split(":") if key == "centre" else value
    from skiff.kernels.solve.flow.dfg import check_channel

    try:
        ch = check_channel(out)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"--channel {text}: {exc}") from None
    return {"length": ch.length, "height": ch.height, "centre": list(ch.centre)}


def _cylinder_config(values: dict) -> dict:
    """The config of ``%solve cylinder`` (the DFG benchmark through the flow kernel)."""
    case = values.get("case") or "2d-1"
    if case not in _k().FLOW_CASES:
        raise ValueError(f"unknown case {case!r}: choose from {', '.join(_k().FLOW_CASES)}")
    channel = values.get("channel")
    channel = None if channel in (None, "") else parse_channel(channel)
    resolution = values.get("resolution")
    if resolution is not None and int(resolution) < _k().FLOW_MIN_RESOLUTION:
        raise ValueError(f"--resolution {resolution!r} is too coarse to hold the cylinder: "
                         f"give at least {_k().FLOW_MIN_RESOLUTION} edges around it")
    re_ = values.get("re")
    # inf passed `> 0` and failed in the run, after the run folder was made
    if re_ is not None and not (math.isfinite(float(re_)) and float(re_) > 0):
        raise ValueError(f"--re (Reynolds number) must be > 0, got {re_!r}")
    if re_ is not None and float(re_) > CYLINDER_MAX_RE:
        # 1e9 failed inside the run, after the run folder, suggesting "--case 2d-2 --re 1e+09"
        raise ValueError(f"--re {float(re_):g} is beyond what this laminar 2D solve holds for "
                         f"the cylinder (at most {CYLINDER_MAX_RE:g}; the flow behind it is "
                         f"three-dimensional from Re ~190 and turbulent long before 1e4)")
    for name in ("dt", "t_end"):
        v = values.get(name)
        if v is not None and not (math.isfinite(float(v)) and float(v) > 0):
            raise ValueError(f"{_flag(name)} must be > 0, got {v!r}")
        if v is not None and _k().FLOW_CASES[case].kind == "steady":
            raise ValueError(f"case {case} is steady (Newton, no time steps): {_flag(name)} is "
                             "for the unsteady cases 2d-2 and 2d-3")
    if _k().FLOW_CASES[case].kind != "steady":
        # a step longer than the run made no step at all (IndexError in the run)
        _k().check_steps(_k().FLOW_CASES[case], values.get("dt"), values.get("t_end"))
    # the steady cases' Newton solves are sparse direct (CPU only); the unsteady cases' linear
    # solves run where --device says ("auto" stays on the CPU: assembly is there anyway)
    device = values.get("device") or DEFAULT_DEVICE
    device = "cpu" if device == DEFAULT_DEVICE else device
    if device != "cpu" and _k().FLOW_CASES[case].kind == "steady":
        raise ValueError(f"case {case} is steady: its Newton solves are sparse direct, on the "
                         f"CPU only; drop --device {device} (2d-2 and 2d-3 run their linear "
                         "solves on a GPU)")
    resume_from = _cylinder_kept_state(values, case, channel)
    return {"problem": "cylinder", "case": case,
            **({"resume_from": resume_from} if resume_from else {}),
            "resolution": None if resolution is None else int(resolution),
            "re": None if re_ is None else float(re_),
            "dt": values.get("dt"), "t_end": values.get("t_end"), "device": device,
            **({"channel": channel} if channel is not None else {}),
            **({"save": _flow_save(values, no_history=(
                f"case {case} is steady: no time history (its coefficients are single "
                f"numbers); the history CSV is for the unsteady cases 2d-2 and 2d-3"
                if _k().FLOW_CASES[case].kind == "steady" else None))}
               if values.get("save") else {})}


def _cylinder_kept_state(values: dict, case: str, channel) -> str | None:
    """``cylinder --x0 RUN/flow-state.npz``: a stopped unsteady run's kept state, which the
    run goes on from (``jobs resume ID --t-end 10`` runs that line, round 48 h7); refused
    before the job, naming the option, where it is the state of another case, grid, Re, dt
    or channel, or of a time past ``--t-end``."""
    if not values.get("x0"):
        return None
    if _k().FLOW_CASES[case].kind == "steady":
        raise ValueError(f"--x0 of a cylinder is a stopped 2d-2 / 2d-3 run's "
                         f"RUN/flow-state.npz; case {case} is steady (Newton): drop --x0")
    from skiff.kernels.solve.flow.dfg import resume_mismatch

    path = _x0_file(values["x0"])
    why = resume_mismatch(path, case=case, resolution=values.get("resolution"),
                          re=values.get("re"), dt=values.get("dt"),
                          t_end=values.get("t_end"), channel=channel)
    if why is not None:
        raise ValueError(why)
    return path


def nose_config(values: dict) -> dict:
    """The config of ``%solve train-nose`` (each bad value: one line naming it)."""
    from skiff.kernels.solve.flow.adapt import min_resolution
    from skiff.kernels.solve.flow.nose import NoseShape, check_re
    from skiff.kernels.solve.flow.nose_job import _march_times

    profile = values.get("profile")
    if profile:
        shape, profile = _nose_profile(values, profile)
    else:
        shape = NoseShape(values.get("length", 3.0), values.get("bluntness", 0.4),
                          values.get("clearance", 0.15))
    re_ = values.get("re")
    re_ = 1000.0 if re_ is None else check_re(re_)
    # the learned grid knows the parametric noses only: a profile is graded unless told
    adapt = values.get("adapt") or "learned"
    if profile and not was_given(values, "adapt", "learned"):
        adapt = "graded"
    if adapt not in _k().NOSE_ADAPT:
        raise unknown_name("adapt", adapt, _k().NOSE_ADAPT)
    if profile and adapt == "learned":
        raise ValueError("--adapt learned knows the parametric noses only (--length, "
                         "--bluntness): give a --profile with --adapt graded (the default "
                         "for a profile) or estimator")
    resolution = values.get("resolution")
    if resolution is not None:
        need = min_resolution(shape, adapt)
        if adapt in ("uniform", "graded") and int(resolution) < need:
            raise ValueError(f"--resolution {resolution!r} is too coarse to hold the body: "
                             f"the gap under the floor (clearance {shape.clearance:g}) needs "
                             f"at least {need:.0f} cells per train height")
    flow = values.get("flow") or "auto"
    if values.get("device", DEFAULT_DEVICE) not in (DEFAULT_DEVICE, "cpu"):
        raise ValueError(f"problem 'train-nose' runs on the CPU, got --device "
                         f"{values.get('device')!r}")
    config = {"problem": "train-nose", **shape.to_dict(), "re": re_, "adapt": adapt,
              "resolution": None if resolution is None else int(resolution), "flow": flow,
              "device": "cpu"}
    # the time-marching window (the job's defaults when not given: a config as before),
    # checked before any job exists
    config.update({k: v for k, v in _march_times(values.get("t_end"), values.get("dt")).items()
                   if v is not None})
    if profile:
        config["profile"] = profile  # the CSV's absolute path: the job runs elsewhere
    if values.get("save"):
        config["save"] = _flow_save(values, no_history=(
            "--flow steady has no time history: the history CSV is for a time-averaged "
            "solve (--flow unsteady)" if flow == "steady" else None))
    return config


def _nose_profile(values: dict, name: str):
    """``--profile CSV``: the outline read and checked before any job (a missing file, a
    self-crossing or open outline: one line each); its absolute path for the job."""
    from skiff.kernels.solve.flow.profile import NoseProfile

    path = os.path.expanduser(str(name))
    if not os.path.isfile(path):
        raise missing_file(name, "profile file", ": ")
    for option in ("length", "bluntness"):
        if was_given(values, option, {"length": 3.0, "bluntness": 0.4}[option]):
            raise ValueError(f"--{option} describes the parametric nose; a --profile is its "
                             f"own outline: give one of them")
    return NoseProfile.from_csv(path, values.get("clearance", 0.15)), os.path.abspath(path)


def _parse_bcs(text: str) -> str | dict:
    text = text.strip()
    if text in _k().BC_KINDS:
        return text
    out = {}
    for part in re.split(r"[;,]\s*(?=[a-z+-]+\s*=)", text):
        if not part.strip():
            continue
        side, _, rest = part.partition("=")
        side, words = side.strip(), rest.split()
        if side in ("x", "y", "z"):   # 'x=periodic': both sides of the axis
            if words[:1] != ["periodic"]:
                raise ValueError(f"boundaries: an axis ({side}=) takes 'periodic'; name its "
                                 f"sides for other kinds ({side}-=..., {side}+=...)")
            out[f"{side}-"] = out[f"{side}+"] = ["periodic", "0"]
            continue
        if side not in _k().SIDES:
            raise ValueError(f"boundaries: {unknown_name('side', side, _k().SIDES)}")
        if not words or words[0] not in _k().BC_KINDS:
            raise ValueError(f"boundaries: side {side} needs one of {', '.join(_k().BC_KINDS)}, "
                             f"got {rest.strip()!r}")
        value = " ".join(words[1:]) or "0"
        out[side] = [words[0], check_expression(value, f"boundary {side}")]
    return out


def parse_spec(cell: str) -> dict:
    """Read a ``%%solve`` cell (``key: value`` lines, ``#`` comments) into spec fields."""
    spec: dict = {}
    seen: dict = {}
    for lineno, raw in enumerate(cell.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        key, sep, value = line.partition(":")
        key, value = key.strip().lower(), value.strip()
        if not sep or key not in SPEC_KEYS:
            raise ValueError(f"%%solve line {lineno}: expected 'key: value' with key one of "
                             f"{', '.join(SPEC_KEYS)}, got {raw.strip()!r}")
        if key in seen:   # the second silently replaced the first
            raise ValueError(f"%%solve line {lineno}: '{key}' is given twice (line "
                             f"{seen[key]} and line {lineno}); keep one")
        seen[key] = lineno
        if key == "domain":
            words = value.split()
            try:
                spec["grid"] = list(solve_grid(words[0]))
            except Exception as exc:
                raise ValueError(f"%%solve domain: {exc}") from None
            if len(words) == 3 and words[1] == "extent":
                try:
                    extent = [float(v) for v in re.split(r"[x×,]", words[2])]
                except ValueError:
                    extent = None
                if (extent is None or len(extent) != len(spec["grid"]) or
                        not all(math.isfinite(e) and e > 0 for e in extent)):
                    raise ValueError(f"%%solve domain: the extent is one positive length per "
                                     f"axis ({len(spec['grid'])}), like 'extent 2x1', got "
                                     f"{words[2]!r}")
                spec["extent"] = extent
            elif len(words) > 1:   # 'domain: 32x32 foo 3' was read as 32x32
                raise ValueError(f"%%solve domain: expected 'NxN' or 'NxN extent LxL', got "
                                 f"{value!r}")
        elif key == "coefficient":
            spec["k"] = check_expression(value, "coefficient")
        elif key == "source":
            spec["source"] = check_expression(value, "source")
        elif key == "body":
            expr, _, cond = value.partition(";")
            spec["sdf"] = check_expression(expr.strip(), "body")
            words = cond.split()
            if words:
                if words[0] not in ("neumann", "dirichlet"):
                    raise ValueError(f"%%solve body: the condition after ';' is 'neumann' or "
                                     f"'dirichlet VALUE', got {cond.strip()!r}")
                val = " ".join(words[1:]) or "0"
                spec["body_bc"] = [words[0], check_expression(val, "body value")]
        elif key == "boundaries":
            spec["bc"] = _parse_bcs(value)
        elif key == "velocity":
            spec["velocity"] = value
        elif key == "solver":
            words = value.split()
            opts = {}
            positional = []
            for w in words:
                if "=" in w:
                    k, _, v = w.partition("=")
                    opts[k.strip()] = v.strip()
                else:
                    positional.append(w)
            if positional:
                spec["method"] = positional[0]
            if len(positional) > 1:
                spec["precond"] = positional[1]
            spec["options"] = opts
    if "grid" not in spec:
        raise ValueError("%%solve needs a 'domain: NxN' line")
    return spec


# notebook objects -----------------------------------------------------------------------------
def is_system(obj) -> bool:
    """A system a notebook can hand to ``%solve``: a GridProblem, or a square matrix of size
    > 1 (scipy/cupyx sparse, a dense 2-D array, a LinearOperator)."""
    from skiff.kernels.solve import GridProblem

    if isinstance(obj, GridProblem):
        return True
    shape = getattr(obj, "shape", None)
    if isinstance(obj, type) or shape is None or len(shape) != 2:
        return False
    operator = hasattr(obj, "tocsr") or hasattr(obj, "__matmul__") or hasattr(obj, "matvec")
    return operator and shape[0] == shape[1] and shape[0] > 1


def _safe_is_system(obj) -> bool:
    try:
        return is_system(obj)
    except Exception:   # an object whose attributes raise: not a system
        return False


class SolveKind(Kind):
    name = "solve"
    command = COMMAND
    entry = "skiff.kernels.solve.entry:run"

    def to_config(self, values: dict) -> dict:
        return to_config(values)

    def output_folders(self, config: dict) -> list[str]:
        save = config.get("save")
        if not save or not isinstance(save, str):
            return []
        return [os.path.dirname(os.path.abspath(os.path.expanduser(save)))]

    def typed_refusals(self, values: dict, names: list[str], *, cell: str | None = None,
                       user_ns: dict | None = None) -> set[str] | None:
        """Of ``names``, those the job ``values`` describe refuses typed, by the rule
        :func:`check_options_apply` raises from (no prepare per option: a matrix file was
        read again by each). A ``%%solve`` cell: None (its spec is the problem; asked
        through :meth:`prepare`)."""
        if cell is not None:
            return None
        problem = values.get("problem")
        system = _system_of(problem, dict(user_ns or {}))
        refused = {name for name in names if name in _CHECKED
                   and _option_refusal(problem, name, system) is not None}
        if "restart" in names and "restart" not in refused and problem not in _FLOW:
            # the method the job would use: --restart is GMRES's (check_restart); a user's
            # matrix or GridProblem: the method named, else the solver's choice
            method = values.get("method")
            if system is None and problem in PROBLEMS:
                try:
                    method = to_config(dict(values), memory=False)["method"]
                except (ValueError, KeyError, TypeError):
                    pass
            if method not in (None, "auto", "gmres"):
                refused.add("restart")
        if system == "grid" or (system is None and problem in PROBLEMS
                                and problem not in _FLOW):
            method, precond = values.get("method"), values.get("precond", "auto")
            if system is None:
                try:
                    config = to_config(dict(values), memory=False)
                    method, precond = config["method"], config["precond"]
                except (ValueError, KeyError, TypeError):
                    pass
            if _mg_unused(method, precond):   # typed, each would be refused
                refused |= {n for n in _MG_OPTIONS if n in names and not (
                    n == "smoother" and values.get("smoother") in _k().AMG_SMOOTHERS)}
        return refused

    def check_launch(self, config: dict, *, ranks: int) -> str | None:
        """One rank: the grid must fit this machine's device. Several ranks: refuse what a
        distributed solve cannot do, split the grid and check that one rank's share fits the
        memory of one device. Records the split in
        ``config["decomposition"]`` and returns it in a line for the job's log."""
        if ranks <= 1:
            if (config.get("overlap") or config.get("reorder") or config.get("coarse")
                    or config.get("schwarz")):
                check_row_split_options(config, "a matrix on one rank")
            if config.get("problem") in PROBLEMS and config["problem"] != "cylinder":
                _check_memory(config)   # the whole grid on one device
            return None
        problem = str(config.get("problem", ""))
        split = problem not in PROBLEMS and _matrix_file(problem)
        one_rank = [k for k in AMG_KEYWORDS if config.get(k) is not None
                    and not (split and k == "near_nullspace")]   # round 46 (h6): the row
        # split's coarse AMG takes the near null space (elasticity over 32 ranks 17 -> 9)
        if one_rank:   # the distributed solver reads none of them
            flags = ", ".join(_flag(k) for k in one_rank)
            raise ValueError(f"--np {ranks}: {flags} {'is' if len(one_rank) == 1 else 'are'} "
                             f"read by the one-rank solver only: drop --np, or drop {flags}")
        if problem not in PROBLEMS and _matrix_file(problem):   # split by rows (round 39)
            return _check_row_launch(config, ranks)
        if config.get("maxiter") == 0:   # the distributed solver iterates at least once
            raise ValueError(f"--np {ranks}: --maxiter 0 (x0 back, no iteration) is the "
                             f"one-rank solver's; drop --np, or give --maxiter 1 or more")
        if config.get("stop", "residual") != "residual":
            raise ValueError(f"--np {ranks}: --stop {config['stop']} runs on one rank (the "
                             f"distributed MINRES stops on the true residual); drop --np")
        from skiff.kernels.solve.parallel import check_distributed, plan

        check_distributed(method=config.get("method", "cg"),
                          precond=config.get("precond", "auto"),
                          smoother=config.get("smoother", "rbgs"),
                          convection=config.get("velocity") is not None,
                          problem=config.get("problem"),
                          periodic=config.get("bc") == "periodic" or (
                              isinstance(config.get("bc"), dict) and
                              any(v[0] == "periodic" for v in config["bc"].values())))
        variable = config["problem"] in ("diffusion", "jump", "body") or \
            config.get("k") is not None or config.get("sdf") is not None
        try:
            whole = config["problem"] != "poisson" or not isinstance(config.get("bc"), str)
            split = plan(config["grid"], ranks, method=config["method"],
                         precond=config["precond"], restart=config.get("restart", 30),
                         variable=variable, whole=whole)
        except ValueError as exc:
            raise ValueError(f"--np {ranks}: {exc}") from None
        _check_rank_memory(config, split)
        config["decomposition"] = {k: split[k] for k in (
            "ranks", "dims", "subdomains", "bytes_per_rank", "halo_bytes_per_exchange",
            "host_bytes_per_rank")}
        return f"decomposition: {split['text']}"

    def failures(self, job) -> list[str]:
        """A solve that ended without converging (``maxiter``, stagnation, no solution): the
        terminal prints its summary and exits 1, since a script must not take the answer
        for a solution. (A flow problem's result has no ``converged``.)"""
        result = job.result or {}
        if result.get("converged", True):
            return []
        name = result.get("problem", "solve")
        return [f"{name}: not converged: {result.get('status', '?')}"]

    def summary(self, result: dict) -> list[str]:
        if result.get("problem") == "train-nose":
            mean = " (time-averaged)" if result.get("mode") == "unsteady" else ""
            # a user's own outline (--profile) has a name and no bluntness
            what = (f"profile {result['profile']!r}, length {figure(result.get('length'))}"
                    if result.get("profile") or result.get("bluntness") is None else
                    f"length {figure(result.get('length'))}, bluntness "
                    f"{figure(result.get('bluntness'))}")
            return [f"train nose {what}, clearance "
                    f"{figure(result.get('clearance'))}, Re {figure(result.get('re'))}",
                    f"cd {figure(result.get('cd'))}, cl {figure(result.get('cl'))}{mean}",
                    f"{result.get('cells')} cells ({result.get('adapt')} grid), "
                    f"{figure(result.get('seconds', 0.0))} s"]
        if "case" in result and "bands" in result:
            return _cylinder_summary(result)
        if result.get("stopped") is not None and "newton_steps" in result:  # a steady flow's
            steps, updates = result.get("newton_steps"), result.get("updates") or [None]
            at = f" at Re {figure(result['re_stage'])}" if result.get("re_stage") else ""
            return [f"steady flow{at}: {result['stopped']} after {figure(steps)} Newton "
                    f"step{'' if steps == 1 else 's'}, last update "
                    f"{figure(updates[-1])} (its state kept in partial.npz)"]
        if result.get("stopped") is not None and isinstance(result.get("columns"), int):
            return [_stopped_columns_line(result)]   # several right-hand sides (round 35)
        if result.get("stopped") is not None:   # a cancelled solve's partial (round 34)
            its = result.get("iterations")
            return [f"{result.get('method', '?')} + {result.get('precond', '?')}, "
                    f"{figure(result.get('unknowns'))} unknowns: {result['stopped']} after "
                    f"{figure(its)} iteration{'' if its == 1 else 's'}, |r|/|b| = "
                    f"{figure(result.get('residual'))}"]
        shape = "x".join(map(str, result.get("shape") or []))
        cols = result.get("columns")
        if isinstance(cols, int) and len(result.get("shape") or []) == 2:  # B of k columns
            shape = f"({result['shape'][0]} unknowns, {cols} right-hand sides)"
        lines = [f"{result.get('problem', '?')} {shape}: {result.get('method', '?')} + "
                 f"{result.get('precond', '?')} on {result.get('device', '?')}"]
        if result.get("switched"):   # round 46 (h6): "direct + none ... converged in 31
            # iterations" said nothing of auto's GMRES that stalled first
            lines.append(f"auto switched: {result['switched']}")
        its, rel = result.get("iterations"), result.get("relative_residual")
        if result.get("converged"):
            lines.append(f"converged in {figure(its)} iteration{'' if its == 1 else 's'}, "
                         f"|r|/|b| = {figure(rel)}")
        else:
            lines.append(f"not converged: {result.get('status', '?')}")
        times = f"solve {figure(result.get('time_s', 0.0))} s"
        if result.get("setup_time_s") is not None:
            times += f", setup {figure(result['setup_time_s'])} s"
        lines.append(times)
        if result.get("error") is not None:
            lines.append(f"max error against the exact solution {figure(result['error'])}")
        if result.get("ranks", 1) > 1 and result.get("split") == "rows":   # a matrix file's
            ran = f": {result['ran']};" if result.get("ran") else ","   # round 42 (h14): the
            # block solve, the coarse level across the ranks and the overlap that ran
            lines.append(f"on {result['ranks']} ranks by rows{ran} halo exchanges "
                         f"{figure(result.get('halo_bytes', 0) / 1e6)} MB in all")
        elif result.get("ranks", 1) > 1:
            dims = "x".join(map(str, result.get("decomposition") or []))
            lines.append(f"on {result['ranks']} ranks ({dims} blocks), halo exchanges "
                         f"{figure(result.get('halo_bytes', 0) / 1e6)} MB in all")
        return lines

    def resume_config(self, job) -> dict:
        """``jobs resume ID``: a solve stopped mid-way (cancelled, SIGTERM, its launcher gone)
        that kept its last iterate (``RUN/partial.npz``) goes on from it: the same config with
        ``x0`` that file, as ``--x0 RUN/partial.npz`` would (round 34)."""
        path = Path(job.run_dir) / "partial.npz"
        config = {k: v for k, v in dict(job.config or {}).items() if k != "x0"}
        problem = str(config.get("problem", ""))
        command = str((getattr(job, "meta", None) or {}).get("command") or "")
        again = f"; to solve it again: {command}" if command else ""
        if "<notebook" in problem:
            raise ValueError(f"job {job.id} solved a notebook's matrix, which it did not keep: "
                             f"solve it again in the notebook" + (
                                 f" with x0= its last iterate ({path})" if path.is_file()
                                 else ""))
        kept = Path(job.run_dir) / "flow-state.npz"  # round 47 h21: an unsteady cylinder
        # run's state (velocity, pressure, BDF2's step before, the coefficients so far); a
        # nose's time march keeps one too (round 48 h7)
        if problem in ("cylinder", "train-nose") and job.status != "done" and kept.is_file():
            return {**{k: v for k, v in config.items() if k != "resume_from"},
                    "resume_from": str(kept)}
        if problem in ("cylinder", "train-nose"):
            raise ValueError(f"job {job.id} is a flow: it starts again from its first step "
                             f"(a flow has no warm start){again}")
        if job.status == "done":
            return _resume_unconverged(job, config, again)
        if not path.is_file():
            raise ValueError(f"job {job.id} kept no iterate to go on from (it stopped before "
                             f"its first iteration, or its method keeps none){again}")
        return {**config, "x0": str(path)}

    def summary_of(self, job, result: dict) -> list[str]:
        """:meth:`summary`; a cancelled solve that kept its last iterate (``partial.npz``)
        adds the command that goes on from it (``--x0``)."""
        lines = self.summary(result)
        ilut = (getattr(job, "config", None) or {}).get("ilut_options")
        if ilut and lines and result.get("precond") == "ilut":   # round 44 h26
            lines = [f"{lines[0]} ({ilut_options_text(ilut)})", *lines[1:]]
        going_on = _warm_start_line(job)
        return lines + [going_on] if going_on else lines

    def prepare(self, values: dict, *, cell: str | None = None, user_ns: dict | None = None,
                where: str = "thread") -> JobRequest:
        user_ns = {} if user_ns is None else user_ns
        if cell is not None:
            if not cell.strip():
                raise ValueError("%%solve needs a cell with a spec (domain: 256x256, ...)")
            values["spec"] = parse_spec(cell)
            config = to_config(values, memory=False)
            check_row_split_options(values, "a %%solve cell's grid")
            _check_ilu_grid(config)
            check_amg_kind("custom", config, None)   # a cell's options: amg, precond
            check_restart(values, config["method"])
            check_mg_options(values, config["method"], config["precond"])
            return JobRequest("solve", config, label="%%solve")
        name = values.get("problem")
        pname = values.get("precond")
        if (pname not in _k().PRECONDS and pname in user_ns and
                not (name is not None and name in user_ns and name not in PROBLEMS)):
            raise ValueError(f"--precond {pname}: a notebook preconditioner goes with a "
                             f"notebook matrix (%solve A b --precond {pname}); {name!r} is "
                             f"not one: use --precond {', '.join(_k().PRECONDS)}")
        if name is not None and name in user_ns and name not in PROBLEMS:
            if where != "thread":
                raise ValueError(
                    f"{name!r} is a notebook {type(user_ns[name]).__name__}: a user's matrix "
                    "or GridProblem is solved on one rank only (a distributed solve takes "
                    f"the built-in grid problems, %%solve specs and matrix files: "
                    f"{ROW_SPLIT}); drop --np "
                    "/ --launcher")
            check_row_split_options(values, f"the notebook's {name!r} (one rank)")
            return _objects_request(values, user_ns)
        if name is not None and name not in user_ns and _missing_matrix_file(name):
            raise missing_file(name, "matrix file", ": ")
        if name is not None and name not in PROBLEMS and _matrix_file(name):
            # several ranks (--np, --launcher slurm): split by rows, check_launch checks it
            if where == "thread":
                check_row_split_options(values, f"{os.path.basename(name)!r} on one rank")
            return _file_request(values)
        if values.get("b") is not None and name is not None and name not in PROBLEMS:
            # %solve Anope b: a mistyped variable, not a built-in problem given a B
            from skiff.grammar.common import did_you_mean

            systems = [k for k, v in user_ns.items()
                       if not k.startswith("_") and _safe_is_system(v)]
            raise ValueError(f"no notebook variable, matrix file or built-in problem named "
                             f"{name!r}{did_you_mean(name, [*systems, *PROBLEMS[:-1]])}"
                             + (f"; notebook matrices: {', '.join(sorted(systems)[:10])}"
                                if systems else ""))
        if values.get("b") is not None:
            raise ValueError(f"B ({values['b']!r}) goes with a notebook matrix or a matrix "
                             f"file; {name!r} is a built-in problem")
        config = to_config(values, memory=False)   # checked by check_launch, per rank
        if config["problem"] not in _FLOW:
            check_row_split_options(values, f"the built-in grid {config['problem']!r}")
            _check_ilu_grid(config)
        check_amg_kind(config["problem"], config, None)
        if config["problem"] not in _FLOW:   # (the flows refuse --restart as theirs)
            check_restart(values, config.get("method"))
            check_mg_options(values, config["method"], config["precond"])
        return JobRequest("solve", config, label=f"%solve {config['problem']}")


def _matrix_file(name: str) -> bool:
    from skiff.kernels.solve.files import is_matrix_file

    return is_matrix_file(name)


def _check_ilu_grid(config: dict) -> None:
    """``--precond ilu`` factors a matrix's entries: a built-in grid (a stencil) has none."""
    name = config.get("precond")
    if name in ("ilu", "ilut"):
        what = "ILU(0)" if name == "ilu" else "ILUT, a threshold ILU with fill"
        raise ValueError(f"--precond {name} factors a matrix's entries ({what}), and "
                         f"{config.get('problem')!r} is a grid problem (a stencil): use "
                         f"--precond mg or amg, or solve a matrix (a notebook matrix, "
                         f"A.mtx / A.npz) with --precond {name}")


def check_row_split_options(values: dict, what: str) -> None:
    """``--overlap`` / ``--reorder`` shape the row split of a matrix file over MPI ranks
    (round 40 h10): with one rank, a notebook matrix or a grid they would be read by nothing,
    so they are refused in one line (``--precond ilu`` runs on one rank too)."""
    given = [f for f, k in (("--overlap", "overlap"), ("--reorder", "reorder"),
                            ("--coarse", "coarse"), ("--schwarz", "schwarz"))
             if values.get(k) and not (k == "reorder" and values.get("precond") == "ilut")]
    if not given:
        return
    flags = " and ".join(given)
    raise ValueError(f"{flags} shape{'s' if len(given) == 1 else ''} the split of a matrix "
                     f"file's rows over MPI ranks (solve A.mtx --np 2 --precond ilu "
                     f"--overlap 1), and {what} has no such split: drop {flags}"
                     + ("; --precond ilu alone is ILU(0) on one rank"
                        if "--overlap" in given else ""))


def _check_row_launch(config: dict, ranks: int) -> str:
    """A matrix file on several ranks (round 39 h11): split by rows over them
    (``kernels/solve/parallel/rows_job.py``); refuse, in one line, what that split does not
    run (a method but cg / bicgstab / gmres / cocg, a preconditioner but jacobi / ilu / ilut /
    amg / none, --maxiter 0, --stop, several right-hand sides, fewer rows than ranks)."""
    from skiff.kernels.solve.parallel.rows_job import check_row_split

    check_row_split(config.get("method"), config.get("precond"), ranks,
                    overlap=int(config.get("overlap") or 0), coarse=config.get("coarse"),
                    schwarz=config.get("schwarz"))
    # round 47 (h4): a complex matrix's row split takes an overlap and a coarse level (round
    # 46 h6 refused them here: it ran block Jacobi only)
    if config.get("maxiter") == 0:
        raise ValueError(f"--np {ranks}: --maxiter 0 (x0 back, no iteration) is the "
                         f"one-rank solver's; drop --np, or give --maxiter 1 or more")
    if config.get("stop", "residual") not in (None, "residual"):
        raise ValueError(f"--np {ranks}: --stop {config['stop']} runs on one rank; drop --np")
    n = int((config.get("grid") or [0])[0])
    if 0 < n < ranks:
        raise ValueError(f"--np {ranks}: the matrix has {n} rows, fewer than the ranks; "
                         f"give --np {n} or fewer")
    # round 48 (h14): B's columns are each solved over the ranks (rows_job), one setup
    lo_hi = [(round(k * n / ranks), round((k + 1) * n / ranks)) for k in range(ranks)]
    config["decomposition"] = {"ranks": ranks, "split": "rows", "subdomains": [
        {"rank": r, "index": [[lo, hi]], "cells": hi - lo} for r, (lo, hi) in enumerate(lo_hi)]}
    return (f"decomposition: {ranks} ranks by rows of the matrix ("
            f"{', '.join(str(hi - lo) for lo, hi in lo_hi)} rows); each rank reads the whole "
            f"file")


def _refuse_file_like(name: str) -> None:
    """A PROBLEM written as a file (a dot or a folder in it) that is no matrix file: said as
    a file (``A.mxt``: the closest name in its folder), not as an unknown problem."""
    import os

    from skiff.kernels.solve.files import MATRIX_SUFFIXES

    if not isinstance(name, str) or not ("." in name or os.sep in name) or \
            did_you_mean(name, PROBLEMS[:-1]):
        return
    kinds = "Matrix Market .mtx, SciPy .npz or .npy"
    if os.path.exists(os.path.expanduser(name)):
        raise ValueError(f"{name!r} is not a matrix file skiff reads ({kinds}); a problem is "
                         f"one of {', '.join(PROBLEMS[:-1])}")
    if os.path.splitext(name)[1].lower() not in MATRIX_SUFFIXES:
        raise missing_file(name, "matrix file", ": ")


def _missing_matrix_file(name: str) -> bool:
    from pathlib import Path

    from skiff.kernels.solve.files import MATRIX_SUFFIXES

    path = Path(str(name)).expanduser()
    return path.suffix.lower() in MATRIX_SUFFIXES and not path.exists()


def _check_complex_precond(name: str, dtype, values: dict) -> None:
    """A complex system with a preconditioner built on real matrices: said before a job
    exists (the solver says it too, but from inside a run folder)."""
    if dtype is not None and getattr(dtype, "kind", "") == "c" and values.get("precond") in (
            "chebyshev", "mg", "saddle"):
        raise ValueError(f"{name!r} is complex ({dtype}) and --precond {values['precond']} "
                         f"builds on real matrices only: --precond amg, jacobi or none (or "
                         f"leave it out)")


def _check_saddle_precond(name: str, matrix, values: dict) -> None:
    """``--precond saddle`` on a matrix that is no symmetric saddle point: said before a job
    exists (the solver says it from inside a run folder, exit status 1)."""
    if values.get("precond") != "saddle" or not hasattr(matrix, "tocsr"):
        return
    import scipy.sparse as sp

    from skiff.kernels.solve.amg import is_symmetric
    from skiff.kernels.solve.saddle import saddle_blocks

    A = sp.csr_matrix(matrix)
    if A.dtype.kind == "c" or not is_symmetric(A) or saddle_blocks(A) is None:
        raise ValueError(f"{name!r}: --precond saddle is for a real symmetric saddle-point "
                         f"matrix [[K, B^T], [B, 0]] (zeros on the diagonal exactly where the "
                         f"block of zeros is) and this one is not; use --precond amg (or "
                         f"leave it out)")


def _check_finite_matrix(name: str, matrix) -> None:
    """A NaN or inf entry of the notebook's matrix is said before any job, naming the
    variable, as B's is (round 48 h6: the job failed with the solver's line and a
    traceback)."""
    import numpy as np
    import scipy.sparse as sp

    if not (sp.issparse(matrix) or isinstance(matrix, np.ndarray)):
        return   # a LinearOperator, a function or a GPU matrix: the solver's to check
    from skiff.kernels.solve.operators import check_finite

    try:
        check_finite(sp.csr_matrix(matrix))
    except ValueError as exc:
        raise ValueError(f"PROBLEM {name!r}: {exc}") from None


def _check_empty_rows(name: str, matrix) -> None:
    """A matrix (sparse or dense) with an all-zero row is singular whatever b is: said before
    a job exists (the solver says it too, from inside a run folder, exit status 1)."""
    import numpy as np

    if not (hasattr(matrix, "tocsr") or isinstance(matrix, np.ndarray)):
        return   # a LinearOperator or a function: no entries to look at
    from skiff.kernels.solve.components import isolated_unknowns

    n = int(matrix.shape[0])
    sums = np.asarray(abs(matrix) @ np.ones(n)).ravel()
    empty = np.flatnonzero(sums == 0)
    if empty.size and empty.size < n:
        # an unknown no equation involves (its column empty too: a graph's isolated node)
        # is the solver's to take (x = 0 there where b is 0; round 31)
        empty = np.setdiff1d(empty, isolated_unknowns(matrix))
    if empty.size:
        more = f" (and {empty.size - 1} more)" if empty.size > 1 else ""
        raise ValueError(f"{name!r}: row {int(empty[0])} of the matrix is all zeros{more}: A "
                         f"is singular and no x solves A x = b uniquely; a row left empty "
                         f"when the matrix was assembled (a boundary row?) is the usual cause")


def _check_isolated_b(name: str, bname: str, matrix, b, values: dict) -> None:
    """b not 0 on an unknown no equation involves (its row and column empty: a graph's
    isolated node) has no solution: said before a job exists, as the empty rows are, unless
    ``--compatibility project`` (which sets b to 0 there)."""
    import numpy as np

    from skiff.kernels.solve.components import isolated_unknowns

    if b is None or values.get("compatibility") == "project" or not (
            hasattr(matrix, "tocsr") or isinstance(matrix, np.ndarray)):
        return
    if hasattr(b, "toarray") and not isinstance(b, np.ndarray):
        b = b.toarray()
    flat = np.asarray(b).reshape(int(matrix.shape[0]), -1)
    iso = isolated_unknowns(matrix)
    bad = iso[np.any(flat[iso] != 0, axis=1)] if iso.size else iso
    if bad.size:
        more = f" (and {bad.size - 1} more)" if bad.size > 1 else ""
        raise ValueError(f"{name!r}: row {int(bad[0])} of the matrix is all zeros{more}, its "
                         f"column too (a graph's isolated node?), and {bname} is not 0 there: "
                         f"no x solves A x = b; set it to 0 there, or pass --compatibility "
                         f"project")


def _matrix_smoother(values: dict) -> dict:
    """A matrix validated as a stand-in grid problem: AMG's smoothers and ``--amg`` (which a
    matrix reads and a geometric-multigrid grid refuses) checked as the default, then put
    back."""
    out = {"smoother": "rbgs"} if values.get("smoother") in _k().AMG_SMOOTHERS else {}
    if values.get("amg") not in (None, "auto"):   # AMG is a matrix's multigrid: checked
        out["amg"] = "auto"                        # by check_options_apply, then put back
    return out


def _file_request(values: dict) -> JobRequest:
    """A thread job that solves the matrix in the file ``PROBLEM`` with B from a file, or,
    without B, b = A 1 (the exact solution is all ones, and its error is reported)."""

    from skiff.kernels.solve.files import read_matrix, read_vector

    name, bname = values["problem"], values.get("b")
    matrix = read_matrix(name)  # read once here: a bad file fails before any run folder
    _check_complex_precond(name, matrix.dtype, values)
    _check_empty_rows(name, matrix)
    _check_saddle_precond(name, matrix, values)
    n = int(matrix.shape[0])
    b = read_vector(bname, n) if bname is not None else None
    if b is not None:
        _check_finite_rhs(bname, b)
    _check_isolated_b(name, bname, matrix, b, values)
    check_options_apply(name, values, system="matrix")
    check_amg_kind(name, values, "matrix")
    _check_matrix_save(values)
    check_restart(values, values.get("method"))
    near, _ = _near_nullspace_value(values, n)
    config = to_config({**values, "problem": "poisson", "b": None,  # validate the options
                        **_matrix_smoother(values)})
    config.update(smoother=values.get("smoother") or "rbgs", amg=values.get("amg") or "auto")
    if near is not None:
        config["near_nullspace"] = near
    config.update(problem=os.path.abspath(os.path.expanduser(name)),
                  b=None if bname is None else os.path.abspath(os.path.expanduser(bname)),
                  method=values.get("method") or "auto", grid=[n, n])

    def job(cfg, reporter):   # the arrays read and checked here (a process reads them again)
        from skiff.kernels.solve.entry import run_matrix_file

        return run_matrix_file(cfg, reporter, matrix=matrix, b=b)

    return JobRequest("solve", config, fn=job, label=f"solve {os.path.basename(name)}")


def _objects_request(values: dict, user_ns: dict) -> JobRequest:
    """A thread job that solves the notebook's matrix (or GridProblem) ``PROBLEM``."""
    from skiff.kernels.solve import GridProblem

    name, bname = values["problem"], values.get("b")
    system = user_ns[name]
    if not is_system(system):
        raise TypeError(f"PROBLEM {name!r} is {_what_is(system)}: expected a square "
                        "sparse matrix or array, a dense 2D array, a scipy LinearOperator or "
                        "a GridProblem")
    from skiff.kernels.solve.operators import unwrapped

    system = unwrapped(system)   # aslinearoperator(M) of a matrix: M, its checks and AMG
    _check_complex_precond(name, getattr(system, "dtype", None), values)
    if not isinstance(system, GridProblem):
        _check_finite_matrix(name, system)
        _check_empty_rows(name, system)
        _check_saddle_precond(name, system, values)
    b = None
    if bname is not None:
        if bname not in user_ns:
            raise KeyError(f"no notebook variable {bname!r} for the right-hand side B")
        b = user_ns[bname]
        _check_rhs(bname, b, None if isinstance(system, GridProblem) else
                   int(system.shape[0]))
        if not isinstance(system, GridProblem):
            _check_isolated_b(name, bname, system, b, values)
    elif not isinstance(system, GridProblem):
        raise ValueError(f"%solve {name} needs B, the right-hand side: %solve {name} b")
    check_options_apply(name, values,
                        system="grid" if isinstance(system, GridProblem) else "matrix")
    check_amg_kind(name, values, "grid" if isinstance(system, GridProblem) else "matrix")
    if not isinstance(system, GridProblem):
        _check_matrix_save(values)
    check_restart(values, values.get("method"))
    if isinstance(system, GridProblem):   # a matrix refuses them all (_MATRIX_UNREAD)
        check_mg_options(values, values.get("method"), values.get("precond", "auto"))
    pname = values.get("precond", "auto")
    M = None
    if pname not in _k().PRECONDS:   # a notebook variable holding the user's own M
        M = _notebook_precond(pname, user_ns, system, values.get("method"))
    ilut_options_of(values, pname)   # --drop-tol with M: named as the user's M, not 'none'
    # validate the options (a user's M stands in as 'none')
    matrix = not isinstance(system, GridProblem)
    config = to_config({**values, "problem": "poisson", "b": None,
                        **({"precond": "none"} if M is not None else {}),
                        **(_matrix_smoother(values) if matrix else {})})
    config.update(smoother=values.get("smoother") or "rbgs", amg=values.get("amg") or "auto")
    near, near_array = (_near_nullspace_value(values, int(system.shape[0]), user_ns)
                        if matrix else (None, None))
    if near is not None:
        config["near_nullspace"] = near
    # a matrix's method is chosen from the matrix (Solver: 'auto') unless the line names one
    config.update(problem=f"<notebook {name}>", b=bname, method=values.get("method") or "auto")
    config["grid"] = [int(n) for n in system.shape]
    if M is not None:
        config.update(precond="user", precond_variable=pname)

    def job(cfg, reporter):
        from skiff.kernels.solve.entry import solve_system

        if M is not None:   # the object itself, not its name (Solver takes SciPy's M)
            cfg = {**cfg, "precond": M}
        if near_array is not None:   # --near-nullspace VAR: the notebook's array itself
            cfg = {**cfg, "near_nullspace": near_array}
        return solve_system(system, b, cfg, reporter)

    local = (f"the notebook object {name!r} cannot travel to other processes: use --np 1 or "
             "a built-in problem")
    return JobRequest("solve", config, fn=job, local_only=local, label=f"%solve {name}")


def _notebook_precond(pname: str, user_ns: dict, system, method: str | None):
    """The notebook's preconditioner ``--precond VAR``: SciPy's ``M`` (a LinearOperator, a
    function ``r -> M r``, an (n, n) matrix or a factorisation with ``solve``), checked here so
    that a wrong variable is said before any job exists."""
    from skiff.grammar.common import did_you_mean
    from skiff.kernels.solve import GridProblem

    if pname not in user_ns:
        names = [k for k, v in user_ns.items() if not k.startswith("_") and (
            callable(v) or hasattr(v, "matvec")) and not isinstance(v, type)]
        raise ValueError(f"unknown --precond {pname!r}{did_you_mean(pname, _k().PRECONDS)}: "
                         f"choose from {', '.join(_k().PRECONDS)}, or name a notebook variable "
                         f"holding your preconditioner (no variable {pname!r} in the notebook"
                         f"{did_you_mean(pname, names)})")
    M = user_ns[pname]
    if isinstance(system, GridProblem):
        raise ValueError(f"--precond {pname}: a preconditioner of your own goes with a notebook "
                         f"matrix; a GridProblem takes --precond {', '.join(_k().PRECONDS)}")
    if method in ("mg", "fmg", "direct"):
        raise ValueError(f"--method {method} takes no preconditioner (got --precond {pname}): "
                         f"a preconditioner goes with a Krylov method, e.g. --method gmres")
    shape = getattr(M, "shape", None)
    n = int(system.shape[0])
    usable = (hasattr(M, "matvec") or callable(getattr(M, "solve", None)) or callable(M) or
              (shape is not None and hasattr(M, "__matmul__")))
    if isinstance(M, (str, bytes, int, float, type)) or not usable:
        raise TypeError(f"--precond {pname}: the notebook variable holds a {type(M).__name__}, "
                        f"not a preconditioner; give SciPy's M: a LinearOperator, a function "
                        f"r -> M r, an ({n}, {n}) matrix, spilu(A) or pyamg's "
                        f"ml.aspreconditioner()")
    if shape is not None and tuple(shape) != (n, n):
        raise ValueError(f"--precond {pname} has shape {tuple(shape)!r}; the matrix is "
                         f"({n}, {n}) and M must be too")
    return M


def _what_is(obj) -> str:
    """``a 3x4 ndarray (not square: 3 equations, 4 unknowns)``: what a PROBLEM that is no
    system holds, its shape first (the message said "is a ndarray" of a 3x4 array)."""
    kind = type(obj).__name__
    shape = getattr(obj, "shape", None)
    if isinstance(obj, type) or shape is None:
        return f"a {kind}"
    try:
        shape = tuple(int(n) for n in shape)
    except (TypeError, ValueError):
        return f"a {kind}"
    dims = "x".join(str(n) for n in shape) or "0-d"
    if len(shape) == 2 and shape[0] != shape[1]:
        return (f"a {dims} {kind} (not square: {shape[0]} equations, {shape[1]} unknowns; "
                f"for least squares use scipy.sparse.linalg.lsqr)")
    if len(shape) == 2:
        return f"a {dims} {kind} (too small to solve)"
    return f"a {dims} {kind} ({len(shape)}-D, not a matrix)"


def _check_finite_rhs(bname: str, b) -> None:
    """A NaN or inf in B is said before any job (it failed as a job), naming the first."""
    import numpy as np

    try:  # a GPU array is copied to the host; one numpy cannot read is left to the job
        arr = np.asarray(b.get() if hasattr(b, "get") and not isinstance(b, dict) else
                         b.toarray() if hasattr(b, "toarray") else b)
        bad = ~np.isfinite(arr)
    except (TypeError, ValueError, AttributeError):
        return
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        where = ", ".join(str(i) for i in first)   # b[4], or b[4, 0] of a column
        count = int(bad.sum())
        what = "1 entry that is" if count == 1 else f"{count:,} entries that are"
        raise ValueError(f"B {bname!r} has {what} not finite; the first is b[{where}] = "
                         f"{arr[first]}: give finite numbers")


def _check_rhs(bname: str, b, unknowns: int | None = None) -> None:
    """The notebook's B must be numbers (a vector or an array of them), one entry per unknown
    of a matrix (``unknowns``): text, objects or another size are said here, before any run
    folder (the job failed with "could not convert string to float")."""
    import numpy as np

    if isinstance(b, (str, bytes)):
        text = b if len(b) <= 40 else b[:40] + type(b)("...")
        raise TypeError(f"B {bname!r} is a notebook variable holding the text {text!r}, not a "
                        "right-hand side: give a vector of numbers (e.g. b = np.ones(n))")
    dtype = getattr(b, "dtype", None)
    if dtype is None:  # a list, a tuple, a scalar: what numpy makes of it
        try:
            dtype = np.asarray(b).dtype
        except (TypeError, ValueError) as exc:
            raise TypeError(f"B {bname!r} is a {type(b).__name__} that is no array of numbers "
                            f"({exc})") from None
    if getattr(dtype, "kind", "") not in "biufc":
        raise TypeError(f"B {bname!r} is a {type(b).__name__} of {dtype}, not numbers: give "
                        "a vector of numbers (e.g. b = np.ones(n))")
    shape = tuple(int(n) for n in (getattr(b, "shape", None) or np.shape(b)))
    _check_finite_rhs(bname, b)
    if unknowns is None:
        return
    if len(shape) == 2 and shape[0] == unknowns and shape[1] > 1:
        return   # several right-hand sides: one setup, each column solved (as the CLI's file)
    if math.prod(shape) != unknowns:
        raise ValueError(f"B {bname!r} has {math.prod(shape):,} entries (shape {shape}) but "
                         f"the system has {unknowns:,} unknowns")


KIND = SolveKind()


_FLOW_NAMES = {"cd": "cd", "cl": "cl", "dp": "dp", "la": "recirculation length",
               "cd_max": "cd max", "cl_max": "cl max", "st": "Strouhal", "dp_end": "dp at t=8",
               "cd_mean": "cd mean", "cl_amplitude": "cl amplitude",
               "t_cd_max": "t of cd max", "t_cl_max": "t of cl max"}


def _refined(result: dict, key: str) -> str:
    """``; refined 0.47795, +1.4%``: the value against the case's refined reference (the
    result's ``reference`` / ``relative_error``; none for another Re or a short run)."""
    ref = (result.get("reference") or {}).get(key)
    err = (result.get("relative_error") or {}).get(key)
    if ref is None or err is None:
        return ""
    return f"; refined {ref:.6g}, {100 * float(err):+.2g}%"


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _stopped_columns_line(result: dict) -> str:
    """A stopped solve of k right-hand sides (round 35): the columns solved with their worst
    ``|r|/|b|``, the one it stopped in (its iterations and residual), those not started: the
    current column's residual alone read as the whole solve's."""
    k, done = int(result["columns"]), int(result.get("columns_done") or 0)
    rels = list(result.get("column_residuals") or [])
    its = list(result.get("column_iterations") or [])
    head = (f"{result.get('method', '?')} + {result.get('precond', '?')}, "
            f"{figure(result.get('unknowns'))} unknowns, {k} right-hand sides: "
            f"{result['stopped']}; ")
    solved = [r for r in rels[:done] if r is not None]
    parts = [f"{done} of {k} solved"
             + (f" (|r|/|b| <= {figure(max(solved))})" if solved else "")]
    if done < k:
        now = rels[done] if done < len(rels) else None
        n = its[done] if done < len(its) else None
        parts.append(f"stopped in the {_ordinal(done + 1)} after {figure(n)} iteration"
                     f"{'' if n == 1 else 's'}"
                     + (f" at |r|/|b| = {figure(now)}" if now is not None else ""))
    if k - done - 1 > 0:
        parts.append(f"{k - done - 1} not started")
    return head + "; ".join(parts)


def _cylinder_summary(result: dict) -> list[str]:
    """The terminal lines of a DFG cylinder run: each value against its published band."""
    steps = result.get("steps")
    what = "Newton updates" if result.get("newton_updates") else "time steps"
    lines = [f"cylinder {result.get('case')}, Re {figure(result.get('re'))}: "
             f"{result.get('cells')} cells, {result.get('dofs')} unknowns, {figure(steps)} "
             f"{what}, {figure(result.get('seconds', 0.0))} s "
             f"(linear solves {figure(100 * (result.get('linear_share') or 0.0))}%)"]
    bands, ok = result.get("bands") or {}, result.get("in_bands") or {}
    case = _k().FLOW_CASES.get(result.get("case"))
    full = case.t_end if case is not None and case.kind != "steady" else None
    short = full is not None and result.get("t_end") is not None and \
        float(result["t_end"]) < full - 1e-9
    parts = []
    for key, name in _FLOW_NAMES.items():
        if result.get(key) is None:
            continue
        if key == "dp_end":
            # the value at the run's end: t = 8 only for a full run ("dp at t=8" was printed
            # for a run stopped at t = 0.5)
            name = f"dp at t={figure(result.get('t_end', 8.0))}"
        text = f"{name} {result[key]:.5g}"
        if key in bands:
            lo, hi = bands[key]
            span = f"{lo:g} to {hi:g}" if lo < 0 else f"{lo:g}-{hi:g}"     # not "-0.115--0.105"
            if key == "dp_end" and short:
                text += f" (DFG at t={figure(full)}: {span})"    # another time: no verdict
            else:
                text += f" (DFG {span}{'' if ok.get(key) else ': outside'}{_refined(result, key)})"
        elif _refined(result, key):
            # 2D-3's times of the maxima (round 45): John 2004's value, no 1996 band
            text += f" ({_refined(result, key)[2:]})"
        parts.append(text)
    lines += [", ".join(parts[i:i + 2]) for i in range(0, len(parts), 2)]
    if result.get("case") == "2d-2" and result.get("st") is None:
        lines.append(f"no shedding period found by t = {figure(result.get('t_end'))}: the "
                     "periodic values are read once the wake sheds (the default --t-end 5)")
    elif bands and short:
        lines.append(f"the run stopped at t = {figure(result['t_end'])} of the case's "
                     f"{figure(full)}: the published bands are for the full run (drop --t-end)")
    elif bands and not all(ok.values()):
        lines.append("outside the published bands: a finer --resolution (or, unsteady, a "
                     "smaller --dt and the full --t-end) brings the values in")
    elif not bands:
        lines.append("no published bands at this Reynolds number (the DFG cases are Re 20 and "
                     "100)")
    if result.get("note"):  # round 48 h7: the run's own warning (shedding not settled, a
        # steady solution past Re 46, no period found) was in the log and the JSON only
        lines.append(str(result["note"]))
    return lines
