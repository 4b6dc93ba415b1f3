"""Which options a job would refuse typed, told from a kind's tables instead of its prepare.

``jobs show`` lists the options a job reads (:meth:`skiff.kinds.base.Kind.unread_options`):
an option set but not typed is read when the kind takes it typed. Asking the kind's prepare
once per option cost a prepare each (0.5 ms for a built-in solve, 2.1 s in all for an
800k-entry matrix file, which each one read again: cut by a budget, after which every option
was listed). A kind with a table here answers at once; its answer must be the probe's, which
``tests/cli/test_typed_refusals_r27.py`` checks option by option on every kind of problem.

Each table is ``fn(values, names, *, cell, user_ns) -> set | None``: of ``names`` (options
set and not typed), those the job these ``values`` describe refuses typed; None where the
table does not know (the probe then asks the kind's prepare).
"""

from __future__ import annotations

__all__ = ["TABLES", "solve"]


def _solve_system(problem, user_ns: dict) -> str | None:
    """What ``solve PROBLEM`` is, as the solve kind's prepare tells it: ``"matrix"`` (a
    notebook matrix or a matrix file), ``"grid"`` (a notebook GridProblem) or None (a
    built-in problem)."""
    from skiff.kinds import solve as s

    if problem is None or problem in s.PROBLEMS:
        return None
    if problem in user_ns:
        from skiff.kernels.solve import GridProblem

        return "grid" if isinstance(user_ns[problem], GridProblem) else "matrix"
    return "matrix" if s._matrix_file(problem) else None


def solve(values: dict, names, *, cell=None, user_ns=None) -> set[str] | None:
    """The solve kind's refusals (``skiff.kinds.solve.check_options_apply``), from its own
    tables: a built-in problem refuses another problem's options (``_ONLY_FOR``) and a flow
    problem the grid and linear-solver ones (``_GRID_ONLY``); a user's matrix or GridProblem
    refuses what it holds itself (``_SYSTEM_UNREAD``, and a matrix ``_MATRIX_UNREAD``) and
    every problem's own options. A ``%%solve`` cell: None (its spec is the problem)."""
    if cell is not None:
        return None
    from skiff.kinds import solve as s

    problem = values.get("problem")
    system = _solve_system(problem, dict(user_ns or {}))
    checked = {*s._ONLY_FOR, *s._GRID_ONLY, *s._MATRIX_UNREAD}
    refused = set()
    for name in names:
        if name not in checked:
            continue
        if system is not None:
            unread = s._SYSTEM_UNREAD + (s._MATRIX_UNREAD if system == "matrix" else ())
            if name in unread or name in s._ONLY_FOR:
                refused.add(name)
        elif problem in s._FLOW and name in s._GRID_ONLY:
            refused.add(name)
        elif name in s._ONLY_FOR and problem not in s._ONLY_FOR[name]:
            refused.add(name)
    return refused


# kind name -> its table (a kind without one is asked through its prepare)
TABLES = {"solve": solve}
