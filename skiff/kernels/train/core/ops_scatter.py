"""torch's scatters with gradients: ``scatter_reduce`` ("sum", "prod", "mean", "amax", "amin";
``include_self``), ``scatter_add``, ``scatter`` (replace) and their in-place forms on tensors
in the graph, ``index_fill`` and ``index_copy``: one node (``ScatterReduceFn``) whose backward
is torch's: the gradient of ``src`` is the output gradient gathered at ``index`` (divided by
the count for "mean"; shared evenly among the values equal to the result for "amax"/"amin"),
that of ``self`` is kept where ``self`` took part and 0 where it was replaced. A GNN's
``zeros(N, D).scatter_add(0, edge_index, messages)`` or ``scatter_reduce(..., "mean")``
trains as in torch. "prod" (round 33): the product of the group's other factors, exact where
some are 0. (Gradients of gradients are refused.)"""

from __future__ import annotations

import numpy as np

from .autograd import Function, xp_of
from .shape_error import check_index, wrap_dim

__all__ = ["scatter_reduce", "scatter_add", "scatter_grad", "index_fill", "index_copy",
           "install"]

_BASE: dict = {}
_REDUCES = ("sum", "mean", "amax", "amin", "replace")


def _grids(xp, dim, idx):
    grids = [xp.arange(n).reshape([-1 if k == d else 1 for k in range(idx.ndim)])
             for d, n in enumerate(idx.shape)]
    grids[dim] = idx
    return tuple(xp.broadcast_to(g, idx.shape) for g in grids)


class ScatterReduceFn(Function):
    def forward(self, x, src, dim=0, index=None, reduce="sum", include_self=True):
        xp = xp_of(x)
        where = _grids(xp, dim, index)
        part = src[tuple(slice(0, n) for n in index.shape)]
        touched = xp.zeros(x.shape, dtype=bool)
        touched[where] = True
        count = xp.zeros(x.shape, dtype=x.dtype)
        np.add.at(count, where, 1) if xp is np else _add_at(count, where, 1)
        inc = bool(include_self)
        out = x.copy()
        if reduce == "replace":
            out[where] = part
        elif reduce in ("sum", "mean"):
            if not inc:
                out[touched] = 0
            np.add.at(out, where, part) if xp is np else _add_at(out, where, part)
            if reduce == "mean":
                denom = xp.where(touched, count + inc, 1).astype(x.dtype)
                out = out / denom
                if xp.issubdtype(x.dtype, xp.integer):  # torch floors an integer mean
                    out = xp.floor(out).astype(x.dtype)
        elif reduce == "prod":  # round 33
            if not inc:
                out[touched] = 1
            base = out.copy()
            mul = np.multiply.at if xp is np else _mul_at
            mul(out, where, part)
            # for the gradient: each group's zeros and its product without them (the product
            # of "all the others" is then exact where a factor is 0, as torch's)
            zeros = (base == 0).astype(np.int64)
            np.add.at(zeros, where, (part == 0).astype(np.int64)) if xp is np else _add_at(
                zeros, where, (part == 0).astype(np.int64))
            nzp = xp.where(base == 0, 1, base).astype(x.dtype)
            mul(nzp, where, xp.where(part == 0, 1, part).astype(x.dtype))
            self.prod_extra = (zeros, nzp)
        elif reduce in ("amax", "amin"):
            ufunc = np.maximum if reduce == "amax" else np.minimum
            if not inc:
                info = np.finfo if x.dtype.kind == "f" else np.iinfo
                out[touched] = (-np.inf if reduce == "amax" else np.inf) \
                    if x.dtype.kind == "f" else (info(x.dtype).min if reduce == "amax"
                                                 else info(x.dtype).max)
            if xp is np:
                ufunc.at(out, where, part)
            else:  # pragma: no cover - GPU
                import cupyx

                (cupyx.scatter_max if reduce == "amax" else cupyx.scatter_min)(out, where, part)
        else:
            raise ValueError(f"scatter_reduce: reduce must be one of 'sum', 'prod', 'mean', "
                             f"'amax', 'amin' (with gradients), got {reduce!r}")
        self.where, self.reduce, self.inc, self.shape = where, reduce, inc, src.shape
        self.dim, self.index = dim, index  # prod's double backward calls it again (round 46)
        keep = reduce in ("amax", "amin", "prod")
        self.save_for_backward(touched, count, x if keep else None, part if keep else None,
                               out)
        return out

    def backward(self, g):
        touched, count, x, part, out = self.saved
        xp, where = xp_of(g), self.where
        keep_self = ~touched if (self.reduce == "replace" or not self.inc) else None
        if self.reduce in ("sum", "replace"):
            gx = g if keep_self is None else xp.where(keep_self, g, 0)
            gs = g[where]
        elif self.reduce == "prod":
            zeros, nzp = self.prod_extra

            def others(v, z, p, o):  # the product of a group's other factors than v
                with np.errstate(divide="ignore", invalid="ignore"):
                    alone = xp.where(v == 0, 1, v)
                    return xp.where(z == 0, o / alone, xp.where((z == 1) & (v == 0), p, 0))

            gx = xp.where(touched, g * others(x, zeros, nzp, out) if self.inc else 0, g)
            gs = g[where] * others(part, zeros[where], nzp[where], out[where])
        elif self.reduce == "mean":
            denom = xp.where(touched, count + self.inc, 1).astype(g.dtype)
            gd = g / denom
            gx = xp.where(touched, gd if self.inc else 0, g)
            gs = gd[where]
        else:
            hits = xp.zeros(out.shape, dtype=g.dtype)  # how many values equal the result
            src_hit = (part == out[where]).astype(g.dtype)
            np.add.at(hits, where, src_hit) if xp is np else _add_at(hits, where, src_hit)
            # torch's rule counts the old value when it equals the result even with
            # include_self=False (its N_to_distribute: ``self == result`` then the sources)
            self_hit = ((x == out) & touched).astype(g.dtype)
            hits = hits + self_hit
            share = g / xp.where(hits > 0, hits, 1)
            gx = xp.where(touched, share * self_hit, g) if self.inc else xp.where(touched, 0, g)
            gs = share[where] * src_hit
        full = xp.zeros(self.shape, dtype=g.dtype)
        full[tuple(slice(0, n) for n in gs.shape)] = gs
        return gx, full


def _mul_at(a, where, v):  # pragma: no cover - GPU (cupy has no multiply.at: on the host)
    import cupy

    host = cupy.asnumpy(a)
    np.multiply.at(host, tuple(cupy.asnumpy(w) for w in where), cupy.asnumpy(v))
    a[...] = cupy.asarray(host)


def _add_at(a, where, v):  # pragma: no cover - GPU
    import cupyx

    cupyx.scatter_add(a, where, v)


def _index_of(t, index):
    T = _BASE["Tensor"]
    return index._data if isinstance(index, T) else t.xp.asarray(index)


def _src(t, src):
    T = _BASE["Tensor"]
    if isinstance(src, T):
        return src
    return T(t.xp.full(t.shape, src, dtype=t.dtype), dtype=t.dtype)


def scatter_reduce(self, dim, index, src, reduce, *, include_self=True):
    idx = _index_of(self, index).astype(np.int64)
    dim = wrap_dim(dim, self.ndim)
    check_index(idx, self.shape[dim], dim)
    return ScatterReduceFn.apply(self, _src(self, src), dim=dim, index=idx,
                                 reduce=reduce, include_self=include_self)


def scatter_add(self, dim, index, src):
    return scatter_reduce(self, dim, index, src, "sum")


def scatter_grad(self, dim, index, src=None, *, value=None):
    """``scatter`` (replace) with gradients (torch's: 0 for ``self`` where replaced)."""
    return scatter_reduce(self, dim, index, src if src is not None else value, "replace")


def index_fill(self, dim, index, value):
    """Along ``dim``, the entries at ``index`` set to ``value`` (no gradient there)."""
    idx = _index_of(self, index).reshape(-1)
    dim = wrap_dim(dim, self.ndim)
    mask = self.xp.zeros(self.shape[dim], dtype=bool)
    mask[idx] = True
    mask = mask.reshape([-1 if k == dim else 1 for k in range(self.ndim)])
    v = value._data if isinstance(value, _BASE["Tensor"]) else value
    return _BASE["where"](mask, self.xp.asarray(v, dtype=self.dtype), self)


def index_copy(self, dim, index, source):
    """Along ``dim``, slice ``index[i]`` replaced by ``source``'s slice ``i``."""
    idx = _index_of(self, index).reshape(-1).astype(np.int64)
    d = wrap_dim(dim, self.ndim)
    shape = [1] * self.ndim
    shape[d] = -1
    full = self.xp.broadcast_to(idx.reshape(shape), tuple(source.shape))
    return scatter_reduce(self, d, full, source, "replace")


def index_reduce(self, dim, index, source, reduce, *, include_self=True):
    """torch's ``index_reduce``: along ``dim``, slice ``index[i]`` reduced (``prod``,
    ``mean``, ``amax``, ``amin``) with ``source``'s slice ``i`` (a scatter_reduce)."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    idx = _index_of(self, index).reshape(-1).astype(np.int64)
    d = wrap_dim(dim, self.ndim)
    shape = [1] * self.ndim
    shape[d] = -1
    full = self.xp.broadcast_to(idx.reshape(shape), tuple(source.shape))
    return scatter_reduce(self, d, full, source, reduce, include_self=include_self)


def install(tensor_class, where, in_place) -> None:
    _BASE.update(Tensor=tensor_class, where=where)
    methods = {
        "scatter_reduce": scatter_reduce,
        "scatter_reduce_": in_place("scatter_reduce", scatter_reduce),
        "scatter_add": scatter_add,
        "index_fill": index_fill, "index_fill_": in_place("index_fill", index_fill),
        "index_copy": index_copy, "index_copy_": in_place("index_copy", index_copy),
        "index_reduce": index_reduce, "index_reduce_": in_place("index_reduce", index_reduce),
    }
    for name, fn in methods.items():
        if not hasattr(tensor_class, name):
            setattr(tensor_class, name, fn)
