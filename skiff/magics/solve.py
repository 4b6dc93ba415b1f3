"""``%solve`` and ``%%solve``: solve a PDE or a linear system as a job with a live residual curve.

``%solve poisson --grid 1024x1024 --method cg --precond mg --rtol 1e-8 [-o NAME]`` solves a
built-in problem; ``%solve A b --precond amg`` solves the notebook's matrix ``A`` (scipy or
cupyx sparse, or a GridProblem without ``b``) on a thread of this kernel; ``%%solve`` reads a
short spec from the cell (see :mod:`skiff.grammar.solve`). The job's value is the
:class:`~skiff.kernels.solve.solution.Solution`.
"""

from __future__ import annotations

from IPython.core.magic import Magics, line_cell_magic, magics_class

from skiff.grammar.common import split_launch
from skiff.grammar.solve import COMMAND, PROBLEMS, parse_spec, to_config
from skiff.jobs import launch

from .base import finish_launch, parse_line, usage_errors

__all__ = ["SolveMagics", "launch_solve"]


def _is_system(obj) -> bool:
    from skiff.kernels.solve import GridProblem

    if isinstance(obj, GridProblem):
        return True
    shape = getattr(obj, "shape", None)
    return shape is not None and len(shape) == 2 and (hasattr(obj, "tocsr") or
                                                      hasattr(obj, "__matmul__"))


def launch_solve(line: str, cell: str | None = None, user_ns: dict | None = None):
    """Parse a ``%solve`` line (and ``%%solve`` cell) and launch; return ``(job, options)``."""
    user_ns = {} if user_ns is None else user_ns
    ns = parse_line(COMMAND, line)
    values, opts = split_launch(ns)
    np_ = opts.get("np", 1)
    with usage_errors():
        if cell is not None:
            if not cell.strip():
                raise ValueError("%%solve needs a cell with a spec (domain: 256x256, ...)")
            values["spec"] = parse_spec(cell)
            config = to_config(values)
            job = launch("solve", config, np=np_, runner=opts.get("runner", "auto"),
                         device=config["device"], label="%%solve")
            return job, opts
        name = values.get("problem")
        if name is not None and name in user_ns and name not in PROBLEMS:
            return _launch_objects(values, opts, user_ns), opts
        if values.get("b") is not None:
            raise ValueError(f"B ({values['b']!r}) goes with a notebook matrix; {name!r} is a "
                             "built-in problem")
        config = to_config(values)
        job = launch("solve", config, np=np_, runner=opts.get("runner", "auto"),
                     device=config["device"], label=f"%solve {config['problem']}")
        return job, opts


def _launch_objects(values: dict, opts: dict, user_ns: dict):
    from skiff.kernels.solve import GridProblem, Solver
    from skiff.kernels.solve.entry import solve_and_report

    name, bname = values["problem"], values.get("b")
    system = user_ns[name]
    if not _is_system(system):
        raise TypeError(f"PROBLEM {name!r} is a {type(system).__name__}: expected a sparse "
                        "matrix or array, a dense 2D array, a scipy LinearOperator or a "
                        "GridProblem")
    for what, obj in ((name, system), (values.get("b"), user_ns.get(values.get("b")))):
        dtype = getattr(obj, "dtype", None)
        if dtype is not None and getattr(dtype, "kind", "") == "c":
            raise ValueError(f"{what!r} is complex ({dtype}); skiff solves real systems only")
    if opts.get("np", 1) > 1 or opts.get("runner") == "process":
        raise ValueError(f"the notebook object {name!r} cannot travel to other processes: "
                         "use --np 1 or a built-in problem")
    b = None
    if bname is not None:
        if bname not in user_ns:
            raise KeyError(f"no notebook variable {bname!r} for the right-hand side B")
        b = user_ns[bname]
    elif not isinstance(system, GridProblem):
        raise ValueError(f"%solve {name} needs B, the right-hand side: %solve {name} b")
    config = to_config({**values, "problem": "poisson", "b": None})  # validate the options
    config.update(problem=f"<notebook {name}>", b=bname)
    config["grid"] = [int(n) for n in system.shape]

    def job(cfg, reporter):
        solver = Solver(system, method=cfg["method"], precond=cfg["precond"],
                        cycle=cfg["cycle"], smoother=cfg["smoother"], pre=cfg["pre"],
                        post=cfg["post"], restart=cfg["restart"], device=cfg["device"],
                        compatibility=cfg["compatibility"])
        return solve_and_report(solver, b, cfg, reporter)

    return launch("solve", config, fn=job, runner="thread", device=config["device"],
                  label=f"%solve {name}")


@magics_class
class SolveMagics(Magics):
    @line_cell_magic
    def solve(self, line="", cell=None):
        """Solve as a job: ``%solve PROBLEM [B] [--grid NxN] [--method M] [--precond P]
        [--rtol X] [--device DEV] [--wait] [-o NAME]`` (PROBLEM: poisson, diffusion, jump,
        convection, body, or a notebook matrix / GridProblem), or ``%%solve [options]`` with a
        spec in the cell (domain, coefficient, boundaries, source, body, solver).
        Non-blocking unless ``--wait``; returns the Job (its value is the Solution)."""
        if line.strip() in ("-h", "--help"):
            print(COMMAND.usage(prog="%solve"))
            return None
        job, opts = launch_solve(line, cell, self.shell.user_ns)
        return finish_launch(self.shell, job, opts)
