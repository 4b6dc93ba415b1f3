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

Permissions (one model, docs/events.md): private by default, folders 0700 and files 0600;
``SKIFF_RUNS_MODE=group`` makes them 0770 and 0660 for a group that shares a file system.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import tempfile
import time
from pathlib import Path

__all__ = ["RunFolderError", "DamagedRunFolder", "runs_root", "new_run_dir", "list_run_dirs",
           "find_run_dir", "named_run_dirs", "write_json", "read_json", "read_meta", "json_safe",
           "runs_mode", "dir_mode", "file_mode", "apply_mode", "RUNS_MODES"]

RUNS_MODES = {"private": (0o700, 0o600), "group": (0o770, 0o660)}
RUNNER_NAMES = ("thread", "process", "slurm")


class RunFolderError(OSError):
    """The runs root or a run folder cannot be created or written."""


class DamagedRunFolder(ValueError):
    """A run folder whose config.json cannot be read or makes no sense (the message says why)."""


def runs_mode() -> str:
    """``$SKIFF_RUNS_MODE``: ``private`` (default) or ``group``."""
    mode = (os.environ.get("SKIFF_RUNS_MODE") or "private").strip().lower()
    if mode not in RUNS_MODES:
        from skiff.grammar.common import did_you_mean

        raise RunFolderError(f"SKIFF_RUNS_MODE={mode!r}{did_you_mean(mode, RUNS_MODES)}: "
                             f"choose from {', '.join(RUNS_MODES)}")
    return mode


def dir_mode() -> int:
    return RUNS_MODES[runs_mode()][0]


def file_mode() -> int:
    return RUNS_MODES[runs_mode()][1]


def apply_mode(path: str | os.PathLike) -> None:
    """Give a run folder, and everything skiff wrote in it, the permissions of the model
    (files a kernel wrote with the process umask included); links are left alone."""
    dmode, fmode = dir_mode(), file_mode()
    root = Path(path)
    try:
        os.chmod(root, dmode)
    except OSError:
        return
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(folder, name)
            try:
                if os.path.islink(p):
                    continue
                os.chmod(p, dmode if name in dirs else fmode)
            except OSError:
                continue


def runs_root(root: str | os.PathLike | None = None) -> Path:
    """``$SKIFF_RUNS`` if set (not blank), else ``./skiff-runs``; ``~`` is the home folder (a quoted
    ``SKIFF_RUNS="~/runs"`` made a folder named ``~`` in the working folder). Always
    absolute: a relative ``SKIFF_RUNS=runs`` and a ``%cd`` in the notebook while a job ran
    made its next event land nowhere ("its run folder was removed while it ran": failed)."""
    if root is not None:
        return Path(root).expanduser().absolute()
    # a blank one (`SKIFF_RUNS= ` in a shell) is unset, as an empty one: it named a folder
    # of spaces in the working folder
    return Path(os.environ.get("SKIFF_RUNS", "").strip() and os.environ["SKIFF_RUNS"]
                or Path.cwd() / "skiff-runs").expanduser().absolute()


def new_job_id(kind: str) -> str:
    """``<date>-<time>-<kind>-<4 hex>``; the kind reduced to letters, digits, ``_`` and ``-``
    (a folder name that is safe in a path, a shell and a terminal)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", str(kind)).strip("-")[:40] or "job"
    return f"{stamp}-{name}-{secrets.token_hex(2)}"


def new_run_dir(kind: str, root: str | os.PathLike | None = None) -> tuple[str, Path]:
    """Create a fresh run folder; raise :class:`RunFolderError` with the path if impossible.
    An id taken already (jobs started in the same second that drew the same 4 hex digits: 1
    in 65,536 for two, ~7% for a hundred) is drawn again; it failed with "File exists (set
    SKIFF_RUNS to a writable folder)"."""
    base = runs_root(root)
    job_id = new_job_id(kind)
    path = base / job_id
    mode = dir_mode()
    try:
        if not base.is_dir():
            base.mkdir(parents=True, exist_ok=True, mode=mode)
        for _ in range(64):
            try:
                path.mkdir(mode=mode)  # atomic: of two processes, one makes it
                break
            except FileExistsError:
                job_id = new_job_id(kind)
                path = base / job_id
        else:
            path.mkdir(mode=mode)  # still taken after 64 draws: say so
        os.chmod(path, mode)  # mkdir's mode is cut by the umask
        for sub in ("logs", "artifacts", "ranks"):
            (path / sub).mkdir(mode=mode)
            os.chmod(path / sub, mode)
        probe = path / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        in_way = _file_in_the_way(base)
        why = f"{str(in_way)!r} is a file, not a folder" if in_way is not None else \
            (exc.strerror or str(exc))
        raise RunFolderError(
            f"cannot create run folder {str(path)!r}: {why} "
            f"(set SKIFF_RUNS to a writable folder)"
        ) from exc
    return job_id, path


def _file_in_the_way(base: Path) -> Path | None:
    """The runs root or the first of its parents that is there and is no folder (SKIFF_RUNS
    naming a file said "File exists", a path under a file "Not a directory")."""
    for folder in (base, *base.parents):
        if folder.exists() or folder.is_symlink():
            return None if folder.is_dir() else folder
    return None


def is_run_dir(path: Path) -> bool:
    """A folder with a config.json, or one this user cannot look into (shown as damaged)."""
    try:
        if not path.is_dir():
            return False
        os.stat(path / "config.json")
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return True


def list_run_dirs(root: str | os.PathLike | None = None) -> list[Path]:
    """Run folders under the root, oldest first (damaged ones included: see
    :func:`read_meta`)."""
    base = runs_root(root)
    try:
        entries = list(base.iterdir())
    except OSError:
        return []
    return sorted(p for p in entries if is_run_dir(p))


def find_run_dir(job_id: str, root: str | os.PathLike | None = None) -> Path:
    """The run folder of ``job_id``: the job of that id, else the newest job named
    ``job_id`` (``--name``), else the one whose id starts or ends with it (a unique prefix or
    suffix is enough). A name comes before a prefix or suffix: ``--name 2026`` was "job id
    '2026' is ambiguous" (every id starts with the year), and ``--name a83e`` found the
    other job whose id ends in a83e."""
    dirs = list_run_dirs(root)
    exact = [d for d in dirs if d.name == job_id]
    if exact:
        return exact[0]
    metas = [(d, read_json(d / "config.json")) for d in dirs]
    metas = [(d, meta) for d, meta in metas if isinstance(meta, dict)]
    names = {d: meta.get("name") for d, meta in metas if isinstance(meta.get("name"), str)}
    named = [(_created(meta), d) for d, meta in metas if names.get(d) == job_id]
    if named:  # newest by creation time: two ids of one second sort by their random tail
        return max(named)[1]
    close = [d for d in dirs if d.name.startswith(job_id) or d.name.endswith(job_id)]
    if len(close) == 1:
        return close[0]
    if not close:
        from skiff.grammar.common import did_you_mean

        # a mistyped --name (`jobs cancel lnog1`): the name it is closest to
        raise KeyError(f"no job {job_id!r}{did_you_mean(job_id, sorted(set(names.values())))}"
                       f" under {runs_root(root)}")
    shown = ", ".join(d.name for d in close[:5])
    more = f" and {len(close) - 5} more" if len(close) > 5 else ""
    raise KeyError(f"job id {job_id!r} is ambiguous: {shown}{more} (give more of the id)")


def named_run_dirs(name: str, root: str | os.PathLike | None = None
                   ) -> list[tuple[Path, dict]]:
    """``(folder, config)`` of every job whose ``--name`` is ``name``, oldest first by
    creation time; empty when ``name`` is a job's whole id (that job is meant) or no job's
    name."""
    if os.sep not in name and name not in ("", ".", "..") and \
            is_run_dir(runs_root(root) / name):  # a whole id: no folder listed
        return []
    dirs = list_run_dirs(root)
    if any(d.name == name for d in dirs):
        return []
    found = []
    for d in dirs:
        meta = read_json(d / "config.json")
        if isinstance(meta, dict) and meta.get("name") == name:
            found.append((_created(meta), d.name, d, meta))
    return [(d, meta) for _, _, d, meta in sorted(found, key=lambda t: t[:2])]


def _created(meta: dict) -> float:
    value = meta.get("created")
    return float(value) if isinstance(value, (int, float)) else float("-inf")


def write_json(path: Path, data, *, long_values_on_one_line: bool = False) -> None:
    """Write JSON atomically: a temp file in the same folder, then rename (file mode of the
    permission model).

    ``long_values_on_one_line`` (a result): a top-level value whose JSON is long (a
    training's history, one entry per step) is written on one line, by json's C encoder;
    the others are indented as always (the file is the same bytes when none is long). An
    indented 200,000-step result (36 MB) took 4.3-5.0 s to write (json indents in Python) in
    the job's last moments; 2.5-3.4 s now, most of it :func:`json_safe`."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, file_mode())
        with os.fdopen(fd, "w") as fh:
            safe = json_safe(data)
            if long_values_on_one_line and isinstance(safe, dict) and safe:
                fh.write(_top_level_indented(safe))
            else:
                json.dump(safe, fh, indent=1)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


_LONG_VALUE = 100_000  # characters of a top-level value's JSON written on one line


def _top_level_indented(data: dict) -> str:
    """``json.dumps(data, indent=1)``, except that each value whose JSON is longer than
    :data:`_LONG_VALUE` stays on one line (compact, by the C encoder)."""
    items = []
    for key, value in data.items():
        text = json.dumps(value)
        if len(text) <= _LONG_VALUE:
            text = json.dumps(value, indent=1).replace("\n", "\n ")
        items.append(f" {json.dumps(key)}: {text}")
    return "{\n" + ",\n".join(items) + "\n}"


def read_json(path: Path, default=None):
    try:
        with open(path) as fh:
            return json.load(fh)
    except (FileNotFoundError, ValueError):
        return default


def _positive_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def read_meta(run_dir: str | os.PathLike) -> dict:
    """The content of a run folder's config.json, checked; :class:`DamagedRunFolder` (with
    why, in one line) when it is missing, unreadable, not JSON or not a job's description."""
    path = Path(run_dir) / "config.json"
    try:
        with open(path, "rb") as fh:
            raw = fh.read(4 << 20)
    except FileNotFoundError:
        raise DamagedRunFolder("no config.json") from None
    except PermissionError:
        raise DamagedRunFolder("permission denied (the folder or its config.json is not "
                               "readable by this user)") from None
    except OSError as exc:
        raise DamagedRunFolder(f"config.json cannot be read: {exc.strerror or exc}") from None
    if not raw.strip():  # a write cut short (a full disk, a kill mid-write)
        raise DamagedRunFolder("config.json is empty")
    try:  # as UTF-8, which skiff writes: bytes read as JSON guessed at UTF-16 from a NUL and
        # said "'utf-16-be' codec can't decode byte 0x7b" of a damaged file (round 44)
        meta = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise DamagedRunFolder(f"config.json is not JSON (not UTF-8 text: byte "
                               f"0x{raw[exc.start]:02x} at offset {exc.start})") from None
    except ValueError as exc:
        raise DamagedRunFolder(f"config.json is not JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise DamagedRunFolder(f"config.json holds a JSON {type(meta).__name__}, not an object")
    checks = (
        ("id", lambda v: isinstance(v, str) and v != "", "a non-empty string"),
        ("kind", lambda v: isinstance(v, str) and v != "", "a non-empty string"),
        ("config", lambda v: isinstance(v, dict), "an object"),
        ("np", _positive_int, "a positive integer"),
        ("runner", lambda v: v in RUNNER_NAMES, " or ".join(RUNNER_NAMES)),
        ("label", lambda v: v is None or isinstance(v, str), "a string or null"),
        ("target", lambda v: isinstance(v, str), "a string"),
        ("device", lambda v: v is None or isinstance(v, str), "a string or null"),
        ("created", lambda v: v is None or (isinstance(v, (int, float))
                                            and not isinstance(v, bool)), "a number"),
        ("owner", lambda v: isinstance(v, dict), "an object"),
    )
    optional = ("np", "runner", "label", "device", "created", "owner", "target")
    for key, ok, want in checks:
        if key not in meta:
            if key in optional:
                continue
            raise DamagedRunFolder(f"config.json has no {key!r}")
        if not ok(meta[key]):
            raise DamagedRunFolder(f"config.json: {key} must be {want}, got "
                                   f"{json.dumps(meta[key], default=str)[:60]}")
    return meta


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
    if not pid or isinstance(pid, bool):
        return False
    try:
        pid = int(pid)
    except (TypeError, ValueError):
        return False
    if pid <= 0:
        return False  # 0 and negative numbers name process groups, never one process
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except PermissionError:
        return True
    # a zombie child still answers kill(0): look at its state where /proc exists
    fields = proc_stat(pid)
    return fields is None or fields[0] != "Z"


def proc_stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (``[0]`` is the state,
    ``[19]`` the start time in clock ticks since boot), or None when it cannot be read
    (the process is gone, or there is no /proc)."""
    try:
        with open(f"/proc/{int(pid)}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()
    except (OSError, ValueError, IndexError):
        return None
