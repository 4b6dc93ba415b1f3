"""The progress of a job whose ranks share the work (OCR's ``--np N``: rank r reads images
r, r + N, ...). Rank 0 writes progress events for its own part; the other ranks keep their
latest ``{"done", "total", "unit"}`` in ``ranks/R.progress``, written whole (a reader never
sees half of one). When the kernel said so (:meth:`RunReporter.split_progress`), the job's
state counts the whole job: a cancelled ``--np 2`` OCR of 43 images said "12/22 images",
rank 0's part, and now says "24/43 images"."""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["write_rank_progress", "read_rank_progress", "whole_progress"]


def _path(run_dir, rank: int) -> Path:
    return Path(run_dir) / "ranks" / f"{int(rank)}.progress"


def write_rank_progress(run_dir, rank: int, fields: dict) -> None:
    """Keep rank ``rank``'s latest progress; a full disk or a removed folder is not worth
    stopping the work for."""
    path = _path(run_dir, rank)
    tmp = path.with_name(path.name + ".tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps({k: fields.get(k) for k in ("done", "total", "unit")}))
        os.replace(tmp, path)
    except OSError:
        pass


def read_rank_progress(run_dir, rank: int) -> tuple[float, float | None] | None:
    """Rank ``rank``'s latest (done, total), or None (none yet, or unreadable)."""
    try:
        doc = json.loads(_path(run_dir, rank).read_text())
        done = float(doc.get("done") or 0)
        total = doc.get("total")
        return done, (float(total) if isinstance(total, (int, float)) and total > 0 else None)
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def whole_progress(state, run_dir, world: int) -> None:
    """Set ``state.done`` and ``state.total`` to the whole job's: rank 0's part (from its
    events, ``state.own``) and every other rank's latest. A rank that has not said its
    total yet leaves the total unknown (a bar that would jump back is worse than none)."""
    done, total = state.own
    if world <= 1:
        return
    for rank in range(1, world):
        theirs = read_rank_progress(run_dir, rank)
        if theirs is None:
            total = None
            continue
        done += theirs[0]
        total = None if total is None or theirs[1] is None else total + theirs[1]
    state.done, state.total, state.split = done, total, True
