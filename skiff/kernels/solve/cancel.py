"""A cancel that lands inside a setup (round 37).

A solve checks its reporter after each iteration; the setup before it (an AMG hierarchy:
strength, aggregation or splitting, prolongator, Galerkin product per level) checked
nothing, so a cancel waited for the whole setup: 27-point 3-D Laplacian 80^3, SA's setup
3.6 s CPU, 16 s wall on the loaded 2-core machine. :func:`checking` makes the reporter's
``check`` the one :func:`checkpoint` calls, for the code in its ``with`` block (a context
variable: one solve's reporter is not another thread's); the setups call
:func:`checkpoint` between their phases, so a cancel raises :class:`JobCancelled` there.
Outside :func:`checking` a checkpoint does nothing.
"""

from __future__ import annotations

import contextvars
from contextlib import contextmanager

__all__ = ["checking", "checkpoint"]

_CHECK: contextvars.ContextVar = contextvars.ContextVar("skiff_solve_check", default=None)


@contextmanager
def checking(reporter):
    """Within the block, :func:`checkpoint` calls ``reporter.check()`` (None: nothing)."""
    token = _CHECK.set(None if reporter is None else reporter.check)
    try:
        yield
    finally:
        _CHECK.reset(token)


def checkpoint() -> None:
    """Raise :class:`~skiff.kernels.backend.report.JobCancelled` where the reporter of the
    enclosing :func:`checking` block was asked to stop."""
    check = _CHECK.get()
    if check is not None:
        check()
