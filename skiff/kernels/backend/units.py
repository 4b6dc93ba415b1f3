"""Sizes people write: ``80GB``, ``16GiB``, ``512MB`` or a plain number of bytes."""

from __future__ import annotations

import re

__all__ = ["byte_size", "BYTE_UNITS"]

BYTE_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
              "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def byte_size(text) -> int:
    """Bytes in ``text`` (``80GB``, ``16GiB``, ``512MB``, ``1e9``); an int passes through.

    Raises ``ValueError`` naming the text when it is no size.
    """
    if isinstance(text, int) and not isinstance(text, bool):
        if text < 0:
            raise ValueError(f"expected a size like 80GB or 16GiB, got {text!r}")
        return text
    m = re.fullmatch(r"\s*([0-9.]+(?:e[0-9]+)?)\s*([kmgt]?i?b?)\s*", str(text).lower())
    if not m or m.group(2) not in BYTE_UNITS:
        raise ValueError(f"expected a size like 80GB or 16GiB, got {text!r}")
    try:
        value = float(m.group(1))
    except ValueError:
        raise ValueError(f"expected a size like 80GB or 16GiB, got {text!r}") from None
    return int(value * BYTE_UNITS[m.group(2)])
