"""``%load_ext skiff``: registers the magics. Nothing heavy is imported here."""

from __future__ import annotations

__all__ = ["load_ipython_extension", "unload_ipython_extension"]


def load_ipython_extension(ipython) -> None:
    from skiff.magics import magics_classes

    for cls in magics_classes():
        ipython.register_magics(cls)


def unload_ipython_extension(ipython) -> None:
    pass
