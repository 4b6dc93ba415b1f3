"""Round 28's tensor names: ``masked_scatter``/``masked_scatter_`` (torch's: the positions
where ``mask`` is true take ``source``'s leading values in row-major order; the gradient of
``self`` is kept where the mask is false, that of ``source`` is the output's gradient at the
masked positions, 0 past them) and ``put``/``put_`` (flat indices; ``accumulate``). Device
forms: the source positions come from a cumulative sum of the mask, with no host read (the
"source too short" check runs on the host only)."""

from __future__ import annotations

import numpy as np

__all__ = ["masked_scatter", "put", "install"]

_BASE: dict = {}


def _arr(v, xp):
    return v._data if isinstance(v, _BASE["Tensor"]) else xp.asarray(v)


def masked_scatter(self, mask, source):
    xp = self.xp
    m = xp.broadcast_to(_arr(mask, xp), self.shape)
    if m.dtype != bool:
        raise TypeError(f"masked_scatter: mask must be bool, got dtype {m.dtype}")
    src = source.reshape(-1)
    if xp is np and int(m.sum()) > src.shape[0]:
        raise ValueError(f"masked_scatter: the mask selects {int(m.sum())} elements, source "
                         f"has only {src.shape[0]}")
    pos = xp.clip(xp.cumsum(m.reshape(-1)) - 1, 0, max(src.shape[0] - 1, 0))
    taken = src[pos.reshape(self.shape)]
    return _BASE["where"](m, taken.astype(self.dtype), self)


def put(self, index, source, accumulate=False):
    """torch's ``Tensor.put``: ``self.view(-1)[index] = source`` (``+=`` with accumulate;
    repeated indices add up then)."""
    xp = self.xp
    idx = _arr(index, xp).reshape(-1).astype(np.int64)
    n = int(np.prod(self.shape))
    idx = xp.where(idx < 0, idx + n, idx)
    flat = self.reshape(-1)
    src = source.reshape(-1).astype(self.dtype)
    if accumulate:
        return flat.index_add(0, _BASE["Tensor"](idx), src).reshape(self.shape)
    return flat.index_copy(0, _BASE["Tensor"](idx), src).reshape(self.shape)


def install(tensor_class, where, in_place) -> None:
    _BASE.update(Tensor=tensor_class, where=where)
    methods = {"masked_scatter": masked_scatter,
               "masked_scatter_": in_place("masked_scatter", masked_scatter),
               "put": put, "put_": in_place("put", put)}
    for name, fn in methods.items():
        if not hasattr(tensor_class, name):
            setattr(tensor_class, name, fn)
