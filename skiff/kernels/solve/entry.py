"""Job entry point of kind ``solve``: build the problem a config names, solve it, report.

The reporter receives the relative residual as the ``residual`` metric every iteration (the
job widget draws it), progress in decades of residual reduction, and two artifacts when the solve
ends: the field as a PNG heatmap (a mid-slice in 3D; drawn without matplotlib, see
:mod:`skiff.kernels.backend.png`) and the convergence curve as CSV. On several MPI ranks
(``--np N``, Slurm) every rank solves its block of the grid
(:class:`~.parallel.DistributedSolver`), or of a matrix file's rows
(:mod:`~.parallel.rows_job`), and rank 0 reports and holds the gathered field.
"""

from __future__ import annotations

import numpy as np

from skiff.kernels.backend.devices import DEFAULT_DEVICE
from skiff.kernels.backend.png import heatmap_png
from skiff.kernels.backend.report import NullReporter, Reporter

from .cancel import checking
from .files import load_near_nullspace
from .problems import GridProblem, convection_diffusion, diffusion, grid_problem, poisson
from .solution import Solution
from .solver import Solver

__all__ = ["run", "build_problem", "solve_and_report", "solve_system", "solver_from_config",
           "expression", "amg_config", "load_near_nullspace"]

_NUMPY_NAMES = ("sin", "cos", "tan", "exp", "log", "sqrt", "tanh", "abs", "hypot", "minimum",
                "maximum", "where", "arctan2", "cosh", "sinh")


def expression(text, ndim: int):
    """A number, or a function of the coordinates, for a spec expression (already checked by
    the grammar: only x, y, z and numpy functions)."""
    if text is None:
        return None
    if isinstance(text, (int, float)):
        return float(text)
    code = compile(str(text), "<%%solve>", "eval")
    env = {name: getattr(np, name) for name in _NUMPY_NAMES}
    env["pi"] = np.pi
    names = set(code.co_names)
    if not names & {"x", "y", "z"}:
        return float(eval(code, {"__builtins__": {}}, env))   # noqa: S307 (checked names)

    def fn(*coords):
        local = dict(env, x=coords[0], y=coords[1], z=coords[2] if ndim == 3 else 0.0)
        with np.errstate(all="ignore"):  # grid_problem names where a value is not finite
            return eval(code, {"__builtins__": {}}, local)     # noqa: S307

    return fn


def has_periodic(spec) -> bool:
    """Whether a config's ``bc`` (a kind, or ``{side: [kind, value]}``) has a periodic side."""
    if isinstance(spec, str):
        return spec == "periodic"
    return isinstance(spec, dict) and any(v[0] == "periodic" for v in spec.values())


def _bc(spec, ndim):
    if spec is None or isinstance(spec, str):
        return spec or "dirichlet"
    return {side: (kind, expression(value, ndim)) for side, (kind, value) in spec.items()}


def build_problem(config: dict) -> GridProblem:
    """The GridProblem a ``solve`` config describes (see :mod:`skiff.kinds.solve`)."""
    name = config.get("problem", "poisson")
    grid = tuple(int(n) for n in config.get("grid", (256, 256)))
    d = len(grid)
    bc = _bc(config.get("bc"), d)
    def src(*x):   # zero mean over the cells: a source pure Neumann sides can hold
        out = 1.0
        for xa in x:
            out = out * np.cos(np.pi * xa)
        return out

    # with Neumann on every side a source of 1 has no solution (the flux out is zero):
    # diffusion and jump --bc neumann failed in the job ("b is not compatible")
    def src_periodic(*x):   # zero mean and smooth across the periodic seams
        out = 1.0
        for xa in x:
            out = out * np.cos(2 * np.pi * xa)
        return out

    neumann_source = {"neumann": src, "periodic": src_periodic}.get(bc, 1.0) \
        if isinstance(bc, str) else 1.0
    if name == "poisson":
        if bc in ("neumann", "periodic"):
            return poisson(grid, source=neumann_source, bc=bc)
        return poisson(grid, bc=bc)
    if name == "diffusion":
        def k(*x):
            out = 1.0
            for xa in x:
                out = out * np.sin(2 * np.pi * xa)
            return 1.0 + 0.5 * out
        return diffusion(grid, k, source=neumann_source, bc=bc, name="diffusion")
    if name == "jump":
        c = np.indices(grid).astype(float)
        inside = np.all([(c[a] + 0.5) / grid[a] > 0.25 for a in range(d)], axis=0) & \
            np.all([(c[a] + 0.5) / grid[a] < 0.75 for a in range(d)], axis=0)
        kk = np.where(inside, float(config.get("contrast", 1000.0)), 1.0)
        return diffusion(grid, kk, source=neumann_source, bc=bc,
                         name=f"jump x{config.get('contrast', 1000.0):g}")
    if name == "convection":
        vel = config.get("velocity") or ([20.0, 5.0] + [0.0] * (d - 2))
        if bc == "periodic":   # a torus: the source must have zero mean
            return convection_diffusion(grid, vel, bc=bc, source=neumann_source)
        return convection_diffusion(grid, vel, bc=bc)
    if name == "body":
        c = [(np.arange(n) + 0.5) / n for n in grid]
        mesh = np.meshgrid(*c, indexing="ij")
        centre = [0.35, 0.5, 0.5][:d]
        sdf = np.sqrt(sum((m - c0) ** 2 for m, c0 in zip(mesh, centre))) - 0.15
        sides = {"x-": ("dirichlet", 1.0), "x+": ("dirichlet", 0.0)}
        return grid_problem(grid, sdf=sdf, source=0.0, bc=sides, name="body")
    if name == "custom":
        k = expression(config.get("k"), d)
        source = expression(config.get("source"), d)
        sdf = None
        if config.get("sdf") is not None:
            fn = expression(config["sdf"], d)
            c = [(np.arange(n) + 0.5) / n * (config.get("extent") or [1.0] * d)[a]
                 for a, n in enumerate(grid)]
            mesh = np.meshgrid(*c, indexing="ij")
            sdf = np.broadcast_to(fn(*mesh) if callable(fn) else fn, grid)
        body_bc = config.get("body_bc")
        if body_bc is not None and sdf is not None:
            body_bc = (body_bc[0], expression(body_bc[1], d))
        elif sdf is None:
            body_bc = None
        return grid_problem(grid, k=1.0 if k is None else k,
                            source=1.0 if source is None else source, bc=bc, sdf=sdf,
                            body_bc=body_bc,
                            velocity=config.get("velocity"),
                            extent=config.get("extent") or 1.0, name="custom")
    raise ValueError(f"unknown problem {name!r}: choose from poisson, diffusion, jump, "
                     "convection, body, custom")


def solve_and_report(solver: Solver, b, config: dict, reporter: Reporter) -> Solution:
    """Solve with ``solver``, report to ``reporter``, write the PNG (and --save) artifacts."""
    reporter.log(f"solver: {solver.describe()} (setup {solver.setup_time * 1e3:.1f} ms)")
    stop = config.get("stop") or "residual"   # --stop scipy: SciPy's minres tests
    x0 = load_x0(config["x0"]) if config.get("x0") else None
    if x0 is not None:
        reporter.log(f"warm start: x0 from {config['x0']}")
    extra = {} if stop == "residual" else {"stop": stop}
    if x0 is not None:
        extra["x0"] = x0
    sol = solver.solve(b, rtol=float(config.get("rtol", 1e-8)),
                       atol=float(config.get("atol", 0.0)), maxiter=config.get("maxiter"),
                       reporter=reporter, **extra)
    if sol is None:   # a distributed solve: rank 0 holds the field and reports
        return {"rank": reporter.rank}
    reporter.log(repr(sol))
    run_dir = getattr(reporter, "run_dir", None)
    if run_dir is not None:
        out = run_dir / "artifacts"
        out.mkdir(exist_ok=True)
        # drawn without matplotlib (its import and first figure cost more than a small solve);
        # Solution.plot draws the labelled figures when asked
        if sol.on_grid:  # not the (n, k) x of several right-hand sides
            u = sol.field if sol.field.ndim == 2 else sol.field[:, :, sol.field.shape[2] // 2]
            heatmap_png(u, out / "field.png")
            reporter.artifact("field", out / "field.png", kind="image")
        # a file, not an image to show: the job's view already charts the residual live
        reporter.artifact("convergence", _write_residuals(sol, out / "convergence.csv"),
                          kind="file")
        if not sol.converged and sol.columns is None:   # jobs resume goes on from it
            _keep_last_iterate(sol, run_dir / "partial.npz")
            reporter.artifact("last iterate (not converged)", run_dir / "partial.npz",
                              kind="file")
    if config.get("save"):
        reporter.artifact("solution", sol.save(config["save"]), kind="file")
    return sol


def _keep_last_iterate(sol: Solution, path) -> None:
    """An unconverged solve's last iterate as a stopped run's ``partial.npz`` (``x``, flat,
    and its ``iterations``): ``jobs resume`` (or ``--x0 RUN/partial.npz``) goes on from it
    without ``--save`` (round 38; a cancelled run keeps the same file)."""
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as fh:
        np.savez(fh, x=np.asarray(sol.x).ravel(), iterations=int(sol.iterations))
    tmp.replace(path)


def load_x0(path) -> np.ndarray:
    """A warm start's ``x0`` (round 34): a stopped run's ``partial.npz`` (its ``x``), a
    ``--save``d solution (``.npz``: its ``field``) or a ``.npy`` array; SciPy's ``x0=``
    meaning (the first iterate)."""
    data = np.load(path, allow_pickle=False)
    if isinstance(data, np.ndarray):
        return _finite_x0(data, path)
    with data:
        for name in ("x", "field"):
            if name in data.files:
                return _finite_x0(np.array(data[name]), path)
        raise ValueError(f"{path}: no x0 in it (a stopped run's partial.npz has 'x', a saved "
                         f"solution 'field'; it holds {', '.join(data.files) or 'nothing'})")


def _finite_x0(x0: np.ndarray, path) -> np.ndarray:
    """``x0`` as read, or one line naming the file where an entry is NaN or inf (round 48
    h6: a NaN x0 ran and failed as `cg: the solution became NaN/inf ... the matrix may be
    singular`)."""
    if x0.dtype.kind in "fc" and not np.isfinite(x0.sum()):
        bad = ~np.isfinite(x0.ravel())
        where = int(np.argmax(bad))
        raise ValueError(f"x0 {str(path)!r} has {int(bad.sum())} entries not finite; the first "
                         f"is x0[{where}] = {x0.ravel()[where].item()!r}: give finite numbers, "
                         f"or leave --x0 out (zeros)")
    return x0


def _write_residuals(sol: Solution, path):
    """``iteration,relative_residual`` per line (the convergence curve as data)."""
    bnorm = sol.bnorm or 1.0
    lines = ["iteration,relative_residual"]
    lines += [f"{i},{r / bnorm:.6e}" for i, r in enumerate(sol.residuals)]
    path.write_text("\n".join(lines) + "\n")
    return path


def solver_from_config(system, config: dict, *, distributed: bool = False):
    """The :class:`Solver` a ``solve`` config asks for, set up on ``system`` (a GridProblem,
    a matrix, a LinearOperator or a callable); ``distributed``: the
    :class:`~.parallel.DistributedSolver` over the ranks of MPI's world (a GridProblem)."""
    if distributed:
        from .parallel import DistributedSolver

        return DistributedSolver(system, method=config.get("method", "cg"),
                                 precond=config.get("precond", "auto"),
                                 cycle=config.get("cycle", "V"),
                                 smoother=config.get("smoother", "rbgs"),
                                 pre=config.get("pre", 2), post=config.get("post", 2),
                                 restart=config.get("restart", 30),
                                 device=config.get("device") or DEFAULT_DEVICE,
                                 compatibility=config.get("compatibility"),
                                 # the serial grid transfers' choice, split (round 38 h9)
                                 interpolation=config.get("interpolation") or "auto")
    amg, options, smoother, interpolation = amg_config(config)
    precond = config.get("precond", "auto")
    if isinstance(precond, str) and precond == "ilut" and config.get("ilut_options"):  # h26
        precond = ("ilut", dict(config["ilut_options"]))
    return Solver(system, method=config.get("method", "cg"),
                  precond=precond, cycle=config.get("cycle", "V"),
                  smoother=smoother, pre=config.get("pre", 2),
                  post=config.get("post", 2), restart=config.get("restart", 30),
                  device=config.get("device") or DEFAULT_DEVICE,
                  compatibility=config.get("compatibility"), amg=amg,
                  amg_options=options or None, interpolation=interpolation,
                  near_nullspace=load_near_nullspace(config.get("near_nullspace")))


# pyamg's keywords a config may hold as its own keys (round 35), read by amg_config
PYAMG_KEYS = ("strength", "max_coarse", "presmoother", "postsmoother", "CF")
GRID_INTERPOLATIONS = ("auto", "linear", "constant")   # geometric multigrid's (Solver's)
# pyamg's smoother names -> Solver's smoother= for smoothed aggregation (None: its default,
# a Chebyshev polynomial in D^-1 A)
_SA_SMOOTHERS = {"gauss_seidel": "gauss-seidel", "block_gauss_seidel": "gauss-seidel",
                 "schwarz": "schwarz", "jacobi": None, "chebyshev": None}


def _smoother_spec(value):
    """pyamg's ``presmoother=``: a name or ``(name, {options})`` -> (name, options)."""
    if isinstance(value, str):
        return value, {}
    if isinstance(value, (tuple, list)) and len(value) == 2 and isinstance(value[1], dict):
        return str(value[0]), dict(value[1])
    raise ValueError(f"presmoother: a name or pyamg's (name, {{options}}), e.g. "
                     f"('gauss_seidel', {{'sweep': 'symmetric', 'iterations': 2}}); got "
                     f"{value!r}")


def amg_config(config: dict):
    """``(amg, amg_options, smoother, interpolation)`` for :class:`Solver` from a config:
    its ``amg`` and ``amg_options`` and the keywords a pyamg user writes as they pass them
    to ``ruge_stuben_solver`` / ``smoothed_aggregation_solver`` (round 35):

    * ``strength``: ``'classical'``, ``'symmetric'``, ``'evolution'`` or ``(name,
      {'theta': t})``; ``max_coarse``; ``CF``: ``'RS'`` or ``('RS', {'second_pass':
      True})`` or ``'PMIS'`` (classical AMG);
    * ``interpolation``: classical AMG's ``'classical'`` / ``'direct'``, or geometric
      multigrid's ``'auto'`` / ``'linear'`` / ``'constant'`` (Solver's ``interpolation=``);
    * ``presmoother`` (and ``postsmoother``, the same: the cycle is symmetric):
      ``('gauss_seidel', {'sweep': 'symmetric', 'iterations': k})`` -> classical AMG's
      ``sweeps=k``; for smoothed aggregation ``'gauss_seidel'`` -> ``smoother=
      'gauss-seidel'``, ``'schwarz'``, or ``'jacobi'`` / ``'chebyshev'`` (its default).

    With ``amg='auto'`` a classical-only key (``CF``, a classical ``interpolation``,
    ``strength='classical'``) takes ``amg='classical'`` and a smoothed-aggregation one
    (``strength='symmetric'``/``'evolution'``) ``amg='sa'``, as the pyamg function the
    user named would; a key the chosen AMG does not read is refused by :class:`Solver`."""
    amg = config.get("amg") or "auto"
    options = dict(config.get("amg_options") or {})
    smoother = config.get("smoother", "rbgs")
    interpolation = "auto"
    given = {k: config[k] for k in PYAMG_KEYS if config.get(k) is not None}
    interp = config.get("interpolation")
    if interp is not None:
        if interp in GRID_INTERPOLATIONS:
            interpolation = interp
        else:
            given["interpolation"] = interp
    if not given:
        return amg, options, smoother, interpolation
    from .amg_rs import INTERPOLATIONS

    classical_only = ("CF" in given or given.get("interpolation") in INTERPOLATIONS
                      or _strength_name(given.get("strength")) == "classical")
    sa_only = _strength_name(given.get("strength")) in ("symmetric", "evolution")
    if amg == "auto" and classical_only and not sa_only:
        amg = "classical"
    elif amg == "auto" and sa_only and not classical_only:
        amg = "sa"
    if "interpolation" in given:
        if given["interpolation"] not in INTERPOLATIONS:
            raise ValueError(f"interpolation {given['interpolation']!r}: classical AMG's "
                             f"{', '.join(INTERPOLATIONS)} (pyamg's names) or geometric "
                             f"multigrid's {', '.join(GRID_INTERPOLATIONS)}")
        options["interpolation"] = given["interpolation"]
    if "CF" in given:
        cf, cf_opts = _smoother_spec(given["CF"])
        if cf not in ("RS", "PMIS") or set(cf_opts) - {"second_pass"} or (
                cf == "PMIS" and cf_opts):
            raise ValueError(f"CF {given['CF']!r}: classical AMG splits by 'RS' (or "
                             f"('RS', {{'second_pass': True}})) or 'PMIS' (pyamg's names; "
                             f"no PMISc, CLJP, CR)")
        if cf_opts.get("second_pass"):
            options["second_pass"] = True
        if cf == "PMIS":
            options["cf"] = "PMIS"
    if "strength" in given:
        options["strength"] = given["strength"]
    if "max_coarse" in given:
        options["max_coarse"] = int(given["max_coarse"])
    pre, post = given.get("presmoother"), given.get("postsmoother")
    if pre is not None and post is not None and _smoother_spec(pre) != _smoother_spec(post):
        raise ValueError(f"presmoother {pre!r} and postsmoother {post!r} differ: skiff's AMG "
                         f"cycle is symmetric (the same smoother before and after, as a CG "
                         f"preconditioner needs); give one")
    spec = pre if pre is not None else post
    if spec is not None:
        name, opts = _smoother_spec(spec)
        if amg == "classical":
            if name != "gauss_seidel" or opts.get("sweep", "symmetric") != "symmetric":
                raise ValueError(f"presmoother {spec!r}: classical AMG smooths with symmetric "
                                 f"Gauss-Seidel: ('gauss_seidel', {{'sweep': 'symmetric', "
                                 f"'iterations': k}})")
            if int(opts.get("iterations", 1)) != 1:
                options["sweeps"] = int(opts["iterations"])
        else:
            if name not in _SA_SMOOTHERS:
                raise ValueError(f"presmoother {name!r}: smoothed aggregation takes "
                                 f"{', '.join(_SA_SMOOTHERS)} (pyamg's names)")
            if opts.get("iterations", 1) != 1 or set(opts) - {"sweep", "iterations",
                                                               "degree"}:
                raise ValueError(f"presmoother {spec!r}: smoothed aggregation's smoother "
                                 f"takes no options here (its degree is fixed)")
            mine = _SA_SMOOTHERS[name]
            if mine is not None:
                if config.get("smoother") not in (None, "rbgs", mine):
                    raise ValueError(f"presmoother {name!r} and smoother "
                                     f"{config['smoother']!r} disagree; give one")
                smoother = mine
    return amg, options, smoother, interpolation


def _strength_name(value):
    if value is None:
        return None
    return value if isinstance(value, str) else (
        value[0] if isinstance(value, (tuple, list)) and value else None)


def solve_system(system, b, config: dict, reporter: Reporter | None = None) -> Solution:
    """Solve ``system x = b`` (``b`` None: the GridProblem's own right-hand side) with the
    solver and tolerances of ``config``, reporting to ``reporter``."""
    reporter = reporter or NullReporter()
    with checking(reporter):   # a cancel lands inside the setup too (cancel.py)
        solver = solver_from_config(system, config)
    return solve_and_report(solver, b, config, reporter)


def run(config: dict, reporter: Reporter | None = None):
    """Kind ``solve``: config from :func:`skiff.kinds.solve.to_config`. On several MPI ranks
    every rank solves its block of the grid; rank 0 returns the Solution, the others a
    small record."""
    reporter = reporter or NullReporter()
    distributed = reporter.world_size > 1
    if distributed and _is_matrix_file(config.get("problem")):   # split by rows (round 39)
        from .parallel.rows_job import rows_system

        solver, rhs, exact = rows_system(config, reporter)
        sol = solve_and_report(solver, rhs, config, reporter)   # --x0: its x0= (whole)
        if exact is not None and isinstance(sol, Solution):   # error(x) (round 44 h4)
            sol.error = exact(sol.x)
        return sol
    if distributed:
        from .parallel import check_distributed

        check_distributed(method=config.get("method", "cg"),
                          precond=config.get("precond", "auto"),
                          smoother=config.get("smoother", "rbgs"),
                          problem=config.get("problem"), periodic=has_periodic(config.get("bc")))
    if not distributed and _is_matrix_file(config.get("problem")):
        return run_matrix_file(config, reporter)
    if config.get("problem") == "cylinder":
        from .flow.job import run as run_flow

        return run_flow(config, reporter)
    if config.get("problem") == "train-nose":
        from .flow.nose_job import run as run_nose

        return run_nose(config, reporter)
    if distributed and config.get("problem", "poisson") == "poisson" and \
            config.get("bc", "dirichlet") in ("dirichlet", "neumann"):
        from .parallel.problems import PoissonBlocks  # each rank builds only its block

        problem = PoissonBlocks(tuple(config.get("grid", (256, 256))),
                                bc=config.get("bc", "dirichlet"))
    else:
        problem = build_problem(config)
    reporter.info(problem=repr(problem), unknowns=problem.unknowns)
    if distributed:
        solver = solver_from_config(problem, config, distributed=True)
        reporter.info(ranks=reporter.world_size,
                      subdomains=solver.dec.subdomains(problem.ndim))
        return solve_and_report(solver, None, config, reporter)
    return solve_system(problem, None, config, reporter)


def _is_matrix_file(name) -> bool:
    if not isinstance(name, str) or "/" not in name and "." not in name:
        return False
    from .files import is_matrix_file

    return is_matrix_file(name)


def run_matrix_file(config: dict, reporter: Reporter | None = None,
                    matrix=None, b=None) -> Solution:
    """A solve of the matrix in the file ``config["problem"]`` with ``b`` from the file
    ``config["b"]`` or, without one, b = A 1 (the exact solution all ones: its error is
    reported; where A 1 = 0, b = A x_e, ``files.default_rhs``). The front's thread job
    passes the arrays it read to check them; a process job (``--runner process``) and
    ``jobs resume`` read them here (round 34)."""
    from .files import read_matrix, read_vector

    reporter = reporter or NullReporter()
    if matrix is None:
        matrix = read_matrix(config["problem"])
    n = int(matrix.shape[0])
    if b is None and config.get("b") is not None:
        b = read_vector(config["b"], n)
    exact = None
    rhs = b
    if b is None:   # b = A 1; where A 1 = 0 (a Neumann matrix) b = A x_e (round 44 h4)
        from .files import default_rhs

        rhs, exact, line = default_rhs(matrix)
        reporter.log(line)
    sol = solve_system(matrix, rhs, config, reporter)
    if exact is not None:
        sol.error = exact(sol.x)
    return sol
