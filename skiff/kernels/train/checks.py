"""Checks of arguments shared by the trainer and the model configs."""

from __future__ import annotations

import numpy as np

__all__ = ["positive_int"]


def positive_int(name: str, value) -> None:
    """Raise ``ValueError`` naming ``name`` unless ``value`` is an integer of at least 1 (a
    bool is not)."""
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
