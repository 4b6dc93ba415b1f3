"""Safetensors files and Hugging Face checkpoint folders, read and written with numpy alone.

A ``.safetensors`` file is an 8-byte little-endian header length, a JSON header
(``{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}``) and the
raw little-endian tensor bytes (never pickle). ``view`` maps the file (``np.memmap``) and
hands out zero-copy views; ``get(name, dtype)`` reads one tensor straight from the file into
the array a model keeps (bfloat16 widened to float32 on the way), so a model loads tensor by
tensor with peak memory near the weights' size: no mapped pages stay resident beside it.

A checkpoint folder holds ``model.safetensors``, or shards listed by
``model.safetensors.index.json`` (``{"weight_map": {name: file}}``). :func:`open_folder`
returns a :class:`Checkpoint` over either; :func:`write_folder` writes one back, sharded when
it exceeds ``max_shard_bytes``.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import numpy as np

__all__ = ["SafetensorsFile", "Checkpoint", "open_folder", "write_file", "write_folder",
           "bf16_to_float32", "float32_to_bf16_bits", "CheckpointFormatError"]

INDEX_NAME = "model.safetensors.index.json"
SINGLE_NAME = "model.safetensors"
_HEADER_LIMIT = 100 * 2**20  # a header larger than this is not a safetensors file

# safetensors dtype names -> numpy dtypes (BF16 is read as raw 16-bit words)
_DTYPES = {
    "F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"), "I64": np.dtype("<i8"), "I32": np.dtype("<i4"),
    "I16": np.dtype("<i2"), "I8": np.dtype("i1"), "U8": np.dtype("u1"),
    "BOOL": np.dtype("?"),
}


class CheckpointFormatError(ValueError):
    """A checkpoint file or folder that cannot be read (one line: the file and the reason)."""


def bf16_to_float32(words: np.ndarray) -> np.ndarray:
    """bfloat16 bit patterns (uint16) to float32: the bits are the upper half of a float32."""
    return (np.asarray(words, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def float32_to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 to bfloat16 bit patterns (uint16), rounded to nearest even (as torch does)."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounding = ((bits >> 16) & 1) + 0x7FFF
    out = ((bits + rounding) >> 16).astype(np.uint16)
    nan = np.isnan(np.ascontiguousarray(x, dtype=np.float32))
    out[nan] = 0x7FC0
    return out


def _bf16_dtype():
    try:
        import ml_dtypes
    except ImportError:  # pragma: no cover - ml_dtypes is a core dependency
        return None
    return np.dtype(ml_dtypes.bfloat16)


class SafetensorsFile:
    """One ``.safetensors`` file, memory-mapped.

    ``keys()`` lists the tensors; ``get(name, dtype=None)`` returns a read-only view in the
    stored dtype (bfloat16 as ``ml_dtypes.bfloat16``), or a converted copy when ``dtype`` is
    given (``"float32"``: bfloat16 and float16 widened exactly).
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        try:
            with open(self.path, "rb") as fh:
                head = fh.read(8)
                if len(head) < 8:
                    raise CheckpointFormatError(f"{self.path}: not a safetensors file "
                                                "(shorter than its 8-byte header length)")
                (n,) = struct.unpack("<Q", head)
                if n > _HEADER_LIMIT:
                    raise CheckpointFormatError(f"{self.path}: not a safetensors file (header "
                                                f"length {n} bytes)")
                header = json.loads(fh.read(n))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise CheckpointFormatError(f"{self.path}: unreadable safetensors header ({exc})") \
                from None
        self.metadata = header.pop("__metadata__", {}) or {}
        self.header = header
        self.data_start = 8 + n
        size = self.path.stat().st_size
        for name, info in header.items():
            if info.get("dtype") not in _DTYPES:
                raise CheckpointFormatError(f"{self.path}: tensor {name!r} has dtype "
                                            f"{info.get('dtype')!r}; readable: "
                                            f"{', '.join(_DTYPES)}")
            begin, end = info["data_offsets"]
            if self.data_start + end > size:
                raise CheckpointFormatError(f"{self.path}: truncated (tensor {name!r} ends at "
                                            f"byte {self.data_start + end}, file has {size})")
        self._map = None  # mapped on the first view asked for

    def keys(self) -> list[str]:
        return list(self.header)

    def __contains__(self, name) -> bool:
        return name in self.header

    def shape(self, name: str) -> tuple:
        return tuple(self.header[name]["shape"])

    def stored_dtype(self, name: str) -> str:
        return self.header[name]["dtype"]

    def view(self, name: str) -> np.ndarray:
        """A read-only view of the mapped file (no copy) in the stored dtype."""
        info = self.header[name]
        kind = info["dtype"]
        begin, end = info["data_offsets"]
        if self._map is None:
            self._map = np.memmap(self.path, dtype=np.uint8, mode="r")
        raw = self._map[self.data_start + begin:self.data_start + end]
        arr = raw.view(_DTYPES[kind]).reshape(info["shape"])
        if kind == "BF16":
            bf16 = _bf16_dtype()
            return arr.view(bf16) if bf16 is not None else bf16_to_float32(arr)
        return arr

    def read(self, name: str) -> np.ndarray:
        """The tensor read from the file into a new array, in the stored dtype (bfloat16 as
        uint16 words); no mapping, so nothing stays resident but the result."""
        info = self.header[name]
        begin, end = info["data_offsets"]
        dt = _DTYPES[info["dtype"]]
        with open(self.path, "rb") as fh:
            fh.seek(self.data_start + begin)
            arr = np.fromfile(fh, dtype=dt, count=(end - begin) // dt.itemsize)
        return arr.reshape(info["shape"])

    def get(self, name: str, dtype=None) -> np.ndarray:
        """``view(name)`` when ``dtype`` is None, else a new array of ``dtype``."""
        if dtype is None:
            return self.view(name)
        kind = self.header[name]["dtype"]
        arr = self.read(name)
        dtype = np.dtype(dtype)
        if kind == "BF16":
            if dtype == _bf16_dtype():
                return arr.view(dtype)
            return bf16_to_float32(arr).astype(dtype, copy=False)
        return arr.astype(dtype, copy=False)


class Checkpoint:
    """The tensors of a Hugging Face checkpoint folder (one file or shards), by name."""

    def __init__(self, folder: Path, weight_map: dict[str, str]):
        self.folder = folder
        self.weight_map = weight_map
        self._files: dict[str, SafetensorsFile] = {}

    def keys(self) -> list[str]:
        return list(self.weight_map)

    def __contains__(self, name) -> bool:
        return name in self.weight_map

    def file(self, name: str) -> SafetensorsFile:
        fname = self.weight_map[name]
        if fname not in self._files:
            self._files[fname] = SafetensorsFile(self.folder / fname)
        return self._files[fname]

    def shape(self, name: str) -> tuple:
        return self.file(name).shape(name)

    def get(self, name: str, dtype=None) -> np.ndarray:
        return self.file(name).get(name, dtype)

    def stored_dtypes(self) -> set[str]:
        return {self.file(k).stored_dtype(k) for k in self.weight_map}


def open_folder(folder: str | os.PathLike) -> Checkpoint:
    """The tensors of ``folder``: ``model.safetensors.index.json`` and its shards, or
    ``model.safetensors``. A missing shard, a shard without a listed tensor, or a folder
    with only pickled weights is one :class:`CheckpointFormatError`."""
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise FileNotFoundError(f"checkpoint folder {str(folder)!r} does not exist")
    index = folder / INDEX_NAME
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text())["weight_map"]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise CheckpointFormatError(f"{index}: not a safetensors index ({exc})") from None
        missing = sorted({f for f in weight_map.values() if not (folder / f).is_file()})
        if missing:
            raise CheckpointFormatError(f"{folder}: shard(s) {', '.join(missing)} listed in "
                                        f"{INDEX_NAME} are missing")
        ckpt = Checkpoint(folder, dict(weight_map))
        for name in weight_map:
            if name not in ckpt.file(name):
                raise CheckpointFormatError(f"{folder / weight_map[name]}: tensor {name!r} "
                                            f"listed in {INDEX_NAME} is not in it")
        return ckpt
    single = folder / SINGLE_NAME
    if single.is_file():
        f = SafetensorsFile(single)
        ckpt = Checkpoint(folder, {k: SINGLE_NAME for k in f.keys()})
        ckpt._files[SINGLE_NAME] = f
        return ckpt
    pickled = sorted(p.name for p in folder.glob("*.bin")) + sorted(
        p.name for p in folder.glob("*.pt"))
    why = (f"it has only pickled weights ({', '.join(pickled)}); skiff reads safetensors "
           "only (convert with transformers' save_pretrained(..., safe_serialization=True))"
           if pickled else f"it has neither {SINGLE_NAME} nor {INDEX_NAME}")
    raise CheckpointFormatError(f"cannot read checkpoint folder {str(folder)!r}: {why}")


def _encode(arr: np.ndarray) -> tuple[str, np.ndarray]:
    """The safetensors dtype name and little-endian contiguous bytes of ``arr``."""
    arr = np.asarray(arr)
    bf16 = _bf16_dtype()
    if bf16 is not None and arr.dtype == bf16:
        return "BF16", np.ascontiguousarray(arr).view(np.uint16)
    for name, dt in _DTYPES.items():
        if name != "BF16" and arr.dtype.kind == dt.kind and arr.dtype.itemsize == dt.itemsize:
            return name, np.ascontiguousarray(arr, dtype=dt)
    raise TypeError(f"cannot write a tensor of dtype {arr.dtype} to safetensors")


def write_file(tensors: dict[str, np.ndarray], path: str | os.PathLike,
               metadata: dict | None = None) -> int:
    """Write ``tensors`` to one ``.safetensors`` file (atomically); returns the data bytes."""
    path = Path(path)
    header: dict = {"__metadata__": {"format": "pt", **(metadata or {})}}
    encoded, offset = [], 0
    for name, arr in tensors.items():
        kind, data = _encode(arr)
        header[name] = {"dtype": kind, "shape": list(data.shape),
                        "data_offsets": [offset, offset + data.nbytes]}
        encoded.append(data)
        offset += data.nbytes
    blob = json.dumps(header, separators=(",", ":")).encode("utf-8")
    blob += b" " * (-len(blob) % 8)  # the data starts 8-byte aligned
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(struct.pack("<Q", len(blob)))
        fh.write(blob)
        for data in encoded:
            fh.write(data.tobytes() if not data.flags.c_contiguous else memoryview(data))
    tmp.replace(path)
    return offset


def write_folder(tensors: dict[str, np.ndarray], folder: str | os.PathLike,
                 max_shard_bytes: int | None = None) -> list[str]:
    """Write ``tensors`` into ``folder`` as ``model.safetensors``, or as shards
    ``model-0000i-of-0000n.safetensors`` with ``model.safetensors.index.json`` when they
    exceed ``max_shard_bytes``. Returns the file names written."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    old_shards = folder.glob("model-*-of-*.safetensors")
    for old in [folder / SINGLE_NAME, folder / INDEX_NAME, *old_shards]:
        if old.is_file():
            old.unlink()
    shards: list[dict] = [{}]
    size = 0
    for name, arr in tensors.items():
        n = np.asarray(arr).nbytes
        if max_shard_bytes and shards[-1] and size + n > max_shard_bytes:
            shards.append({})
            size = 0
        shards[-1][name] = arr
        size += n
    if len(shards) == 1:
        write_file(shards[0], folder / SINGLE_NAME)
        return [SINGLE_NAME]
    names, weight_map, total = [], {}, 0
    for i, shard in enumerate(shards, 1):
        fname = f"model-{i:05d}-of-{len(shards):05d}.safetensors"
        total += write_file(shard, folder / fname)
        weight_map.update({k: fname for k in shard})
        names.append(fname)
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (folder / INDEX_NAME).write_text(json.dumps(index, indent=2) + "\n")
    return [*names, INDEX_NAME]
