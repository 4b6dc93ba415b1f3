"""``skiff.save`` / ``skiff.load``: torch's ``save(obj, f)`` and ``load(f)`` for what training
programs save (state dicts of modules and optimizers, checkpoints of nested dicts, lists,
numbers and strings with tensors or arrays in them).

A flat ``{name: tensor or array}`` (a module's ``state_dict()``) is written as an ``.npz``
(numpy's format, what ``Module.save`` writes and ``load_state_dict(path)`` reads), anything
else as a pickle of plain values and numpy arrays; ``load`` reads either back with tensors
where arrays were and, like torch's default ``weights_only=True``, unpickles nothing but
containers, numbers, strings and numpy arrays. Whole modules are not saved: save the
``state_dict()`` and load it into a model built by its class.
"""

from __future__ import annotations

import io
import os
import pickle

import numpy as np

from skiff.kernels.backend import to_numpy

from .tensor import Tensor

__all__ = ["save", "load"]

_PLAIN = (str, bytes, int, float, complex, bool, type(None))


def _plain(obj, where="obj"):
    if isinstance(obj, Tensor):
        return np.array(obj.numpy(), copy=True)
    if isinstance(obj, np.ndarray) or hasattr(obj, "__cuda_array_interface__"):
        return np.array(to_numpy(obj), copy=True)
    if isinstance(obj, (np.generic, *_PLAIN)):
        return obj
    if isinstance(obj, np.dtype):  # ``x.dtype`` (round 45: saved as numpy's, torch saves its own)
        return np.dtype(obj)
    if isinstance(obj, dict):
        return {k: _plain(v, f"{where}[{k!r}]") for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_plain(v, f"{where}[{i}]") for i, v in enumerate(obj))
    hint = (" save its state_dict() and load it into a model built by its class" if
            hasattr(obj, "state_dict") else "")
    raise TypeError(f"skiff.save keeps tensors, arrays, numbers and strings in dicts, lists and "
                    f"tuples; {where} is a {type(obj).__name__}:{hint or ' convert it first'}")


def _is_flat_arrays(obj) -> bool:
    return (isinstance(obj, dict) and bool(obj) and all(isinstance(k, str) for k in obj)
            and all(isinstance(v, (Tensor, np.ndarray)) for v in obj.values()))


def save(obj, f) -> None:
    """Write ``obj`` to the path or binary file ``f`` (the name is kept as given)."""
    plain = _plain(obj)
    buf = io.BytesIO()
    if _is_flat_arrays(obj):
        np.savez(buf, **plain)
    else:
        pickle.dump(plain, buf, protocol=4)
    if hasattr(f, "write"):
        f.write(buf.getvalue())
        return
    path = os.fspath(f)
    tmp = f"{path}.tmp"
    with open(tmp, "wb") as fh:
        fh.write(buf.getvalue())
    os.replace(tmp, path)


class _Unpickler(pickle.Unpickler):
    _ALLOWED = {("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "_reconstruct"),
                ("numpy._core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "scalar"),
                ("numpy._core.multiarray", "scalar"), ("collections", "OrderedDict"),
                ("builtins", "complex"), ("builtins", "set"), ("builtins", "frozenset"),
                # round 45 (h7): ``x.shape``/``x.size()`` in a checkpoint (torch's loads its
                # ``torch.Size`` with weights_only=True too)
                ("skiff.kernels.train.core.torch_size", "Size")}

    def find_class(self, module, name):
        if (module, name) in self._ALLOWED or (module == "numpy.dtypes" and name.endswith("DType")):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(
            f"skiff.load reads containers, numbers, strings and arrays only, not {module}.{name} "
            "(as torch.load(weights_only=True)); for a trusted file use pickle.load")


def _tensors(obj):
    if isinstance(obj, np.ndarray):
        return Tensor(obj, dtype=obj.dtype)
    if isinstance(obj, dict):
        return type(obj)((k, _tensors(v)) for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return type(obj)(_tensors(v) for v in obj)
    return obj


def load(f, map_location=None, weights_only=True, **_):
    """Read what :func:`save` or ``torch.save`` wrote (from a path or binary file), arrays as
    tensors on the CPU (``map_location`` is accepted for torch's calls; use ``.to(device)`` on
    the model)."""
    if hasattr(f, "read"):
        data = f.read()
    else:
        with open(os.fspath(f), "rb") as fh:
            data = fh.read()
    from . import serialize_torch_r48 as torch_files
    from .nn.module import Parameter

    def parameter(data, requires_grad):
        return Parameter(data, requires_grad=bool(requires_grad))

    if torch_files.is_torch_zip(data):  # round 48 (h13): a file torch.save wrote
        return torch_files.load_torch_zip(data, parameter)
    if data[:2] == b"PK":
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            return {k: Tensor(z[k], dtype=z[k].dtype) for k in z.files}
    if torch_files.is_torch_legacy(data):
        return torch_files.load_torch_legacy(data, parameter)
    return _tensors(_Unpickler(io.BytesIO(data)).load())
