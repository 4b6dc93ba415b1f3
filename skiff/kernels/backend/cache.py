"""Where skiff keeps files it builds on a machine (compiled shims, int8 models).

``SKIFF_CACHE``, else ``$XDG_CACHE_HOME/skiff``, else ``~/.cache/skiff``. Everything in it can
be deleted: it is built again when next needed.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir"]


def cache_dir() -> Path:
    """skiff's cache folder (it may not exist yet)."""
    if os.environ.get("SKIFF_CACHE"):
        return Path(os.environ["SKIFF_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "skiff"
