"""Job kinds: the name a user launches, and the kernel entry point that runs it.

An entry point is ``"module:function"`` with the signature ``run(config: dict, reporter)``;
it returns the result (a JSON-able dict, or an object with ``to_json()``). Entry points are
imported only when a job of that kind starts.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

__all__ = ["KINDS", "resolve_target"]

KINDS: dict[str, str] = {
    "train": "skiff.kernels.train.entry:run",
    "solve": "skiff.kernels.solve.entry:run",
    "ocr": "skiff.kernels.ocr.entry:run",
    "demo": "skiff.jobs.demo:run",
}


def resolve_target(target: str | Callable) -> Callable:
    """A callable for ``target``: a callable, a kind name, or ``module:function``."""
    if callable(target):
        return target
    spec = KINDS.get(target, target)
    if ":" not in spec:
        raise ValueError(
            f"unknown job kind {target!r}: choose from {', '.join(sorted(KINDS))} "
            f"or give 'module:function'"
        )
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)
