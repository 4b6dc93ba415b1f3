"""Each MPI rank of a process job, read from its run folder: alive or how it ended, and the last
lines it wrote.

What a rank leaves (see :mod:`skiff.jobs.worker`): ``ranks/<r>.pid`` and ``ranks/<r>.host`` when
it starts, ``ranks/<r>.exit`` (its exit code) when it ends by itself, ``ranks/<r>.left`` (the
peer whose death it followed) when its watchdog made it leave; ``logs/rank<r>.out`` what it
printed (stdout and stderr), ``logs/rank<r>.log`` its reporter's lines,
``logs/traceback-rank<r>.txt`` when it raised, ``logs/fault-rank<r>.txt`` a crash report. Nothing
here writes; a rank on another host is only "running" or ended (its pid means nothing here).
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from pathlib import Path

from .store import pid_alive

__all__ = ["RankState", "rank_states", "tail_lines"]

TAIL_BYTES = 16384


@dataclass
class RankState:
    rank: int
    status: str                 # starting | running | exited | failed | left | died
    pid: int | None = None
    host: str | None = None
    code: int | None = None     # exit code (exited, failed)
    detail: str = ""            # why (left after rank P died, the crash report's first line)
    lines: list = field(default_factory=list)   # the last lines it wrote

    def summary(self) -> str:
        """``rank 1 (pid 123) exited 0`` and the like."""
        where = f" (pid {self.pid}" + (f" on {self.host}" if self.host and not _here(
            self.host) else "") + ")" if self.pid else ""
        what = {"exited": f"exited {self.code}", "failed": f"failed (exit {self.code})"}.get(
            self.status, self.status)
        return f"rank {self.rank}{where} {what}" + (f": {self.detail}" if self.detail else "")


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return None


def _int(text: str | None) -> int | None:
    try:
        return int(str(text).strip())
    except (TypeError, ValueError):
        return None


def _here(host: str) -> bool:
    return host in (socket.gethostname(), "localhost")


def tail_lines(path: Path, n: int) -> list[str]:
    """The last ``n`` non-empty lines of a text file (read from its last 16 KiB)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(0, size - TAIL_BYTES))
            data = fh.read().decode(errors="replace")
    except OSError:
        return []
    return [line for line in data.splitlines() if line.strip()][-n:] if n > 0 else []


def rank_states(run_dir, world_size: int | None = None, *, lines: int = 3) -> list[RankState]:
    """One :class:`RankState` per rank (``world_size`` ranks, else those that started), with
    the last ``lines`` lines each wrote: what it printed, else its reporter's log."""
    run_dir = Path(run_dir)
    ranks, logs = run_dir / "ranks", run_dir / "logs"
    started = sorted({_int(p.name.split(".")[0]) for p in ranks.glob("*.pid")} - {None})
    count = world_size or (max(started) + 1 if started else 0)
    out = []
    for r in range(count):
        pid = _int(_read(ranks / f"{r}.pid"))
        host = (_read(ranks / f"{r}.host") or "").strip() or None
        code = _int(_read(ranks / f"{r}.exit"))
        left = _read(ranks / f"{r}.left")
        state = RankState(r, "starting", pid, host)
        if code is not None:
            state.status, state.code = ("exited" if code == 0 else "failed"), code
        elif left is not None:
            state.status, state.detail = "left", f"after rank {left.strip()} died"
        elif pid is not None:
            alive = pid_alive(pid) if host is None or _here(host) else True
            state.status = "running" if alive else "died"
            if not alive:
                fault = [ln for ln in (_read(logs / f"fault-rank{r}.txt") or "").splitlines()
                         if ln.strip()]
                state.detail = fault[0] if fault else "no clean exit and no crash report " \
                    "(killed: SIGKILL or out of memory)"
        tb = tail_lines(logs / f"traceback-rank{r}.txt", 1)
        if state.status == "failed" and tb:
            state.detail = tb[0]
        state.lines = tail_lines(logs / f"rank{r}.out", lines) or \
            tail_lines(logs / f"rank{r}.log", lines)
        out.append(state)
    failed = [s.rank for s in out if s.status == "failed"]
    for state in out:  # a rank the launcher ended once another failed (round 47 h11: a bad
        # column on rank 1 said rank 0 was "killed: SIGKILL or out of memory")
        if failed and state.status == "died" and state.detail and \
                state.detail.startswith("no clean exit and no crash report"):
            state.detail = (f"ended after rank {', '.join(map(str, failed))} failed (no exit "
                            "of its own)")
    return out
