"""``notebooks/build.py`` loaded as a module, for tests that check a notebook is up to date."""

from __future__ import annotations

import importlib.util

from tests.notebook_util import NOTEBOOKS

_spec = importlib.util.spec_from_file_location("skiff_notebooks_build", NOTEBOOKS / "build.py")
build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build)
build_main = build.main
