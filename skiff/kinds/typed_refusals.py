"""Which options a job would refuse typed, told from tables instead of the kind's prepare.

``jobs show`` lists the options a job reads (:meth:`skiff.kinds.base.Kind.unread_options`):
an option set but not typed is read when the kind takes it typed. Asking the kind's prepare
once per option cost a prepare each (0.5 ms for a built-in solve, 2.1 s in all for an
800k-entry matrix file, which each one read again: cut by a budget, after which every option
was listed).

A kind owns its table: it overrides :meth:`skiff.kinds.base.Kind.typed_refusals` next to the
checks it answers for (the solve kind: ``SolveKind.typed_refusals``, by the rule its
``check_options_apply`` raises from). ``TABLES`` below is the fallback the base method reads
(kind name -> ``fn(values, names, *, cell, user_ns) -> set | None``) for a kind that cannot
hold one itself; none needs it now. ``tests/cli/test_typed_refusals_r27.py`` checks the
solve kind's answer against the probe, option by option, on every kind of problem.
"""

from __future__ import annotations

__all__ = ["TABLES"]

# kind name -> its table (a kind without one, and without its own typed_refusals, is asked
# through its prepare)
TABLES: dict = {}
