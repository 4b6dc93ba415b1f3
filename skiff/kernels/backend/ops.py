"""Custom operators: one reference written against ``xp``, optional fast twins per backend.

>>> import numpy as np
>>> @custom_op("demo.axpy")
... def axpy(a, x, y):
...     return a * x + y
>>> @axpy.implement("cpu", "numpy-inplace")
... def _axpy_inplace(a, x, y):
...     out = y.copy(); out += a * x; return out
>>> float(axpy(2.0, np.ones(3), np.ones(3))[0])
3.0

Dispatch picks, for the backend the array arguments live on, the available implementation with
the highest priority; the reference is the fall-back and the oracle. ``SKIFF_REFERENCE_OPS=1``
forces every op to its reference (for debugging a suspected fast-path bug).
:func:`skiff.kernels.backend.testing.check_op` runs every fast twin against the reference.

Twins that live in a module of their own (the CUDA ones, say, which import the op to register
on it) are declared with :meth:`CustomOp.implement_in`: that module is imported the first time
an implementation for its backend is looked up, so the op's module never imports it back.
"""

from __future__ import annotations

import functools
import importlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from .arrays import get_array_module
from .devices import cupy

__all__ = ["CustomOp", "Impl", "custom_op", "registered_ops", "get_op", "numba_available"]

BACKENDS = ("cpu", "gpu")


@dataclass
class Impl:
    """One implementation of an op on one backend."""

    backend: str
    name: str
    fn: Callable
    priority: int = 10
    available: Callable[[], bool] = field(default=lambda: True)


class CustomOp:
    """An operator with a reference implementation and optional fast ones."""

    def __init__(self, name: str, reference: Callable):
        self.name = name
        self.reference = reference
        self._impls: list[Impl] = []
        self._pending: dict[str, list[str]] = {}  # backend -> modules not imported yet
        functools.update_wrapper(self, reference)

    @property
    def impls(self) -> list[Impl]:
        """Every fast implementation, the ones declared by :meth:`implement_in` included
        (their modules are imported now)."""
        for backend in list(self._pending):
            self._load(backend)
        return list(self._impls)

    def implement(
        self,
        backend: str,
        name: str,
        *,
        priority: int = 10,
        available: Callable[[], bool] | None = None,
    ):
        """Decorator registering a fast implementation for ``backend`` ('cpu' or 'gpu')."""
        if backend not in BACKENDS:
            raise ValueError(f"unknown backend {backend!r}: choose from {', '.join(BACKENDS)}")

        def register(fn):
            avail = available or (lambda: True)
            self._impls.append(Impl(backend, name, fn, priority, avail))
            return fn

        return register

    def implement_in(self, backend: str, module: str) -> None:
        """Declare that importing ``module`` (an absolute module name) registers, with
        :meth:`implement`, implementations of this op for ``backend``. It is imported the
        first time an implementation for ``backend`` is looked up (the first dispatch on
        that backend's arrays), not before; an import error is raised there."""
        if backend not in BACKENDS:
            raise ValueError(f"unknown backend {backend!r}: choose from {', '.join(BACKENDS)}")
        modules = self._pending.setdefault(backend, [])
        if module not in modules:
            modules.append(module)

    def _load(self, backend: str) -> None:
        with _LOADING:
            for module in list(self._pending.get(backend, ())):
                importlib.import_module(module)  # a failed import stays pending, and raises
                modules = self._pending.get(backend, [])
                if module in modules:
                    modules.remove(module)
            if not self._pending.get(backend):
                self._pending.pop(backend, None)

    def available_impls(self, backend: str) -> list[Impl]:
        """Fast implementations usable now on ``backend``, best first."""
        if self._pending.get(backend):
            self._load(backend)
        found = [i for i in self._impls if i.backend == backend and _safe(i.available)]
        return sorted(found, key=lambda i: -i.priority)

    def select(self, *args) -> Callable:
        """The function dispatch would call for these arguments."""
        if os.environ.get("SKIFF_REFERENCE_OPS"):
            return self.reference
        backend = backend_of(*args)
        impls = self.available_impls(backend)
        return impls[0].fn if impls else self.reference

    def __call__(self, *args, **kwargs):
        return self.select(*args)(*args, **kwargs)

    def __repr__(self) -> str:
        names = [f"{i.backend}:{i.name}" for i in self._impls]
        names += [f"{b}:<in {m}>" for b, ms in self._pending.items() for m in ms]
        return f"<CustomOp {self.name} (fast: {', '.join(names) or 'none'})>"


_LOADING = threading.RLock()  # one import of implementing modules at a time (re-entrant)


def _safe(pred: Callable[[], bool]) -> bool:
    try:
        return bool(pred())
    except Exception:
        return False


def backend_of(*args) -> str:
    """'gpu' when any argument is a cupy array, else 'cpu'."""
    arrays = [a for a in args if hasattr(a, "shape")]
    xp = get_array_module(*arrays)
    return "gpu" if cupy() is not None and xp is cupy() else "cpu"


_REGISTRY: dict[str, CustomOp] = {}


def custom_op(name: str):
    """Decorator: turn a reference function into a registered :class:`CustomOp`."""

    def wrap(fn):
        if name in _REGISTRY:
            raise ValueError(f"custom op {name!r} is already registered")
        op = CustomOp(name, fn)
        _REGISTRY[name] = op
        return op

    return wrap


def registered_ops() -> dict[str, CustomOp]:
    return dict(_REGISTRY)


def get_op(name: str) -> CustomOp:
    try:
        return _REGISTRY[name]
    except KeyError:
        valid = ", ".join(sorted(_REGISTRY)) or "none registered yet"
        raise KeyError(f"no custom op {name!r} (registered: {valid})") from None


@functools.lru_cache(maxsize=1)
def numba_available() -> bool:
    if os.environ.get("SKIFF_DISABLE_NUMBA"):
        return False
    try:
        import numba  # noqa: F401
    except Exception:
        return False
    return True
