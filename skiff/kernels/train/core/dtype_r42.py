"""torch's ``dtype`` attributes on the dtypes skiff hands to ported code that reads them
(round 42): ``v.dtype.is_floating_point`` (YOLOv5's ``ModelEMA``: ``for k, v in
ema.state_dict().items(): if v.dtype.is_floating_point: ...``), ``is_complex``,
``is_signed``, ``itemsize``.

numpy's dtypes are immutable C types (no attribute can be added, no subclass made), so a
:class:`TorchDType` wraps one: every numpy attribute is the wrapped dtype's, it compares and
hashes as that dtype (``==``, dict keys, ``in (torch.float16, ...)``), prints as it, and
numpy takes it wherever a dtype goes (``np.dtype(d)``, ``astype(d)``, ``np.zeros(.., d)``:
numpy reads its ``dtype`` attribute). Used for the state dict's values.
"""

from __future__ import annotations

import numpy as np

__all__ = ["TorchDType", "torch_dtype"]


class TorchDType:
    """A numpy dtype answering torch's ``dtype`` attributes too."""

    __slots__ = ("dtype",)

    def __init__(self, dtype):
        self.dtype = np.dtype(dtype)

    @property
    def __class__(self):
        # round 45 (h7): ``x.dtype`` of every tensor is one of these now, so
        # ``isinstance(x.dtype, np.dtype)`` (``torch.dtype``, skiff's own checks) must hold as
        # it did: isinstance reads ``__class__`` (``type(d)`` is still this class)
        return type(self.dtype)

    @property
    def is_floating_point(self) -> bool:
        return self.dtype.kind == "f" or self.dtype.name == "bfloat16"

    @property
    def is_complex(self) -> bool:
        return self.dtype.kind == "c"

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def kind(self) -> str:
        return self.dtype.kind

    @property
    def is_signed(self) -> bool:
        return self.dtype.kind in "ifc" or self.dtype.name == "bfloat16"

    def to_real(self):
        return torch_dtype(np.empty(0, self.dtype).real.dtype)

    def to_complex(self):
        return torch_dtype(np.result_type(self.dtype, np.complex64))

    def __getattr__(self, name):
        return getattr(self.dtype, name)

    def __eq__(self, other):
        return self.dtype == (other.dtype if isinstance(other, TorchDType) else other)

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(self.dtype)

    def __str__(self):
        return str(self.dtype)

    def __repr__(self):
        return repr(self.dtype)

    def __reduce__(self):  # pickles as numpy's dtype
        return np.dtype, (self.dtype.str,)


class _DTypeClass(type):
    """The class of one dtype's :class:`TorchDType`: numpy's own code reads class attributes
    of ``type(arr.dtype)`` (``_is_numeric`` in ``np.testing``, ``_legacy`` in ``np.save``):
    they are numpy's DType class's."""

    def __getattr__(cls, name):
        if name == "_np_type":
            raise AttributeError(name)
        return getattr(cls._np_type, name)


_CACHE: dict = {}


def torch_dtype(dtype) -> TorchDType:
    """The :class:`TorchDType` of numpy dtype ``dtype`` (one object per dtype)."""
    out = _CACHE.get(dtype)
    if out is None:
        dt = np.dtype(dtype)
        cls = _DTypeClass(f"TorchDType[{dt}]", (TorchDType,),
                          {"__slots__": (), "_np_type": type(dt)})
        out = _CACHE[dtype] = cls(dt)
    return out
