"""Seeded random numbers for parameter init and dropout.

One process-wide numpy ``Generator`` (``default_rng``) drives every initializer and dropout
mask unless a layer is given its own; ``seed(n)`` resets it, so the same seed gives the same
weights. On a GPU the numbers are drawn on the host and copied, so a model initialised on
either backend has bit-identical weights.
"""

from __future__ import annotations

import numpy as np

__all__ = ["seed", "get_generator", "Generator", "get_state", "set_state"]

Generator = np.random.Generator

_rng = np.random.default_rng(0)


def seed(n: int) -> Generator:
    """Reset the shared generator to ``default_rng(n)`` and return it."""
    global _rng
    if not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"seed must be a non-negative integer, got {n!r}")
    _rng = np.random.default_rng(int(n))
    return _rng


def get_generator(generator: Generator | None = None) -> Generator:
    """``generator`` when given, else the shared one."""
    return _rng if generator is None else generator


def get_state() -> dict:
    """The shared generator's state (JSON-able dict), for checkpoints."""
    return _rng.bit_generator.state


def set_state(state: dict) -> None:
    """Restore a state returned by :func:`get_state`."""
    _rng.bit_generator.state = state
