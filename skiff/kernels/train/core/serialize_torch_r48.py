"""Round 48 (h13): ``skiff.load`` reads a file ``torch.save`` wrote (torch's zip format, the
default since torch 1.6, and the legacy format of ``_use_new_zipfile_serialization=False``)
without torch: state dicts of modules and optimizers, checkpoints of nested dicts/lists with
tensors, ``Parameter``s, ``torch.Size``, dtypes and devices in them. As torch's default
``weights_only=True`` it rebuilds nothing else: a pickled whole module is refused in words
that say what to save instead.

The format: ``<name>/data.pkl`` is a pickle whose tensors are
``torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...)`` and whose storages are
persistent ids ``('storage', torch.FloatStorage, key, location, numel)`` naming the raw
little-endian bytes in ``<name>/data/<key>``."""

from __future__ import annotations

import collections
import io
import pickle
import struct
import zipfile

import numpy as np

_STORAGE_DTYPES = {
    "FloatStorage": "float32", "DoubleStorage": "float64", "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16", "LongStorage": "int64", "IntStorage": "int32",
    "ShortStorage": "int16", "CharStorage": "int8", "ByteStorage": "uint8",
    "BoolStorage": "bool", "ComplexFloatStorage": "complex64",
    "ComplexDoubleStorage": "complex128", "UntypedStorage": "uint8",
}
_DTYPES = {"float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
           "uint8", "bool", "complex64", "complex128", "float", "double", "half", "long",
           "int", "short", "cfloat", "cdouble", "uint16", "uint32", "uint64"}
_ALIASES = {"float": "float32", "double": "float64", "half": "float16", "long": "int64",
            "int": "int32", "short": "int16", "cfloat": "complex64", "cdouble": "complex128"}
_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C


def _np_dtype(name: str):
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


class _StorageType:
    def __init__(self, name):
        self.name = name
        self.dtype = _np_dtype(_STORAGE_DTYPES[name])


def _rebuild_tensor(storage, offset, size, stride, requires_grad=False, hooks=None,
                    metadata=None):
    from .tensor import Tensor

    arr = np.lib.stride_tricks.as_strided(
        storage[offset:] if storage.size else storage, shape=tuple(size),
        strides=tuple(s * storage.itemsize for s in stride))
    return Tensor(np.array(arr, copy=True), dtype=storage.dtype)


def _as_tensor(data, requires_grad):
    """A ``Parameter`` as a tensor (``skiff.load`` makes it a ``Parameter``: this file is
    below ``nn.module``, which reads torch's files for ``load_state_dict(path)``)."""
    data.requires_grad_(bool(requires_grad))
    return data


def _refuse(module, name):
    hint = (" it looks like a whole module saved with torch.save(model): save "
            "model.state_dict() and load it into a model built by its class"
            if module.startswith("torch.nn") or module == "__main__" else "")
    raise pickle.UnpicklingError(
        f"skiff.load reads torch.save files of tensors, containers, numbers and strings only, "
        f"not {module}.{name} (as torch.load(weights_only=True));{hint or ' convert it first'}")


class _TorchUnpickler(pickle.Unpickler):
    def __init__(self, fh, storage, parameter=None):
        super().__init__(fh)
        self._storage = storage
        self._parameter = parameter or _as_tensor

    def find_class(self, module, name):
        from .torch_size import Size

        if module == "collections" and name == "OrderedDict":
            return collections.OrderedDict
        if module == "builtins" and name in ("set", "frozenset", "complex", "slice"):
            return super().find_class(module, name)
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return _rebuild_tensor
        if module == "torch._utils" and name == "_rebuild_parameter":
            return lambda data, requires_grad, *_: self._parameter(data, requires_grad)
        if module == "torch" and name in _STORAGE_DTYPES:
            return _StorageType(name)
        if module == "torch" and name == "Size":
            return Size
        if module == "torch" and name == "device":
            return lambda *a: str(a[0]) if len(a) == 1 else f"{a[0]}:{a[1]}"
        if module == "torch" and name in _DTYPES:  # skiff's dtypes are numpy's
            return _np_dtype(_ALIASES.get(name, name))
        _refuse(module, name)

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and pid and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"skiff.load: unknown persistent id {pid!r}")
        kind, key = pid[1], pid[2]
        dtype = kind.dtype if isinstance(kind, _StorageType) else np.dtype("uint8")
        return self._storage(str(key), dtype)


def is_torch_zip(data) -> bool:
    """Whether ``data`` (the bytes, or a path: only the zip's directory is read) is a zip
    ``torch.save`` wrote."""
    if isinstance(data, bytes) and data[:2] != b"PK":
        return False
    try:
        with zipfile.ZipFile(io.BytesIO(data) if isinstance(data, bytes) else data) as z:
            return any(n.endswith("data.pkl") for n in z.namelist())
    except zipfile.BadZipFile:
        return False


def load_torch_zip(data: bytes, parameter=None):
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        names = z.namelist()
        pkl = next(n for n in names if n.endswith("data.pkl"))
        prefix = pkl[: -len("data.pkl")]
        order = "little"
        if f"{prefix}byteorder" in names:
            order = z.read(f"{prefix}byteorder").decode().strip() or "little"
        cache = {}

        def storage(key, dtype):
            if key not in cache:
                raw = z.read(f"{prefix}data/{key}")
                dt = dtype.newbyteorder("<" if order == "little" else ">")
                cache[key] = np.frombuffer(raw, dtype=dt).astype(dtype, copy=True)
            return cache[key]

        return _TorchUnpickler(io.BytesIO(z.read(pkl)), storage, parameter).load()


def is_torch_legacy(data: bytes) -> bool:
    """Whether ``data`` starts as torch's legacy files do: the pickled magic number (its bytes
    compared, nothing unpickled)."""
    return _LEGACY_MAGIC.to_bytes(10, "little") in data[:32]


def load_torch_legacy(data: bytes, parameter=None):
    """The pre-1.6 format: pickles of the magic number, the protocol version, the system info
    and the object (its storages as ids ``('storage', type, key, location, numel, view)``),
    the list of storage keys, then each storage's element count (int64) and raw bytes."""
    fh = io.BytesIO(data)

    def plain():  # unpickles numbers, strings and containers only, as the rest
        return _TorchUnpickler(fh, None).load()

    for _ in range(3):  # magic number, protocol version, sys_info
        plain()
    dtypes = {}

    def storage(key, dtype):
        dtypes[key] = dtype
        return key

    obj = _Legacy(fh, storage).load()  # tensors deferred: their bytes follow the pickle
    arrays = {}
    for key in plain():
        dtype = dtypes.get(str(key), np.dtype("uint8"))
        (numel,) = struct.unpack("<q", fh.read(8))
        arrays[str(key)] = np.frombuffer(fh.read(numel * dtype.itemsize), dtype=dtype).copy()
    return _resolve(obj, arrays, parameter or _as_tensor)


class _Deferred:
    """A tensor of the legacy format, built once its storage's bytes (after the pickle) are
    read."""

    def __init__(self, key, args, param=False):
        self.key, self.args, self.param = key, args, param


class _Legacy(_TorchUnpickler):
    def find_class(self, module, name):
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return lambda key, *a: _Deferred(key, a)
        if module == "torch._utils" and name == "_rebuild_parameter":
            return lambda data, rg, *a: _Deferred(None, (data, rg), param=True)
        return super().find_class(module, name)

    def persistent_load(self, pid):
        if isinstance(pid, tuple) and len(pid) > 5 and pid[5] is not None:
            raise pickle.UnpicklingError("skiff.load: storage views of torch's legacy format are "
                                         "not read; save the file again with torch.save")
        return super().persistent_load(pid[:5] if isinstance(pid, tuple) else pid)


def _resolve(obj, arrays, parameter):
    if isinstance(obj, _Deferred):
        if obj.param:
            return parameter(_resolve(obj.args[0], arrays, parameter), obj.args[1])
        return _rebuild_tensor(arrays[str(obj.key)], *obj.args)
    if isinstance(obj, dict):
        out = type(obj)((k, _resolve(v, arrays, parameter)) for k, v in obj.items())
        if hasattr(obj, "__dict__"):  # an OrderedDict state dict's ``_metadata``
            out.__dict__.update(obj.__dict__)
        return out
    if type(obj) in (list, tuple):
        return type(obj)(_resolve(v, arrays, parameter) for v in obj)
    return obj
