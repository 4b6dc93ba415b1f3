"""``ShapeError``: skiff's shape mismatches as torch's ``RuntimeError`` and numpy's
``ValueError`` both (a ported ``except RuntimeError:`` catches them, as does skiff's own
``except ValueError:``), with torch's wording first where it has one."""

from __future__ import annotations


class ShapeError(ValueError, RuntimeError):
    """A shape mismatch (torch raises RuntimeError; skiff raised ValueError)."""


def dims(shape) -> str:
    """``4x5`` (torch's form of a matrix's shape in its messages)."""
    return "x".join(str(int(s)) for s in shape)
