"""torch's views beyond basic-index slices: an in-place op on ``y.t()``, ``y.diagonal()``,
``y.view(2, 8)``, ``y.select(1, 2)``, ``y.narrow(0, 1, 2)``, ``y.unsqueeze(0)``,
``y.permute(...)``, ``y.flatten()`` (where it is a view), ... writes through to ``y``, as
torch's does, also through a chain of views (``y.t()[0].mul_(2)``).

How: each view method of ``Tensor`` is wrapped (by :func:`install`, after every other module
put its methods there); the result remembers ``(base, method, args)`` in ``_view_of``. An
in-place op on it in the graph (``tensor_torch._assign``) asks :meth:`MethodView.base_index`:
the same method run on an array of the base's flat positions gives, for each element of the
view, the position it reads, as an advanced index of the base; the new values are written
there by ``x[index] = v`` (differentiable), which reaches the base's own base in turn.
Outside the graph a write goes to the view's array; where that is not the base's memory
(numpy's ``diagonal`` copies), ``autograd.note_write`` copies it into the base
(:meth:`MethodView.write_back`). ``reshape`` and ``flatten`` are views only where numpy's
reshape is one (torch's rule: a copy otherwise).
``split``/``chunk``/``unbind`` pieces are not (torch refuses in-place ops on them).
"""

from __future__ import annotations

import functools

import numpy as np

# methods whose result is always a view of the tensor (torch's "view ops")
ALWAYS = ("t", "transpose", "permute", "view", "diagonal", "select", "narrow", "unsqueeze",
          "squeeze", "unflatten", "movedim", "moveaxis", "swapaxes", "swapdims", "view_as")
# methods that give a view where the memory allows it (torch's reshape: else a copy)
MAYBE = ("reshape", "flatten")
PROPERTIES = ("T", "mT")


class MethodView:
    """``_view_of`` of a view made by a method: the base and how it was made."""

    __slots__ = ("base", "name", "args", "kwargs")

    def __init__(self, base, name, args, kwargs):
        self.base, self.name, self.args, self.kwargs = base, name, args, kwargs

    def base_index(self):
        """The advanced index of the base that the view's elements read (view's shape)."""
        from .autograd import no_grad

        base = self.base
        xp = base.xp
        n = int(np.prod(base.shape, dtype=np.int64))
        pos = type(base)._make(xp.arange(n, dtype=np.int64).reshape(tuple(base.shape)),
                               False, None, 0)
        with no_grad():
            fn = getattr(type(base), self.name)
            v = fn.fget(pos) if isinstance(fn, property) else fn(pos, *self.args, **self.kwargs)
        return tuple(xp.unravel_index(v._data, tuple(base.shape)))

    def write_back(self, t):
        """After a raw in-place write to ``t``'s array (outside the graph): where that array
        is not the base's memory (a read-only or copied view), write its values there too."""
        from .autograd import note_write

        base = self.base
        if _shares(t, base) and _writable(t):
            return
        if getattr(base._data, "flags", None) is not None and not base._data.flags.writeable:
            return
        base._data[self.base_index()] = t._data
        note_write(base)


def _shares(out, base) -> bool:
    a, b = out._data, base._data
    xp = getattr(out, "xp", np)
    may = getattr(xp, "may_share_memory", None)
    return may is None or bool(may(a, b))


def _writable(out) -> bool:
    flags = getattr(out._data, "flags", None)
    return flags is None or bool(getattr(flags, "writeable", True))


def _record(self, out, name, args, kwargs, maybe):
    if out is self or getattr(out, "_batched", False) or getattr(self, "_batched", False):
        return out
    if maybe:  # a view only where the memory is the same (else torch's reshape copies)
        a, b = out._data, self._data
        owner = getattr(a, "base", None)
        if owner is None or not (owner is b or owner is getattr(b, "base", None)):
            if not _shares(out, self):
                return out
    d = getattr(out, "__dict__", None)
    if d is not None:
        d["_view_of"] = MethodView(self, name, args, kwargs)
    return out


def _wrap(fn, name, maybe):
    @functools.wraps(fn)
    def method(self, *args, **kwargs):
        return _record(self, fn(self, *args, **kwargs), name, args, kwargs, maybe)

    method._skiff_view = True
    return method


def install(Tensor):
    for name in ALWAYS + MAYBE:
        fn = Tensor.__dict__.get(name)
        if fn is None:
            for klass in Tensor.__mro__[1:]:
                fn = klass.__dict__.get(name)
                if fn is not None:
                    break
        if fn is None or getattr(fn, "_skiff_view", False) or not callable(fn):
            continue
        setattr(Tensor, name, _wrap(fn, name, name in MAYBE))
    for name in PROPERTIES:
        prop = Tensor.__dict__.get(name)
        if not isinstance(prop, property) or getattr(prop.fget, "_skiff_view", False):
            continue

        def fget(self, _f=prop.fget, _n=name):
            return _record(self, _f(self), _n, (), {}, False)

        fget._skiff_view = True
        setattr(Tensor, name, property(fget, prop.fset, prop.fdel, prop.__doc__))
