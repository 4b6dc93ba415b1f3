"""Sharded checkpoints that stay consistent across ranks and load on another world size.

Layout of one checkpoint, a folder per step::

    ckpt/step-00000012/shard-00000.npz   rank 0: the replicated state + its own shards
    ckpt/step-00000012/shard-00001.npz   rank 1: its own shards
    ckpt/step-00000012/manifest.json     written LAST by rank 0: the commit marker
    ckpt/latest                          "step-00000012", moved only after the manifest

Protocol: every rank writes its shard (temp file, fsync, rename) and its sha256; rank 0
gathers the checksums, writes the manifest (layout, world size, step, per-array shard specs,
checksums) and only then moves ``latest``; then the checkpoints beyond the newest ``keep``
are deleted, each manifest first (:func:`remove_checkpoint`). A folder without a manifest
is a partial write and is never loaded; a shard whose checksum differs is reported as
corrupt and the previous checkpoint is used. Rank 0 decides which checkpoint to load and
tells the others, so all ranks resume from the same step.

Resharding: a flat-sharded array (:class:`FlatShard`: ZeRO's optimizer state and master
weights, any 1-d split of a global vector by :func:`flat_range`) is reassembled from every old
shard and split again for the new world size. Per-rank state (:class:`PerRank`, e.g. the
error-feedback residuals of gradient compression) goes back to the same rank when the world
size is unchanged, and is dropped (None) otherwise.

Split models (tensor and pipeline parallel) save :class:`Piece` s instead: each rank writes
only the parameters and optimizer state it owns, each a piece of a named global array with
the global positions it holds along its split axis (a tensor-parallel slice, or a whole
pipeline stage's array); nothing is gathered. A load asks, for each name, for the positions
this rank needs (``select``), in any layout, and reads just those rows of the pieces that
hold them: pieces are stored with their split axis first in uncompressed ``.npz`` members,
so a run of positions is one seek and one read. :data:`WRITE_STATS` and :data:`READ_STATS`
count the bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import struct
import zipfile
from pathlib import Path

import numpy as np

from skiff.kernels.backend import to_numpy
from skiff.kernels.train.checkpoint import (
    CheckpointError,
    _fsync_dir,
    _rows_from_columns,
    flatten_state,
    typed_array,
)

from .comm import Comm

__all__ = ["FlatShard", "PerRank", "Piece", "flat_range", "save_sharded", "load_sharded",
           "list_sharded", "remove_checkpoint", "CheckpointError", "FORMAT", "READ_STATS",
           "WRITE_STATS"]

FORMAT = "skiff-sharded-checkpoint/1"
_NAME = re.compile(r"^step-(\d{8,})$")


class FlatShard:
    """This rank's piece of a global 1-d array of ``size`` elements split by :func:`flat_range`."""

    def __init__(self, array, size: int):
        self.array = np.asarray(to_numpy(array))  # a cupy shard is saved from the host
        self.size = int(size)


class PerRank:
    """State that belongs to this rank alone (kept only when the world size is unchanged)."""

    def __init__(self, value):
        self.value = value


class Piece:
    """This rank's piece of a global array of ``shape``: the positions ``index`` along
    ``axis``, in the order the piece holds them (e.g. the ``rows`` of a column-parallel
    layer: runs of q, k and v heads); ``axis=None``: the whole array. Stored with ``axis``
    moved first, so that any run of positions reads in one go."""

    def __init__(self, array, shape, axis: int | None = None, index=None):
        a = np.asarray(to_numpy(array))
        self.shape = tuple(int(n) for n in shape)
        self.axis = None if axis is None else int(axis)
        self.dtype = str(a.dtype)
        if self.axis is None:
            if a.shape != self.shape:
                raise ValueError(f"a whole piece must have the global shape {self.shape}, "
                                 f"got {a.shape}")
            self.array = a
            self.runs = [[0, self.shape[0]]] if a.ndim else []
        else:
            self.array = np.ascontiguousarray(np.moveaxis(a, self.axis, 0))
            self.runs = _runs(np.arange(self.shape[self.axis]) if index is None else index)
            if sum(b - a for a, b in self.runs) != self.array.shape[0]:
                raise ValueError(f"index of {sum(b - a for a, b in self.runs)} positions for "
                                 f"a piece of {self.array.shape[0]} along axis {axis}")
        if self.array.dtype.itemsize == 2 and self.array.dtype.kind not in "fiu":
            self.array = self.array.view(np.uint16)  # bfloat16: npy has no name for it


def _runs(index) -> list[list[int]]:
    """``index`` (global positions in piece order) as ``[start, stop)`` runs."""
    index = np.asarray(index, dtype=np.int64).reshape(-1)
    if index.size == 0:
        return []
    cut = np.nonzero(np.diff(index) != 1)[0] + 1
    starts = np.concatenate([[0], cut])
    stops = np.concatenate([cut, [index.size]])
    return [[int(index[a]), int(index[b - 1]) + 1] for a, b in zip(starts, stops)]


def flat_range(size: int, parts: int, index: int) -> tuple[int, int]:
    """``[start, stop)`` of part ``index`` when ``size`` elements split into ``parts`` equal
    chunks of ``ceil(size / parts)`` (the last ones may be short or empty)."""
    chunk = -(-int(size) // int(parts))
    start = min(size, index * chunk)
    return start, min(size, start + chunk)


def _step_name(step: int) -> str:
    return f"step-{int(step):08d}"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _extract(tree, path=""):
    """Replace FlatShard/PerRank wrappers by their arrays; return (tree, specs by path)."""
    specs: dict[str, dict] = {}

    def walk(obj, p):
        if isinstance(obj, FlatShard):
            specs[p] = {"kind": "flat", "size": obj.size}
            return obj.array
        if isinstance(obj, PerRank):
            specs[p] = {"kind": "rank"}
            return obj.value
        if isinstance(obj, dict):
            return {_key(k): walk(v, f"{p}/{_key(k)}") for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            out = [walk(v, f"{p}/{i}") for i, v in enumerate(obj)]
            return tuple(out) if isinstance(obj, tuple) else out
        return obj

    return walk(tree, path), specs


_INT = "__int__:"


def _key(k):
    """Integer dict keys (optimizer state by parameter index) stored as marked strings."""
    return f"{_INT}{k}" if isinstance(k, int) and not isinstance(k, bool) else k


def _unkey(tree):
    if isinstance(tree, dict):
        return {(int(k[len(_INT):]) if isinstance(k, str) and k.startswith(_INT) else k):
                _unkey(v) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_unkey(v) for v in tree]
    if isinstance(tree, tuple):
        return tuple(_unkey(v) for v in tree)
    return tree


def _replace(tree, fn, path=""):
    def walk(obj, p):
        hit = fn(p, obj)
        if hit is not _KEEP:
            return hit
        if isinstance(obj, dict):
            return {k: walk(v, f"{p}/{k}") for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            out = [walk(v, f"{p}/{i}") for i, v in enumerate(obj)]
            return tuple(out) if isinstance(obj, tuple) else out
        return obj

    return walk(tree, path)


_KEEP = object()


def _write_npz(path: Path, state, pieces: dict | None = None) -> dict:
    """Write ``state`` (and ``pieces``, as members ``piece-NNNNN``); return the pieces' specs."""
    # a loss history as one array per column (30,000 rows: 1.4 MB of arrays, not 5.4 MB of
    # JSON in every rank 0 shard); _Shard._build reads it back equal
    tree, arrays = flatten_state(state, rows=True)
    blob = np.frombuffer(json.dumps({"format": FORMAT, "state": tree}).encode(), dtype=np.uint8)
    specs, members = {}, {}
    for i, (key, piece) in enumerate(sorted((pieces or {}).items())):
        member = f"piece-{i:05d}"
        members[member] = piece.array
        specs[key] = {"member": member, "shape": list(piece.shape), "axis": piece.axis,
                      "runs": piece.runs, "dtype": piece.dtype}
    WRITE_STATS["bytes"] += int(sum(a.nbytes for a in arrays.values()) +
                                sum(a.nbytes for a in members.values()))
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as fh:
        np.savez(fh, __meta__=blob, **arrays, **members)  # stored, not compressed
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return specs


# ---------------------------------------------------------------------------------------------
def save_sharded(directory, comm: Comm, *, replicated: dict, sharded: dict | None = None,
                 step: int, keep: int | None = 3, layout: dict | None = None,
                 pieces: dict | None = None, _before_manifest=None) -> Path:
    """Write one consistent checkpoint of every rank (a collective call); return its folder.

    ``replicated`` is the same on every rank (rank 0 writes it: weights of data-parallel
    runs, RNG, data position, step); ``sharded`` is this rank's own state, where
    :class:`FlatShard` and :class:`PerRank` mark how it reshards. ``pieces`` maps names to
    the :class:`Piece` s this rank owns (each global array's pieces over all ranks must
    cover it once); they are never gathered.
    """
    if keep is not None and keep < 1:
        raise ValueError(f"keep must be at least 1 (or None for all), got {keep!r}")
    root = Path(directory)
    folder = root / _step_name(step)
    if comm.rank == 0:
        folder.mkdir(parents=True, exist_ok=True)
        stale = folder / "manifest.json"
        if stale.exists():  # rewriting a step: un-commit it first
            stale.unlink()
    comm.barrier()
    own, specs = _extract(sharded or {})
    payload = {"sharded": own}
    if comm.rank == 0:
        payload["replicated"], _ = _extract(replicated)
    shard = folder / f"shard-{comm.rank:05d}.npz"
    piece_specs = _write_npz(shard, payload, pieces)
    info = {"file": shard.name, "sha256": _sha256(shard), "bytes": shard.stat().st_size,
            "specs": specs, "pieces": piece_specs}
    if _before_manifest is not None:  # test hook: die between the shards and the commit
        _before_manifest()
    every = comm.allgather_object(info)
    if comm.rank == 0:
        manifest = {"format": FORMAT, "step": int(step), "world_size": comm.size,
                    "layout": layout or {"dp": comm.size}, "shards": every}
        _fsync_dir(folder)
        _atomic_write(folder / "manifest.json", json.dumps(manifest, indent=1).encode())
        _atomic_write(root / "latest", folder.name.encode())
        if keep is not None:
            done = list_sharded(root)
            for old in done[:-keep]:
                remove_checkpoint(old)
            for p in root.iterdir():  # partial folders older than the newest complete one
                m = _NAME.match(p.name)
                if m and not (p / "manifest.json").exists() and int(m.group(1)) < step:
                    shutil.rmtree(p, ignore_errors=True)
    comm.barrier()
    return folder


def remove_checkpoint(folder: Path) -> None:
    """Delete a committed checkpoint: its commit marker (the manifest) first and durably,
    then its shards, so a kill in between leaves a partial folder (never loaded, removed by
    the next save) rather than a manifest over missing shards that counts toward ``keep``."""
    folder = Path(folder)
    try:
        (folder / "manifest.json").unlink()
    except FileNotFoundError:
        pass
    _fsync_dir(folder)
    shutil.rmtree(folder, ignore_errors=True)


def list_sharded(directory) -> list[Path]:
    """Committed checkpoint folders (with a manifest), oldest first."""
    root = Path(directory)
    if not root.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in root.iterdir()
             if (m := _NAME.match(p.name)) and (p / "manifest.json").exists()]
    return [p for _, p in sorted(found)]


def _verify(folder: Path) -> dict:
    try:
        manifest = json.loads((folder / "manifest.json").read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{folder.name}: unreadable manifest ({exc})") from exc
    if manifest.get("format") != FORMAT:
        raise CheckpointError(f"{folder.name}: not a sharded skiff checkpoint")
    for info in manifest["shards"]:
        path = folder / info["file"]
        if not path.exists():
            raise CheckpointError(f"{folder.name}: shard {info['file']} is missing")
        if _sha256(path) != info["sha256"]:
            raise CheckpointError(f"{folder.name}: shard {info['file']} fails its checksum")
    return manifest


def _candidates(root: Path) -> list[Path]:
    done = list_sharded(root)
    latest = root / "latest"
    first = None
    if latest.exists():
        target = root / latest.read_text().strip()
        if target in done:
            first = target
    ordered = list(reversed(done))
    if first is not None:
        ordered.remove(first)
        ordered.insert(0, first)
    return ordered


def load_sharded(directory, comm: Comm, *, on_corrupt=None, select=None,
                 exact: bool = False) -> dict | None:
    """The newest good checkpoint for this rank (a collective call), or None if none.

    Returns ``{"step", "replicated", "sharded", "pieces", "world_size", "layout", "path"}``
    where the flat shards are already cut for this world size. ``on_corrupt(folder, error)``
    is called (on rank 0) for each damaged checkpoint skipped. ``select(name, shape)`` says
    what this rank needs of each saved :class:`Piece` array: ``None`` the whole array,
    ``False`` nothing, ``(axis, index)`` the positions ``index`` along ``axis``; without
    ``select`` every array comes whole. ``pieces`` maps the names to what was asked for.

    Each rank reads only what it needs: the replicated state, its own shard, and, when the
    world size changed, the pieces of the old shards that overlap its new slices (arrays are
    read one by one from the ``.npz`` files; :data:`READ_STATS` counts the bytes).
    ``exact``: ``directory`` is one checkpoint's own ``step-N/`` folder, read as it is.
    """
    root = Path(directory)
    choice = None
    if comm.rank == 0:
        for folder in [root] if exact else _candidates(root):
            try:
                _verify(folder)
            except CheckpointError as exc:
                if on_corrupt is not None:
                    on_corrupt(folder, exc)
                continue
            choice = str(folder)
            break
    choice = comm.bcast_object(choice, root=0)
    if choice is None:
        return None
    folder = Path(choice)
    manifest = json.loads((folder / "manifest.json").read_text())
    old = int(manifest["world_size"])
    files = [folder / info["file"] for info in manifest["shards"]]
    specs = manifest["shards"][0]["specs"]
    shards: dict[int, _Shard] = {}

    def shard(r: int) -> _Shard:
        if r not in shards:
            shards[r] = _Shard(files[r])
        return shards[r]

    try:
        replicated = shard(0).load("replicated")
        mine = shard(comm.rank if comm.rank < old else 0)

        def reshard(path):
            spec = specs.get(path)
            if spec is None:
                return _KEEP
            if spec["kind"] == "rank":
                return mine.load("sharded" + path) if old == comm.size else None
            size = spec["size"]
            start, stop = flat_range(size, comm.size, comm.rank)
            parts = []
            for r in range(old):  # only the old shards that overlap the new slice
                lo, hi = flat_range(size, old, r)
                a, b = max(start, lo), min(stop, hi)
                if a < b:
                    parts.append(shard(r).load("sharded" + path).reshape(-1)[a - lo:b - lo])
            return np.concatenate(parts) if parts else np.zeros(0)

        sharded = _unkey(mine.load("sharded", replace=reshard))
        pieces = _read_pieces(manifest["shards"], shard, select)
    finally:
        for sh in shards.values():
            sh.close()
    # no rank may go on to rewrite this step (a resumed run with nothing left to train saves
    # it again at once, un-committing it first) while another still reads it
    comm.barrier()
    return {"step": int(manifest["step"]), "replicated": _unkey(replicated), "sharded": sharded,
            "pieces": pieces, "world_size": old, "layout": manifest.get("layout"),
            "path": str(folder)}


READ_STATS = {"bytes": 0, "arrays": 0}  # what this process read from sharded checkpoints
WRITE_STATS = {"bytes": 0}  # the array bytes this process wrote into sharded checkpoints


def _read_pieces(shards: list[dict], shard, select) -> dict:
    """The arrays (or the parts of them) that ``select`` asks for, read row run by row run
    from the shards that hold them."""
    owners: dict[str, list] = {}
    for r, info in enumerate(shards):
        for key, spec in (info.get("pieces") or {}).items():
            owners.setdefault(key, []).append((r, spec))
    out = {}
    for key, held in sorted(owners.items()):
        spec0 = held[0][1]
        shape, axis = tuple(spec0["shape"]), spec0["axis"]
        want = None if select is None else select(key, shape)
        if want is False:
            continue
        if not shape:  # a scalar
            out[key] = _typed(shard(held[0][0]).rows(spec0["member"], None), spec0["dtype"])
            continue
        if axis is None and want is not None and want[0] == 1 and len(shape) == 2:
            # a whole matrix of which this rank holds columns (a row-parallel slice)
            cols = shard(held[0][0]).columns(spec0["member"], _runs(want[1]))
            out[key] = np.ascontiguousarray(_typed(cols, spec0["dtype"]))
            continue
        moved = shape if axis is None else (shape[axis],) + tuple(
            n for i, n in enumerate(shape) if i != axis)
        if want is not None and (axis if axis is not None else 0) == want[0]:
            need, take = _runs(want[1]), None  # read just these rows
        else:
            need, take = [[0, moved[0]]], want  # read it all, cut afterwards
        rows = sum(b - a for a, b in need)
        buf, filled, t = None, 0, 0
        for c, d in need:
            for r, spec in held:
                o = 0
                for a, b in spec["runs"]:
                    x0, x1 = max(a, c), min(b, d)
                    if x0 < x1:
                        part = shard(r).rows(spec["member"], (o + x0 - a, o + x1 - a))
                        if buf is None:
                            buf = np.empty((rows,) + part.shape[1:], dtype=part.dtype)
                        buf[t + x0 - c:t + x1 - c] = part
                        filled += x1 - x0
                    o += b - a
            t += d - c
        if filled != rows:
            raise CheckpointError(f"the pieces of {key!r} cover {filled} of the {rows} "
                                  "positions asked for")
        arr = _typed(buf, spec0["dtype"])
        if axis is not None:
            arr = np.moveaxis(arr, 0, axis)
        if take is not None:
            arr = np.take(arr, np.asarray(take[1]), axis=take[0])
        out[key] = np.ascontiguousarray(arr)
    return out


def _typed(arr: np.ndarray, dtype: str) -> np.ndarray:
    if str(arr.dtype) == dtype:
        return arr
    from skiff.kernels.train.core.tensor import _as_dtype

    return arr.view(_as_dtype(dtype))  # bfloat16, stored as its bits


class _Shard:
    """One shard file, read array by array: ``load("sharded/opt/m")`` gives that subtree,
    reading only its arrays (``replace(path)`` may supply a subtree instead of reading it)."""

    def __init__(self, path: Path):
        self.path = path
        try:
            self._z = np.load(path, allow_pickle=False)
            meta = json.loads(bytes(self._z["__meta__"]).decode())
        except Exception as exc:  # noqa: BLE001 - any failure to read is a damaged shard
            raise CheckpointError(f"cannot read {path}: {type(exc).__name__}: {exc}") from exc
        self.tree = meta["state"]

    def _locate(self, member: str):
        """(file, offset of the data, shape, dtype) of a stored member, or None when the
        member is compressed (not written by us)."""
        info = self._z.zip.getinfo(member + ".npy")
        if info.compress_type != zipfile.ZIP_STORED:
            return None
        if self._raw is None:
            self._raw = open(self.path, "rb")
        fh = self._raw
        fh.seek(info.header_offset)
        head = fh.read(30)
        if head[:4] != b"PK\x03\x04":
            raise CheckpointError(f"{self.path.name}: bad zip entry for {member}")
        name_len, extra_len = struct.unpack("<HH", head[26:30])
        fh.seek(info.header_offset + 30 + name_len + extra_len)
        version = np.lib.format.read_magic(fh)
        read = np.lib.format.read_array_header_1_0 if version == (1, 0) else \
            np.lib.format.read_array_header_2_0
        shape, fortran, dtype = read(fh)
        if fortran:
            raise CheckpointError(f"{self.path.name}: {member} is not C-ordered")
        return fh, fh.tell(), tuple(shape), dtype

    def _read(self, fh, at: int, size: int) -> bytes:
        fh.seek(at)
        data = fh.read(size)
        READ_STATS["bytes"] += len(data)
        return data

    def rows(self, member: str, span) -> np.ndarray:
        """Rows ``[start, stop)`` of the stored (uncompressed) ``member`` (``span=None``: all
        of it), read straight from the file: one seek, one read."""
        found = self._locate(member)
        if found is None:  # not written by us: read it whole
            a = self._array(member)
            return a if span is None else a[span[0]:span[1]]
        fh, at, shape, dtype = found
        start, stop = (0, shape[0] if shape else 1) if span is None else span
        row = int(np.prod(shape[1:], dtype=np.int64)) * dtype.itemsize
        data = self._read(fh, at + start * row, (stop - start) * row)
        READ_STATS["arrays"] += 1
        a = np.frombuffer(data, dtype=dtype)
        return a.reshape(shape) if not shape else a.reshape((stop - start,) + shape[1:])

    def columns(self, member: str, runs) -> np.ndarray:
        """The columns ``runs`` (``[start, stop)`` pairs, in order) of a stored 2-d member:
        one read per row and run (a whole-array piece asked for by a row-parallel slice)."""
        found = self._locate(member)
        if found is None:
            a = self._array(member)
            return np.concatenate([a[:, c:d] for c, d in runs], axis=1)
        fh, at, shape, dtype = found
        item, width = dtype.itemsize, shape[1]
        parts = [self._read(fh, at + (i * width + c) * item, (d - c) * item)
                 for i in range(shape[0]) for c, d in runs]
        READ_STATS["arrays"] += 1
        return np.frombuffer(b"".join(parts), dtype=dtype).reshape(
            shape[0], sum(d - c for c, d in runs))

    _raw = None

    def _array(self, key: str) -> np.ndarray:
        value = self._z[key]
        READ_STATS["bytes"] += int(value.nbytes)
        READ_STATS["arrays"] += 1
        return value

    def load(self, path: str, replace=None):
        node = self.tree
        for part in [p for p in path.split("/") if p]:
            node = _child(node, part)
        prefix = "/" + path.split("/", 1)[1] if "/" in path else ""
        return self._build(node, prefix, replace)

    def _build(self, node, path: str, replace):
        if replace is not None:
            hit = replace(path)
            if hit is not _KEEP:
                return hit
        if isinstance(node, list):
            return [self._build(v, f"{path}/{i}", replace) for i, v in enumerate(node)]
        if isinstance(node, dict):
            if "__array__" in node:
                return typed_array(self._array(node["__array__"]), node.get("dtype"))
            if "__tuple__" in node:
                return tuple(self._build(v, f"{path}/{i}", replace)
                             for i, v in enumerate(node["__tuple__"]))
            if "__float__" in node:
                return float(node["__float__"])
            if "__rows__" in node:  # a history's columns (flatten_state(rows=True))
                return _rows_from_columns(node["__rows__"], _Columns(self))
            if "__items__" in node:  # a dict with integer keys
                return {k: self._build(v, f"{path}/{k}", replace) for k, v in node["__items__"]}
            return {k: self._build(v, f"{path}/{k}", replace)
                    for k, v in node["__dict__"].items()}
        return node

    def close(self) -> None:
        self._z.close()
        if self._raw is not None:
            self._raw.close()


class _Columns:
    """The stored arrays of a shard by key, read (and counted) when asked for."""

    def __init__(self, shard: _Shard):
        self.shard = shard

    def __getitem__(self, key: str) -> np.ndarray:
        return self.shard._array(key)


def _child(node, part: str):
    """The child ``part`` of a flattened state tree node (dict key or list/tuple index)."""
    if isinstance(node, list):
        return node[int(part)]
    if "__tuple__" in node:
        return node["__tuple__"][int(part)]
    if "__items__" in node:
        return next(v for k, v in node["__items__"] if str(k) == part)
    return node["__dict__"][part]
