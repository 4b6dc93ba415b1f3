"""Writing a benchmark's results page without losing what earlier runs said.

A page in ``benchmarks/results/`` holds the latest run at the top, then, under "Earlier
runs", everything the page said before (its tables and the readings written under them by
hand). ``collect.py`` gathers the pages into ``RESULTS.md``.
"""

from __future__ import annotations

import time
from pathlib import Path

__all__ = ["write_keeping_earlier", "publish"]


def write_keeping_earlier(path: str | Path, text: str) -> Path:
    """Write ``text`` (starting with the page's ``# title``) to ``path``; the page's former
    content, less its title, follows under ``## Earlier runs (before <now>)``."""
    path = Path(path)
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    if old.startswith("# "):
        old = old.split("\n", 1)[1] if "\n" in old else ""
    doc = text.rstrip("\n") + "\n"
    if old.strip():
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        doc += f"\n## Earlier runs (before {when})\n\n{old.strip()}\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(doc, encoding="utf-8")
    return path


def publish(path: str | Path, lines: list[str]) -> Path:
    """Print a run's page (``lines``) and write it to ``path`` above what the page said
    before (:func:`write_keeping_earlier`); says where on stderr."""
    import sys

    text = "\n".join(lines)
    print(text)
    out = write_keeping_earlier(path, text + "\n")
    print(f"written {out}", file=sys.stderr)
    return out

