"""The registry of job kinds: one :class:`~skiff.kinds.base.Kind` object per kind.

A kind holds its grammar Command, ``to_config``, the kernel entry its runners call, how it
recognises and uses notebook objects (``prepare``), and how a finished job continues
(``resume_config``). Magics, the CLI and the panels look kinds up here and never decide
those things themselves; :func:`skiff.jobs.launch` decides where a job runs. A new kind is a
module here with a ``KIND`` object, listed in :data:`KINDS`.
"""

from __future__ import annotations

from skiff.grammar.common import unknown_name

from . import chat, demo, ocr, solve, train
from .base import JobRequest, Kind, resolve_entry

__all__ = ["KINDS", "Kind", "JobRequest", "get", "names", "resolve_entry"]

KINDS: dict[str, Kind] = {k.name: k for k in (train.KIND, solve.KIND, ocr.KIND, demo.KIND,
                                                chat.KIND, chat.GENERATE_KIND)}


def get(name: str) -> Kind:
    """The kind called ``name``; an unknown name lists the kinds there are."""
    kind = KINDS.get(name)
    if kind is None:
        raise unknown_name("job kind", name, sorted(KINDS))
    return kind


def names(*, with_grammar: bool = False) -> list[str]:
    """The kinds' names (``with_grammar``: only those a magic or the CLI can launch)."""
    return [n for n, k in KINDS.items() if k.command is not None or not with_grammar]
