"""``launch``: create a run folder and start a job on the right runner."""

from __future__ import annotations

import time
from collections.abc import Callable

from .events import EventWriter
from .job import Job
from .kinds import KINDS
from .process import ProcessRunner
from .store import json_safe, new_run_dir, owner, write_json
from .thread import ThreadRunner

__all__ = ["launch", "RUNNERS"]

RUNNERS = ("auto", "thread", "process")

_THREAD = ThreadRunner()
_PROCESS = ProcessRunner()


def launch(kind: str, config: dict | None = None, *, fn: Callable | None = None, np: int = 1,
           runner: str = "auto", device: str | None = None, root=None,
           label: str | None = None) -> Job:
    """Start a job and return its :class:`Job` at once.

    ``kind`` names the job (``train``, ``solve``, ``ocr``, ``demo``, or any label when ``fn``
    is given). ``fn(config, reporter)`` runs it; without ``fn`` the kind's registered entry
    point does. ``np > 1`` or ``runner="process"`` runs it on ``np`` MPI ranks (then the
    config must be JSON and the kind registered); otherwise on a thread of this process.
    """
    config = dict(config or {})
    if runner not in RUNNERS:
        raise ValueError(f"unknown runner {runner!r}: choose from {', '.join(RUNNERS)}")
    if not isinstance(np, int) or np < 1:
        raise ValueError(f"np must be a positive integer, got {np!r}")
    use_process = runner == "process" or (runner == "auto" and np > 1)
    if runner == "thread" and np > 1:
        raise ValueError(f"a thread job runs on one rank; got np={np} (use runner='process')")
    if use_process and fn is not None:
        raise ValueError("a process job runs a registered kind, not a notebook function; "
                         f"registered kinds: {', '.join(sorted(KINDS))}")
    if fn is None and kind not in KINDS and ":" not in kind:
        raise ValueError(f"unknown job kind {kind!r}: choose from {', '.join(sorted(KINDS))}")
    job_id, run_dir = new_run_dir(kind.split(":")[-1].replace(".", "-"), root)
    target = kind if fn is None else f"<function {getattr(fn, '__qualname__', fn)!r}>"
    meta = {
        "id": job_id,
        "kind": kind,
        "label": label,
        "target": KINDS.get(kind, kind) if fn is None else target,
        "config": json_safe(config),
        "runner": "process" if use_process else "thread",
        "np": np,
        "device": device,
        "created": time.time(),
        "owner": owner(),
    }
    write_json(run_dir / "config.json", meta)
    EventWriter(run_dir / "events.jsonl", rank=-1).write("status", status="queued")
    job = Job(run_dir)
    if use_process:
        return _PROCESS.start(job, np)
    from .kinds import resolve_target

    return _THREAD.start(job, fn or resolve_target(kind), config)
