"""Single-process checkpoints: one ``.npz`` file per step, written atomically, never pickled.

A checkpoint holds a nested state (dicts, lists, tuples, numbers, strings, None and numpy
arrays): the model's weights, the optimizer state, the RNG states, the data position and the
step. Arrays go into the npz archive under generated keys; everything else goes, as JSON, into
one ``__meta__`` member that also maps the keys back into the tree. Loading uses
``allow_pickle=False``, so a checkpoint can never run code.

Writing goes to ``.step-00000012.npz.tmp`` in the same folder, is flushed and fsynced, then
renamed to ``step-00000012.npz``: a reader sees a whole checkpoint or none. The newest ``keep``
checkpoints are kept. The zip members carry CRCs, so a damaged file fails to load;
:func:`load_latest` then reports it and falls back to the one before.

Sharded checkpoints for many ranks (a manifest written last) are the distributed strategies'
business; they plug in through :meth:`skiff.kernels.train.strategy.Strategy.save_checkpoint`.
"""

from __future__ import annotations

import json
import os
import re
import zipfile
from pathlib import Path

import numpy as np

__all__ = ["save_checkpoint", "load_checkpoint", "list_checkpoints", "load_latest",
           "CheckpointError", "flatten_state", "unflatten_state", "typed_array",
           "write_history_chunk", "history_ref", "sweep_history", "is_history_ref",
           "read_history", "resolve_history"]

_NAME = re.compile(r"^step-(\d{8,})\.npz$")
FORMAT = "skiff-checkpoint/1"


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be read (truncated, corrupt, or not a skiff checkpoint)."""


# ------------------------------------------------------------------------------------------
def flatten_state(state, *, rows: bool = False) -> tuple[object, dict[str, np.ndarray]]:
    """(JSON tree, arrays): arrays replaced by ``{"__array__": key}`` references.

    ``rows=True`` also stores each list of flat dicts of Python numbers (a loss history) as
    one array per column (``{"__rows__": ...}``; :func:`unflatten_state` reads it back equal,
    of the same types and key order): a history of 30,000 rows is then 1.4 MB of arrays, not
    5.4 MB of JSON written at every checkpoint. The sharded checkpoints
    (:mod:`.parallel.checkpoint`) store theirs so too."""
    arrays: dict[str, np.ndarray] = {}

    def walk(obj, path):
        if isinstance(obj, np.ndarray) or _is_device_array(obj):
            key = f"a{len(arrays):05d}:{path}"[:200]
            arr = np.asarray(obj.get() if hasattr(obj, "get") and
                             not isinstance(obj, np.ndarray) else obj)
            if arr.dtype.kind == "V" or arr.dtype.type.__module__.startswith("ml_dtypes"):
                # bfloat16 (ml_dtypes) is saved by npz as raw bytes ("|V2") that cast to
                # nothing: store its bits and name the dtype, so it loads as bfloat16
                arrays[key] = arr.view(np.dtype(f"u{arr.dtype.itemsize}"))
                return {"__array__": key, "dtype": str(arr.dtype)}
            arrays[key] = arr
            return {"__array__": key}
        if isinstance(obj, np.generic):
            return walk(np.asarray(obj), path)
        if isinstance(obj, dict):
            if all(isinstance(k, str) for k in obj):
                return {"__dict__": {k: walk(v, f"{path}/{k}") for k, v in obj.items()}}
            for k in obj:  # integer keys (optimizer state per parameter index) keep their type
                if not isinstance(k, (str, int)) or isinstance(k, bool):
                    raise TypeError(f"checkpoint dict keys must be strings or integers, got "
                                    f"{k!r} at {path}")
            return {"__items__": [[int(k) if not isinstance(k, str) else k,
                                   walk(v, f"{path}/{k}")] for k, v in obj.items()]}
        if isinstance(obj, tuple):
            return {"__tuple__": [walk(v, f"{path}/{i}") for i, v in enumerate(obj)]}
        if isinstance(obj, list):
            found = _row_columns(obj) if rows else None
            if found is not None:  # a history: one array per column, not a JSON object a row
                layouts, layout, columns, scalars = found
                refs = {}
                for k, col in columns.items():
                    refs[k] = {"__array__": f"a{len(arrays):05d}:{path}/{k}"[:200]}
                    arrays[refs[k]["__array__"]] = col
                out = {"n": len(obj), "layouts": layouts, "columns": refs, "layout": None}
                if scalars:
                    out["scalars"] = scalars
                if layout is not None:
                    out["layout"] = {"__array__": f"a{len(arrays):05d}:{path}/layout"[:200]}
                    arrays[out["layout"]["__array__"]] = layout
                return {"__rows__": out}
            return [walk(v, f"{path}/{i}") for i, v in enumerate(obj)]
        if obj is None or isinstance(obj, (bool, int, float, str)):
            if isinstance(obj, float) and not np.isfinite(obj):
                return {"__float__": repr(obj)}
            return obj
        raise TypeError(f"cannot store {type(obj).__name__} at {path or '/'} in a checkpoint "
                        "(use arrays, numbers, strings, lists and dicts)")

    return walk(state, ""), arrays


def unflatten_state(tree, arrays) -> object:
    """Inverse of :func:`flatten_state`."""
    if isinstance(tree, list):
        return [unflatten_state(v, arrays) for v in tree]
    if isinstance(tree, dict):
        if "__array__" in tree:
            return typed_array(arrays[tree["__array__"]], tree.get("dtype"))
        if "__tuple__" in tree:
            return tuple(unflatten_state(v, arrays) for v in tree["__tuple__"])
        if "__rows__" in tree:
            return _rows_from_columns(tree["__rows__"], arrays)
        if "__float__" in tree:
            return float(tree["__float__"])
        if "__items__" in tree:
            return {k: unflatten_state(v, arrays) for k, v in tree["__items__"]}
        return {k: unflatten_state(v, arrays) for k, v in tree["__dict__"].items()}
    return tree


_COLUMN_DTYPES = {float: np.float64, int: np.int64, bool: np.bool_}


def _column_dtype(t: type):
    """The array dtype of a column of values of type ``t`` (a Python number, or a numpy
    scalar of a real number type), or None."""
    if t in _COLUMN_DTYPES:
        return np.dtype(_COLUMN_DTYPES[t])
    if issubclass(t, np.generic) and np.dtype(t).kind in "biuf":
        return np.dtype(t)
    return None


def _row_columns(rows: list):
    """A list of flat dicts of numbers (a loss history) as columns: (the distinct key orders,
    each row's index into them or None when all rows share one, {key: array}, the keys whose
    values are numpy scalars); None when the list is anything else (then it is stored as it
    was). Each column holds one type, so the rows come back equal and of the same types
    (Python floats as Python floats, numpy scalars as numpy scalars), key order included."""
    if not rows or not all(type(r) is dict for r in rows):
        return None
    layouts: dict[tuple, int] = {}
    layout = np.empty(len(rows), dtype=np.int32)
    kinds: dict[str, type] = {}
    for i, row in enumerate(rows):
        keys = tuple(row)
        for k in keys:
            t = type(row[k])
            if not isinstance(k, str) or kinds.setdefault(k, t) is not t:
                return None
            if t is int and not -2**63 <= row[k] < 2**63:
                return None
        layout[i] = layouts.setdefault(keys, len(layouts))
    dtypes = {k: _column_dtype(t) for k, t in kinds.items()}
    if any(d is None for d in dtypes.values()):
        return None
    columns = {}
    for k, dtype in dtypes.items():
        col = np.zeros(len(rows), dtype=dtype)
        for i, row in enumerate(rows):
            if k in row:
                col[i] = row[k]
        columns[k] = col
    scalars = [k for k, t in kinds.items() if t not in _COLUMN_DTYPES]
    return ([list(keys) for keys in layouts], (None if len(layouts) == 1 else layout), columns,
            scalars)


def _rows_from_columns(tree: dict, arrays) -> list:
    """Inverse of :func:`_row_columns`."""
    n, layouts, scalars = tree["n"], tree["layouts"], set(tree.get("scalars", ()))
    columns = {k: (list if k in scalars else np.ndarray.tolist)(arrays[ref["__array__"]])
               for k, ref in tree["columns"].items()}
    layout = ([0] * n if tree.get("layout") is None
              else arrays[tree["layout"]["__array__"]].tolist())
    return [{k: columns[k][i] for k in layouts[j]} for i, j in enumerate(layout)]


def typed_array(arr: np.ndarray, dtype: str | None) -> np.ndarray:
    """A stored array in the dtype it was saved in: ``dtype`` names a type npz cannot hold
    (bfloat16, stored as its bits); a 2-byte raw array of a checkpoint written before the
    name was kept is bfloat16 too (the only such dtype skiff trains in)."""
    if dtype is None and arr.dtype.kind == "V" and arr.dtype.itemsize == 2:
        dtype = "bfloat16"
    if dtype is None or str(arr.dtype) == dtype:
        return arr
    from .core.tensor import _as_dtype

    return arr.view(_as_dtype(dtype))


def _is_device_array(obj) -> bool:
    return type(obj).__module__.startswith("cupy") and hasattr(obj, "get")


# ------------------------------------------------------------------------------------------
def checkpoint_name(step: int) -> str:
    return f"step-{int(step):08d}.npz"


def save_checkpoint(directory: str | os.PathLike, state: dict, *, step: int,
                    keep: int | None = 3) -> Path:
    """Write ``state`` as the checkpoint of ``step`` in ``directory``; return its path.

    Parameters
    ----------
    directory : path
        Created when missing.
    state : dict
        Nested state; arrays anywhere in it are stored natively.
    step : int
        The optimizer step the state is *after*; names the file.
    keep : int or None
        Keep the newest ``keep`` checkpoints and delete older ones (None keeps all).
    """
    if keep is not None and keep < 1:
        raise ValueError(f"keep must be at least 1 (or None for all), got {keep!r}")
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    tree, arrays = flatten_state(state, rows=True)
    meta = {"format": FORMAT, "step": int(step), "state": tree}
    blob = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    final = folder / checkpoint_name(step)
    tmp = folder / f".{final.name}.tmp"
    with open(tmp, "wb") as fh:
        np.savez(fh, __meta__=blob, **arrays)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, final)
    _fsync_dir(folder)
    if keep is not None:
        # one file is its own commit marker: a single unlink removes a checkpoint whole
        for old in list_checkpoints(folder)[:-keep]:
            old.unlink(missing_ok=True)
    return final


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def list_checkpoints(directory: str | os.PathLike) -> list[Path]:
    """Complete checkpoint files in ``directory``, oldest first (temp files are ignored)."""
    folder = Path(directory)
    if not folder.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in folder.iterdir() if (m := _NAME.match(p.name))]
    return [p for _, p in sorted(found)]


def load_checkpoint(path: str | os.PathLike) -> dict:
    """The state stored at ``path`` plus ``"step"``; raises :class:`CheckpointError`."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(bytes(z["__meta__"]).decode("utf-8"))
            if meta.get("format") != FORMAT:
                raise CheckpointError(f"{path} is not a skiff checkpoint "
                                      f"(format {meta.get('format')!r})")
            arrays = {k: z[k] for k in z.files if k != "__meta__"}
    except CheckpointError:
        raise
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError,
            json.JSONDecodeError) as exc:
        raise CheckpointError(f"cannot read checkpoint {path}: {type(exc).__name__}: {exc}") \
            from exc
    state = unflatten_state(meta["state"], arrays)
    if isinstance(state, dict):
        state.setdefault("step", meta["step"])
        resolve_history(state, path.parent)
    return state


HISTORY_FORMAT = "skiff-history/1"
HISTORY_PREFIX = "history-"  # files beside the checkpoints (no folder: `rm ck/*` works)


def history_chunk_name(start: int, end: int) -> str:
    """The side file of history rows ``[start, end)``, relative to the checkpoint folder."""
    return f"{HISTORY_PREFIX}{int(start):08d}-{int(end):08d}.npz"


def write_history_chunk(directory: str | os.PathLike, rows: list, start: int) -> str:
    """Write history rows ``start, start + 1, ...`` as a side file of the checkpoint folder
    (columns, as :func:`flatten_state` stores a history) and return its name.

    A run's loss history was stored whole in every checkpoint (1.44 of a 1.5 MB checkpoint
    at 30,000 steps); each checkpoint now writes the rows since the last one once and lists
    the files (:func:`history_ref`), which :func:`read_history` joins (round 34)."""
    name = history_chunk_name(start, start + len(rows))
    path = Path(directory) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    tree, arrays = flatten_state({"rows": list(rows), "start": int(start)}, rows=True)
    blob = np.frombuffer(json.dumps({"format": HISTORY_FORMAT, "state": tree}).encode(),
                         dtype=np.uint8)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")  # a writer's own, whatever
    with open(tmp, "wb") as fh:                                # else writes the same name
        np.savez(fh, __meta__=blob, **arrays)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return name


def history_ref(chunks: list[str], n: int) -> dict:
    """What a checkpoint stores in place of its history: the side files, in order, and the
    number of rows they hold together."""
    return {"format": HISTORY_FORMAT, "n": int(n), "chunks": list(chunks)}


def is_history_ref(value) -> bool:
    return isinstance(value, dict) and value.get("format") == HISTORY_FORMAT


def read_history(directory: str | os.PathLike, ref: dict) -> tuple[list, str | None]:
    """``(rows, problem)``: the history rows a checkpoint's :func:`history_ref` lists, read
    from its folder; ``([], why)`` when a side file is missing or damaged (a checkpoint
    copied without its ``history-*.npz`` files): the weights and the rest still load."""
    rows: list = []
    for name in ref.get("chunks", []):
        path = Path(directory) / name
        try:
            with np.load(path, allow_pickle=False) as z:
                meta = json.loads(bytes(z["__meta__"]).decode("utf-8"))
                arrays = {k: z[k] for k in z.files if k != "__meta__"}
            part = unflatten_state(meta["state"], arrays)
        except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as exc:
            return [], (f"the loss history is not all there ({name} in {directory}: "
                        f"{type(exc).__name__}: {exc}); a checkpoint copied without its "
                        f"{HISTORY_PREFIX}*.npz files?")
        if part.get("start") != len(rows):
            return [], f"the loss history's side files do not join ({name})"
        rows.extend(part["rows"])
    if len(rows) != ref.get("n"):
        return [], f"the loss history holds {len(rows)} rows, its checkpoint {ref.get('n')}"
    return rows, None


def _listed_chunks(tree, found: set) -> bool:
    """Add the side files the history refs in a checkpoint's JSON tree list to ``found``;
    False where a ref's list is not plain names (then nothing may be removed)."""
    if isinstance(tree, dict):
        if tree.get("format") == HISTORY_FORMAT:
            chunks = tree.get("chunks")
            if not (isinstance(chunks, list) and all(isinstance(c, str) for c in chunks)):
                return False
            found.update(chunks)
            return True
        return all(_listed_chunks(v, found) for v in tree.values())
    if isinstance(tree, list):
        return all(_listed_chunks(v, found) for v in tree)
    return True


def sweep_history(directory: str | os.PathLike) -> list[str]:
    """Remove the ``history-*.npz`` side files of ``directory`` that no checkpoint in it
    lists (round 34): the chunks of a run before its resume, of an earlier run into the same
    folder, and those before a join whose checkpoints were rotated out. Every checkpoint
    (``step-N.npz``, and each shard of a sharded ``step-N/``, committed or not) is read for
    what it lists (its JSON only); where one cannot be read nothing is removed. The names
    removed."""
    folder = Path(directory)
    if not folder.is_dir():
        return []
    files = [p for p in folder.iterdir() if p.name.startswith(HISTORY_PREFIX)
             and p.name.endswith(".npz") and p.is_file()]
    if not files:
        return []
    listed: set = set()
    for entry in folder.iterdir():
        if not re.match(r"^step-\d{8,}(\.npz)?$", entry.name):
            continue
        paths = sorted(entry.glob("shard-*.npz")) if entry.is_dir() else [entry]
        for path in paths:
            try:
                with np.load(path, allow_pickle=False) as z:
                    meta = json.loads(bytes(z["__meta__"]).decode("utf-8"))
            except FileNotFoundError:   # rotated out meanwhile: it lists nothing now
                continue
            except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError):
                return []
            if not _listed_chunks(meta.get("state"), listed):
                return []
    removed = []
    for path in files:
        if path.name not in listed:
            path.unlink(missing_ok=True)
            removed.append(path.name)
    return sorted(removed)


def resolve_history(state, directory) -> None:
    """Put the rows back into a loaded ``state`` whose history is a :func:`history_ref`
    (``state["history_note"]`` says why when they cannot be read)."""
    if isinstance(state, dict) and is_history_ref(state.get("history")):
        ref = state["history"]
        rows, problem = read_history(directory, ref)
        state["history"] = rows
        if problem:
            state["history_note"] = problem
        else:  # the side files the run's next checkpoints go on from
            state["history_ref"] = ref


def load_latest(directory: str | os.PathLike, *, on_corrupt=None) -> tuple[Path, dict] | None:
    """The newest checkpoint in ``directory`` that loads, as ``(path, state)``; None if none.

    A damaged one is skipped after calling ``on_corrupt(path, error)``.
    """
    for path in reversed(list_checkpoints(directory)):
        try:
            return path, load_checkpoint(path)
        except CheckpointError as exc:
            if on_corrupt is not None:
                on_corrupt(path, exc)
    return None
