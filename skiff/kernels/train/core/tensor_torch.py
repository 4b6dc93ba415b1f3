"""More of torch's ``Tensor`` methods, the ones ported torch programs reach for: comparisons by
name (``lt``/``gt``/``le``/``ge``), shapes of another tensor (``view_as``, ``reshape_as``,
``expand_as``), ``new_ones``/``new_full``/``new_tensor``, arithmetic by name (``add``, ``mul``,
``pow``, ``neg``, ``reciprocal``, ``log1p``, ``expm1``, ``logsumexp``, ``mm``/``matmul``/``bmm``),
``narrow``/``unbind``, ``multinomial``, item assignment ``x[i] = v`` (differentiable, as
torch's), in-place ``copy_``/``masked_fill_``/``div_``/``clamp_``/``uniform_``/``normal_`` and
iteration over the first axis.

Installed on ``Tensor`` by :mod:`.tensor` (after :mod:`.tensor_more`); like that module it
imports nothing of :mod:`.tensor` (no circle between the two files). Each is checked against
torch in float64 (tests/kernels/train/core/test_torch_ports.py).
"""

from __future__ import annotations

import numpy as np

from . import default_dtype as _dd
from . import ops_math as M
from .autograd import NO_GRAD_MESSAGE, Function, note_write, quiet_fp
from .random import get_generator

_BASE: dict = {}  # Tensor, is_grad_enabled, raw_index: set by install()


def _is_tensor(x) -> bool:
    return isinstance(x, _BASE["Tensor"])


# ---- item assignment and in-place changes ----------------------------------------------------
class _SetItem(Function):
    """``out = a`` with ``out[index] = v``: a new array (what ``a`` held stays for the nodes
    that saved it); the gradient of ``a`` is ``g`` with the written cells zeroed, that of ``v``
    the written cells of ``g`` summed back to ``v``'s shape."""

    def forward(self, a, v, index=None):
        self.index, self.vshape = index, np.shape(v)
        out = a.copy()
        out[index] = v
        return out

    def backward(self, g):
        ga = gv = None
        if self.needs_input_grad[0]:
            ga = g.copy()
            ga[self.index] = 0
        if self.needs_input_grad[1]:
            gv = M.unbroadcast(g[self.index], self.vshape)
        return ga, gv


def _records(t) -> bool:
    """Whether an in-place op on ``t`` is recorded in the graph: grad mode on and ``t`` needs
    a gradient. Under no_grad even a computed tensor is written in place, keeping its node (as
    torch's; a node that saved the array then refuses backward)."""
    return t.requires_grad and _BASE["is_grad_enabled"]()


def _assign(self, new, what: str):
    """Make ``self`` hold ``new`` (a Tensor computed from it): in place on its array when no
    graph is involved (a parameter or buffer under no_grad keeps its array), else by taking
    ``new``'s place in the graph, as torch's in-place ops do."""
    if _batched(self) or _batched(new):  # inside a batched vmap call: the result's place
        return _assign_batched(self, new)
    if self._node is None and self.requires_grad and _BASE["is_grad_enabled"]():
        raise RuntimeError(
            f"{what} changes a leaf tensor that requires grad (a parameter) in place: do it "
            "under skiff.no_grad() as torch asks, or on a .clone()")
    view = self.__dict__.get("_view_of")
    if not _records(self) and new._node is None:
        if new._data is not self._data:
            if view is not None and not isinstance(view, tuple) and not (
                    getattr(self._data, "flags", None) is None or self._data.flags.writeable):
                # a read-only view (numpy's diagonal): write the base, take the new values
                setitem(view.base, view.base_index(), new)
                self._data = new._data
            else:
                self._data[...] = new._data
            note_write(self)
        return self
    piece = self.__dict__.get("_multi_view")
    if piece is not None:
        _refuse_piece(piece, what)
    if view is not None:  # a view of a tensor in the graph: the write reaches that tensor
        if isinstance(view, tuple):  # a basic-index slice (tensor.__getitem__)
            setitem(view[0], view[1], new)
        else:  # a view made by a method (views_r31: t, view, diagonal, select, ...)
            setitem(view.base, view.base_index(), new)
    self._data, self._node, self._idx = new._data, new._node, new._idx
    self.requires_grad = new.requires_grad
    return self


def mark_pieces(pieces, name):
    """``split``/``chunk``/``unbind``'s outputs: views that torch refuses to change in place
    while a graph is recorded (its MULTI_OUTPUT_NODE views; skiff's ``Split`` node would not
    see the write, and the tensor split would keep its old values in the graph)."""
    for i, t in enumerate(pieces):
        d = getattr(t, "__dict__", None)
        if d is not None and not _batched(t):
            d["_multi_view"] = (name, i)
    return pieces


def _refuse_piece(piece, what):
    name, i = piece
    raise RuntimeError(
        f"{what}: output {i} of {name} is a view and is being modified inplace. This view is the "
        "output of a function that returns multiple views (split, chunk, unbind): as in torch, "
        "such views cannot be modified inplace while autograd records; use the out-of-place op, "
        "or .clone() the piece first")


def _batched(t) -> bool:
    return getattr(t, "_batched", False)


def _assign_batched(self, new):
    """An in-place op on a vmap-batched tensor (vmap_r30): ``self`` takes the batched result
    (a write into an unbatched tensor of a batched value needs the loop of calls)."""
    from .vmap_tensor_r30 import NotBatchable

    if not (_batched(self) and _batched(new) and self._level == new._level) or (
            "_view_of" in self.__dict__):
        raise NotBatchable("an in-place write that mixes batched and unbatched tensors, or "
                           "into a slice of another tensor")
    self.__dict__["_phys"] = new._phys
    return self


def fill_(self, value):
    """torch's ``fill_``: in place on the array where no graph is recorded; on a tensor in
    the graph the filled value takes its place (the old values get no gradient; a tensor
    ``value`` gets its own, as torch's)."""
    if not _batched(self) and self._node is None and _records(self):
        raise RuntimeError("fill_ changes a leaf tensor that requires grad (a parameter) in "
                           "place: do it under no_grad() (as torch asks) or on .data")
    if _records(self) or _batched(self) or (_is_tensor(value) and value.requires_grad
                                            and _BASE["is_grad_enabled"]()):
        from . import ops_shape as S

        new = S.Where.apply(self.xp.zeros(tuple(self.shape), dtype=bool), self, value)
        return _assign(self, new if new.dtype == self.dtype else new.astype(self.dtype), "fill_")
    self._data[...] = value._data if _is_tensor(value) else value
    note_write(self)
    return self


def _view_in_place(name, fn):
    """``unsqueeze_``, ``t_``, ...: the tensor takes the new shape (a view of the same
    memory, as torch's; in the graph, the result's place)."""
    def method(self, *args, **kwargs):
        new = fn(self, *args, **kwargs)
        if _records(self) or _batched(self):
            return _assign(self, new, name)
        self._data = new._data
        return self

    method.__name__ = name
    return method


def setitem(self, index, value):
    idx = _BASE["raw_index"](index)
    grads = _BASE["is_grad_enabled"]() and _is_tensor(value) and value.requires_grad
    if not grads and not _records(self) and not (_batched(self) or _batched(value)):
        self._data[idx] = value._data if _is_tensor(value) else value
        note_write(self)
        return
    if not _is_tensor(value):
        value = _BASE["Tensor"](self.xp.asarray(value, dtype=self.dtype))
    _assign(self, _SetItem.apply(self, value, index=idx), "x[...] = v")


_RAW_OPS = {"+=": np.add, "-=": np.subtract, "*=": np.multiply, "/=": np.true_divide}


def inplace_binary(self, other, what: str):
    """``self += other`` (``-=``, ``*=``, ``/=``, ``//=``, ``%=``) as torch's: in place on
    the array when autograd records nothing (a parameter under no_grad, ``p.data``,
    ``p.grad``; the dtype stays, an integer tensor refuses a float), else the result takes
    ``self``'s place in the graph (a parameter outside no_grad is refused)."""
    grads = _BASE["is_grad_enabled"]() and (self.requires_grad or (
        _is_tensor(other) and other.requires_grad))
    if not grads and not (_batched(self) or _batched(other)):
        raw = other._data if _is_tensor(other) else other
        xp = self.xp
        if what in ("//=", "%="):  # through the operators: torch's rounding and zero checks
            new = self // other if what == "//=" else self % other
            if not np.can_cast(new.dtype, self.dtype, "same_kind"):
                raise RuntimeError(f"{what}: the result of dtype {new.dtype} cannot be stored "
                                   f"in a tensor of dtype {self.dtype}")
            self._data[...] = new._data
            note_write(self)
            return self
        try:
            with quiet_fp():  # torch's inf/nan, quietly (x /= 0 warned)
                if xp is np:
                    _RAW_OPS[what](self._data, raw, out=self._data, casting="same_kind")
                else:
                    getattr(xp, _RAW_OPS[what].__name__)(self._data, raw, out=self._data)
        except TypeError as exc:  # numpy's UFuncTypeError: an int tensor /= or += a float
            raise RuntimeError(f"{what}: the result of dtype {np.result_type(self._data, raw)} "
                               f"cannot be stored in a tensor of dtype {self.dtype}") from exc
        note_write(self)
        return self
    new = {
        "+=": lambda: self + other, "-=": lambda: self - other,
        "*=": lambda: self * other, "/=": lambda: self / other,
        "//=": lambda: self // other, "%=": lambda: self % other}[what]()
    if new.dtype != self.dtype:
        new = new.astype(self.dtype)
    return _assign(self, new, what)


def _float(t):
    """An integer or bool tensor as float32 (torch's log1p, expm1 of integers)."""
    return t.astype(_dd.FLOAT) if t.dtype.kind in "iub" else t


def _alpha_in_place(what):
    def method(self, other, *, alpha=1):
        return inplace_binary(self, other if alpha == 1 else other * alpha, what)

    return method


def _addc(kind):
    """``addcmul_``/``addcdiv_``: ``self += value * t1 * t2`` (``t1 / t2``)."""
    def method(self, t1, t2, *, value=1):
        term = t1 * t2 if kind == "mul" else t1 / t2
        return inplace_binary(self, term if value == 1 else term * value, "+=")

    return method


def _in_place(name, fn):
    def method(self, *args, **kwargs):
        return _assign(self, fn(self, *args, **kwargs), f"{name}_")

    method.__name__ = name + "_"
    return method


def copy_(self, src):
    src = src if _is_tensor(src) else _BASE["Tensor"](src)
    new = src.astype(self.dtype)
    if new.shape != self.shape:
        new = new.expand(*self.shape)
    if _batched(self) and _batched(new) and self._level == new._level and not _records(self):
        return _assign_batched(self, new + 0 * self)  # vmap: the batched values, own memory
    if not _records(self) and new._node is None:
        self._data[...] = new._data
        note_write(self)
        return self
    return _assign(self, new + 0 * self.detach(), "copy_")


def _random_fill(draw):
    def method(self, *args, generator=None):
        if _records(self):
            raise RuntimeError("a random fill changes a tensor autograd records: do it under "
                               "skiff.no_grad() (as nn.init does)")
        if _batched(self):  # vmap(randomness="different"): one batched draw, nothing loops
            from .random import per_sample

            dt = self.dtype
            new = per_sample(lambda g, s: np.asarray(draw(g, s, *args), dtype=dt), self.shape,
                             generator)
            if new is not None and new._level == self._level:
                return _assign_batched(self, new)
        host = draw(get_generator(generator), self.shape, *args)
        self._data[...] = self.xp.asarray(host, dtype=self.dtype)
        note_write(self)
        return self

    return method


# ---- sampling ---------------------------------------------------------------------------------
def multinomial(self, num_samples, replacement=False, *, generator=None):
    """torch's ``multinomial``: ``num_samples`` category ids per row of non-negative weights
    (1-D or 2-D), drawn from skiff's seeded generator; int64, no gradient."""
    from .random import per_sample_of

    if self.ndim not in (1, 2):
        raise ValueError(f"multinomial takes 1-D or 2-D weights, got shape {tuple(self.shape)}")
    out = per_sample_of(self, lambda g, w: _draw_multinomial(w, num_samples, replacement, g),
                        generator)
    if out is not None:  # vmap(randomness="different"): all samples' rows at once, no loop
        return out
    w = np.asarray(self.numpy(), dtype=np.float64)
    out = _draw_multinomial(w, num_samples, replacement, get_generator(generator))
    return _BASE["Tensor"](out, device=self.device)


def _draw_multinomial(w, num_samples, replacement, gen):
    """The int64 draws of :func:`multinomial` from host weights ``w`` (..., C)."""
    w = np.asarray(w, dtype=np.float64)
    rows = w.reshape(-1, w.shape[-1])
    if (rows < 0).any() or not np.isfinite(rows).all():
        raise RuntimeError("multinomial: the weights must be finite and non-negative")
    total = rows.sum(axis=1, keepdims=True)
    if (total <= 0).any():
        raise RuntimeError("multinomial: a row of weights sums to zero")
    if not replacement and num_samples > int((rows > 0).sum(axis=1).min()):
        raise RuntimeError("multinomial: cannot draw more samples than there are non-zero "
                           "weights without replacement (pass replacement=True)")
    if replacement:
        cdf = np.cumsum(rows / total, axis=1)
        u = gen.random((len(rows), num_samples))
        out = np.stack([np.searchsorted(c, r, side="right") for c, r in zip(cdf, u)])
        out = np.minimum(out, rows.shape[1] - 1)
    else:  # Gumbel top-k: num_samples distinct ids with the sequential draw's distribution
        with np.errstate(divide="ignore"):
            keys = np.log(rows) + gen.gumbel(size=rows.shape)
        out = np.argsort(-keys, axis=1, kind="stable")[:, :num_samples]
    return out.astype(np.int64).reshape(w.shape[:-1] + (num_samples,))


# ---- shapes and arithmetic by name ------------------------------------------------------------
def narrow(self, dim, start, length):
    from .shape_error import ShapeError, wrap_dim

    dim, start, length = wrap_dim(dim, self.ndim), int(start), int(length)
    size = self.shape[dim]
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], "
                         f"but got {start})")
    start += size if start < 0 else 0
    if length < 0 or start + length > size:  # numpy's slice would give fewer, silently
        raise ShapeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    index = [slice(None)] * self.ndim
    index[dim] = slice(start, start + length)
    return self[tuple(index)]


def unbind(self, dim=0):
    return mark_pieces(tuple(narrow(self, dim, i, 1).squeeze(dim)
                             for i in range(self.shape[dim])), "unbind")


def logsumexp(self, dim, keepdim=False):
    if self.ndim == 0:  # torch's: a 0-d tensor's dim 0 / -1 is the value itself
        M._norm_axis(dim, 0)
        return self * 1
    dims = M._norm_axis(dim, self.ndim)
    xp = self.xp
    if any(self.shape[d] == 0 for d in dims):  # torch's -inf over nothing (amax refuses it)
        m = xp.zeros([1 if i in {d % self.ndim for d in dims} else n
                      for i, n in enumerate(self.shape)], dtype=self.dtype)
    else:  # torch's shift: none where the maximum is infinite (-inf - -inf is nan)
        m = self.detach().amax(dim, keepdim=True)._data
        m = xp.where(xp.isinf(m), xp.zeros((), dtype=m.dtype), m)
    m = type(self)._make(m, False, None, 0)
    out = (self - m).exp().sum(dim, keepdims=True).log() + m
    return out if keepdim else out.squeeze(dim)


def _with_alpha(op):
    def method(self, other, *, alpha=1):
        return op(self, other if alpha == 1 else other * alpha)

    return method


def _iter(self):
    if self.ndim == 0:
        raise TypeError("iteration over a 0-d tensor")
    for i in range(self.shape[0]):
        yield self[i]


def nonzero(self, *, as_tuple=False):
    """torch's ``nonzero``: the (n, ndim) int64 indices of the non-zero entries (or a tuple of
    n index vectors); no gradient."""
    T = _BASE["Tensor"]
    idx = self.xp.nonzero(self._data)
    if as_tuple:
        return tuple(T(i.astype(np.int64)) for i in idx)
    return T(self.xp.stack(idx, axis=1).astype(np.int64) if idx else
             self.xp.zeros((0, 0), dtype=np.int64))


def masked_select(self, mask):
    """torch's ``masked_select``: the entries where ``mask`` (broadcast) is True, as 1-D;
    differentiable."""
    m = mask._data if _is_tensor(mask) else self.xp.asarray(mask)
    shape = np.broadcast_shapes(self.shape, m.shape)
    x = self if tuple(self.shape) == shape else self.expand(*shape)
    return x[self.xp.broadcast_to(m, shape).astype(bool)]


def _scatter_index(self, dim, index):
    from .shape_error import check_index, wrap_dim

    idx = index._data if _is_tensor(index) else self.xp.asarray(index)
    dim = wrap_dim(dim, self.ndim)
    check_index(idx, self.shape[dim], dim)
    grids = [self.xp.arange(n).reshape([-1 if k == d else 1 for k in range(idx.ndim)])
             for d, n in enumerate(idx.shape)]  # open grids, as numpy's indices(sparse=True)
    grids[dim] = idx
    return tuple(grids)


def scatter_(self, dim, index, src=None, *, value=None, reduce=None):
    """torch's ``scatter_``: ``self[..., index[i, j], ...] = src[i, j]`` along ``dim`` (or a
    scalar ``value``; ``reduce="add"``/``"multiply"``); in place, recording nothing (under
    no_grad for a tensor that needs a gradient, as torch's in-place ops)."""
    if _records(self) or (_is_tensor(src) and src.requires_grad
                          and _BASE["is_grad_enabled"]()) or _batched(self) or (
            _batched(src)):  # in the graph or a batched vmap call: ops_scatter's node
        return _assign(self, scatter(self, dim, index, src, value=value, reduce=reduce),
                       "scatter_")
    where = _scatter_index(self, dim, index)
    if src is None:
        src = value
    v = src._data[tuple(slice(0, n) for n in where_shape(where))] if _is_tensor(src) else src
    if reduce is None:
        self._data[where] = v
    elif reduce == "add" and self.xp is np:
        np.add.at(self._data, where, v)
    elif reduce == "add":
        import cupyx

        cupyx.scatter_add(self._data, where, v)
    elif reduce == "multiply" and self.xp is np:
        np.multiply.at(self._data, where, v)
    else:
        raise ValueError(f"reduce is 'add' or 'multiply' (on the CPU), got {reduce!r}")
    note_write(self)
    return self


def scatter(self, dim, index, src=None, *, value=None, reduce=None):
    """torch's ``scatter`` (a new tensor); without gradients (refused when one is wanted)."""
    if (_BASE["is_grad_enabled"]() and (self.requires_grad or (
            _is_tensor(src) and src.requires_grad))) or _batched(self) or (
            _batched(src)):  # torch's gradients, vmap's rule (ops_scatter.py)
        from . import ops_scatter

        if reduce is None:
            return ops_scatter.scatter_grad(self, dim, index, src, value=value)
        if reduce == "add":
            return ops_scatter.scatter_reduce(self, dim, index,
                                              src if src is not None else value, "sum")
        raise ValueError(f"scatter with gradients: reduce is None or 'add', got {reduce!r} "
                         "(scatter_reduce has 'mean', 'amax', 'amin')")
    out = _BASE["Tensor"](self._data.copy(), dtype=self.dtype)
    return scatter_(out, dim, index, src, value=value, reduce=reduce)


def where_shape(where):
    return np.broadcast_shapes(*(np.shape(w) for w in where))


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False,
             **_):
    """torch's ``new_full`` (and ``new_zeros``/``new_ones``/``new_empty``): ``self``'s dtype
    and device unless given; a meta tensor's is meta (no memory)."""
    from . import meta_r41 as _meta

    shape = tuple(size) if isinstance(size, (tuple, list)) else (size,)
    dt = dtype or self.dtype
    if _meta.is_meta_spec(device) or (device is None and _meta.is_meta(
            self.__dict__.get("_data"))):  # (a vmap stand-in has no _data)
        out = _BASE["Tensor"](_meta.meta_array(shape, np.dtype(dt)), dtype=dt)
    elif device is not None:
        out = _BASE["Tensor"](np.full(shape, fill_value, dtype=dt), dtype=dt, device=device)
    else:
        out = _BASE["Tensor"](self.xp.full(shape, fill_value, dtype=dt), dtype=dt)
    return out.requires_grad_(True) if requires_grad else out


_REPLACES = ("add_", "sub_", "mul_", "fill_", "zero_")  # tensor_more's take no alpha and
# refuse a graph


def backward_create_graph(t, grad, inputs, create_graph, retain_graph=False) -> None:
    """``t.backward(grad, create_graph=True)`` and ``t.backward(inputs=...)``: the gradient
    engine of :mod:`.double_backward` (imported here on first use); ``inputs`` without it:
    first-order gradients into those tensors only."""
    from .double_backward import backward_graph

    if not t.requires_grad:
        raise RuntimeError(NO_GRAD_MESSAGE)
    if grad is None and t._data.size != 1:
        raise RuntimeError(
            f"backward needs a grad argument for a non-scalar tensor of shape {t.shape}")
    if inputs is not None and not isinstance(inputs, (list, tuple)):
        inputs = [inputs]
    if create_graph:
        backward_graph([t], [grad], inputs, True)
    else:
        from .torch_autograd import backward_into

        backward_into([t], [grad], list(inputs), retain_graph)


def install(tensor_class, grad_enabled, raw_index) -> None:
    """Attach the methods to ``tensor_class`` (idempotent); ``grad_enabled`` and
    ``raw_index`` are tensor.py's ``is_grad_enabled`` and index unwrapping."""
    _BASE.update(Tensor=tensor_class, is_grad_enabled=grad_enabled, raw_index=raw_index)

    def shape_of(args):
        return tuple(args[0]) if len(args) == 1 and isinstance(args[0], (tuple, list)) else args

    methods = {
        "__setitem__": setitem, "__iter__": _iter,
        "lt": lambda self, o: self < o, "gt": lambda self, o: self > o,
        "le": lambda self, o: self <= o, "ge": lambda self, o: self >= o,
        "view_as": lambda self, other: self.reshape(other.shape),
        "reshape_as": lambda self, other: self.reshape(other.shape),
        "expand_as": lambda self, other: self.expand(*other.shape),
        "new_ones": lambda self, *shape, **kw: new_full(self, shape_of(shape), 1, **kw),
        "new_empty": lambda self, *shape, **kw: new_full(self, shape_of(shape), 0, **kw),
        "new_full": new_full,
        "new_tensor": lambda self, data, dtype=None: tensor_class(
            data, dtype=dtype or self.dtype, device=self.device),
        "add": _with_alpha(lambda a, b: a + b), "sub": _with_alpha(lambda a, b: a - b),
        "mul": lambda self, o: self * o, "div": lambda self, o: self / o,
        "pow": lambda self, o: self ** o, "neg": lambda self: -self,
        "reciprocal": lambda self: 1.0 / self,
        "log1p": lambda self: M.Log1p.apply(_float(self)),
        "expm1": lambda self: M.Expm1.apply(_float(self)),
        "logsumexp": logsumexp,
        "mm": lambda self, o: self @ o, "matmul": lambda self, o: self @ o,
        "bmm": lambda self, o: self @ o,
        "narrow": narrow, "unbind": unbind, "multinomial": multinomial,
        "nonzero": nonzero, "masked_select": masked_select, "scatter_": scatter_,
        "scatter": scatter,
        "scatter_add_": lambda self, dim, index, src: scatter_(self, dim, index, src,
                                                               reduce="add"),
        "nelement": lambda self: int(self.size),
        "element_size": lambda self: int(self.dtype.itemsize),
        "copy_": copy_,
        "fill_": fill_, "zero_": lambda self: fill_(self, 0),
        "unsqueeze_": _view_in_place("unsqueeze_", lambda s, dim: s.unsqueeze(dim)),
        "squeeze_": _view_in_place("squeeze_", lambda s, dim=None: s.squeeze(dim)),
        "t_": _view_in_place("t_", lambda s: s.t()),
        "transpose_": _view_in_place("transpose_", lambda s, a, b: s.transpose(a, b)),
        "swapaxes_": _view_in_place("swapaxes_", lambda s, a, b: s.transpose(a, b)),
        "swapdims_": _view_in_place("swapdims_", lambda s, a, b: s.transpose(a, b)),
        "add_": _alpha_in_place("+="), "sub_": _alpha_in_place("-="),
        "mul_": lambda self, o: inplace_binary(self, o, "*="),
        "addcmul_": _addc("mul"), "addcdiv_": _addc("div"),
        "lerp_": lambda self, end, weight: inplace_binary(self, (end - self) * weight, "+="),
        "masked_fill_": _in_place("masked_fill", lambda s, mask, v: s.masked_fill(mask, v)),
        "div_": _in_place("div", lambda s, v: s / v),
        "clamp_": _in_place("clamp", lambda s, min=None, max=None: s.clamp(min, max)),  # noqa: A006
        "pow_": _in_place("pow", lambda s, v: s ** v),
        "neg_": _in_place("neg", lambda s: -s),
        "exp_": _in_place("exp", lambda s: s.exp()),
        "sqrt_": _in_place("sqrt", lambda s: s.sqrt()),
        "uniform_": _random_fill(lambda g, shape, a=0.0, b=1.0: g.uniform(a, b, shape)),
        "normal_": _random_fill(lambda g, shape, mean=0.0, std=1.0: g.normal(mean, std, shape)),
    }
    for name, fn in methods.items():
        if name.startswith("__") or name in _REPLACES or not hasattr(tensor_class, name):
            setattr(tensor_class, name, fn)


__all__ = ["install", "multinomial"]
