"""``import skiff.nn``, ``from skiff.nn import functional as F``, ``from skiff.optim import
AdamW``: the short public names of the training packages work as real import paths.

``skiff.nn`` and friends are attributes of ``skiff`` resolved lazily (``skiff.__getattr__``),
which covers ``skiff.nn.Linear`` and ``from skiff import nn`` but not an ``import`` statement
that names them. A meta-path finder maps ``skiff.nn[.X]`` to
``skiff.kernels.train.core.nn[.X]`` and hands back the real module object (so classes are the
same objects either way). Nothing is imported until such a name is imported.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

ALIASES = {
    "skiff.nn": "skiff.kernels.train.core.nn",
    "skiff.optim": "skiff.kernels.train.core.optim",
    "skiff.data": "skiff.kernels.train.data",
    "skiff.models": "skiff.kernels.train.models",
}


def real_name(name: str) -> str | None:
    """The module behind an alias (``skiff.nn.functional`` -> ``skiff.kernels.train.core.nn.
    functional``), or None when ``name`` is no alias."""
    for alias, real in ALIASES.items():
        if name == alias or name.startswith(alias + "."):
            return real + name[len(alias):]
    return None


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        real = real_name(fullname)
        if real is None or importlib.util.find_spec(real) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        return importlib.import_module(real_name(spec.name))

    def exec_module(self, module):  # the real module is already executed
        return None


def install() -> None:
    """Put the alias finder first on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _AliasFinder())  # before the path finder, which would load
        # a second copy of a submodule found through the real package's __path__
