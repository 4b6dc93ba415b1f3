"""Run folders: where the state of every job lives (``skiff-runs/<job-id>/``).

Layout of a run folder::

    config.json     what was asked: id, kind, target, config, runner, ranks, device, owner
    events.jsonl    append-only event log (see docs/events.md)
    result.json     the JSON summary of the result, written once when the job is done
    process.json    for process jobs: the launcher's pid and command
    ranks/          <rank>.pid at start and <rank>.exit at a clean exit, per MPI rank
    logs/           rank<N>.log (reporter lines), launcher.log (mpiexec output), traceback.txt
    artifacts/      files the job produced (plots, checkpoints, exports)
    cancel          present once a cancel was asked for
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import tempfile
import time
from pathlib import Path

__all__ = ["RunFolderError", "runs_root", "new_run_dir", "list_run_dirs", "find_run_dir",
           "write_json", "read_json", "json_safe"]


class RunFolderError(OSError):
    """The runs root or a run folder cannot be created or written."""


def runs_root(root: str | os.PathLike | None = None) -> Path:
    """``$SKIFF_RUNS`` if set, else ``./skiff-runs``."""
    if root is not None:
        return Path(root)
    return Path(os.environ.get("SKIFF_RUNS") or Path.cwd() / "skiff-runs")


def new_job_id(kind: str) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{kind}-{secrets.token_hex(2)}"


def new_run_dir(kind: str, root: str | os.PathLike | None = None) -> tuple[str, Path]:
    """Create a fresh run folder; raise :class:`RunFolderError` with the path if impossible."""
    base = runs_root(root)
    job_id = new_job_id(kind)
    path = base / job_id
    try:
        base.mkdir(parents=True, exist_ok=True)
        path.mkdir()
        for sub in ("logs", "artifacts", "ranks"):
            (path / sub).mkdir()
        probe = path / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise RunFolderError(
            f"cannot create run folder {str(path)!r}: {exc.strerror or exc} "
            f"(set SKIFF_RUNS to a writable folder)"
        ) from exc
    return job_id, path


def list_run_dirs(root: str | os.PathLike | None = None) -> list[Path]:
    """Run folders under the root, oldest first."""
    base = runs_root(root)
    if not base.is_dir():
        return []
    return sorted(p for p in base.iterdir() if (p / "config.json").is_file())


def find_run_dir(job_id: str, root: str | os.PathLike | None = None) -> Path:
    """The run folder of ``job_id`` (a unique prefix or suffix is enough)."""
    dirs = list_run_dirs(root)
    exact = [d for d in dirs if d.name == job_id]
    if exact:
        return exact[0]
    close = [d for d in dirs if d.name.startswith(job_id) or d.name.endswith(job_id)]
    if len(close) == 1:
        return close[0]
    if not close:
        raise KeyError(f"no job {job_id!r} under {runs_root(root)}")
    names = ", ".join(d.name for d in close[:5])
    raise KeyError(f"job id {job_id!r} is ambiguous: {names}")


def write_json(path: Path, data) -> None:
    """Write JSON atomically: a temp file in the same folder, then rename."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(json_safe(data), fh, indent=1)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_json(path: Path, default=None):
    try:
        with open(path) as fh:
            return json.load(fh)
    except (FileNotFoundError, ValueError):
        return default


def json_safe(value, _depth=0):
    """A JSON-serialisable copy: arrays become lists (small) or a description, objects a repr."""
    if _depth > 20:
        return repr(value)
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else repr(value)
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, dict):
        return {str(k): json_safe(v, _depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v, _depth + 1) for v in value]
    if hasattr(value, "to_json"):
        return json_safe(value.to_json(), _depth + 1)
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        if getattr(value, "size", 0) <= 64:
            return json_safe(value.tolist(), _depth + 1)
        return f"<array shape={tuple(value.shape)} dtype={value.dtype}>"
    if hasattr(value, "item") and callable(value.item):
        try:
            return json_safe(value.item(), _depth + 1)
        except Exception:
            pass
    return repr(value)


def owner() -> dict:
    return {"pid": os.getpid(), "host": socket.gethostname()}


def pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie child still answers kill(0): look at its state where /proc exists
    try:
        with open(f"/proc/{int(pid)}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True
