"""How much memory a grid solve needs, checked before anything is allocated.

``--grid 1000000x1000000`` would otherwise start a job that dies allocating 7 TiB; the
estimate is a lower bound (the vectors every method must hold, in float64), so a refusal is
certain and a problem that fits is never refused.

>>> needed_bytes((256, 256), method="cg", precond="mg") < 64 * 2**20
True
"""

from __future__ import annotations

import math

__all__ = ["needed_bytes", "check_fits", "check_problem_fits", "format_bytes"]

# vectors of the grid's size each method keeps (x, r, z, p, q for CG ...)
_KRYLOV_VECTORS = {"cg": 5, "pipecg": 11, "bicgstab": 8, "minres": 7, "mg": 3, "fmg": 4,
                   "direct": 30}


def needed_bytes(grid, *, method: str = "cg", precond: str = "mg", restart: int = 30,
                 variable: bool = False) -> int:
    """A lower bound of the bytes a solve of a grid of ``grid`` cells takes.

    The problem itself (right-hand side, source, boundary term), the method's vectors
    (GMRES: ``restart + 4``), a multigrid hierarchy (three vectors per level, the levels
    together at most 4/3 of the finest), and the coefficient arrays of a variable
    coefficient (``variable``: one per axis and the diagonal)."""
    n = math.prod(int(g) for g in grid)
    vectors = 3 + (int(restart) + 4 if method == "gmres" else _KRYLOV_VECTORS.get(method, 5))
    if method in ("mg", "fmg") or precond in ("mg", "auto"):
        vectors += 4      # 3 per level, levels summing to <= 4/3 of the finest
    elif precond in ("jacobi", "chebyshev"):
        vectors += 1 if precond == "jacobi" else 3
    elif precond == "amg":
        vectors += 3 * len(grid) + 2   # the CSR matrix: 2d+1 entries of 12 bytes per row
    if variable:
        vectors += len(grid) + 1
    return 8 * n * vectors


def format_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} PiB"  # pragma: no cover


def check_fits(grid, available: int, device: str, **kw) -> int:
    """Raise ``ValueError`` naming the grid, the bytes it needs and the bytes ``device``
    has when the solve cannot fit; return the estimate otherwise."""
    need = needed_bytes(grid, **kw)
    if available and need > available:
        shown = "x".join(str(int(g)) for g in grid)
        raise ValueError(f"grid {shown} needs at least {format_bytes(need)} on {device}, "
                         f"which has {format_bytes(available)} available: use a smaller "
                         "--grid")
    return need


# the arrays a grid problem holds itself: right-hand side, source, boundary term
PROBLEM_VECTORS = 3


def check_problem_fits(grid, available: int) -> int:
    """Raise ``ValueError`` before a grid problem's own arrays are allocated when they
    cannot fit in ``available`` bytes of host memory (``skiff.solve`` called directly, not
    through ``%solve``); return the bytes they take otherwise."""
    need = 8 * math.prod(int(g) for g in grid) * PROBLEM_VECTORS
    if available and need > available:
        shown = "x".join(str(int(g)) for g in grid)
        raise ValueError(f"grid {shown} needs at least {format_bytes(need)} of host memory "
                         f"for the problem alone, and {format_bytes(available)} is available: "
                         "use a smaller grid")
    return need
