"""torch's ``torch._foreach_*`` list ops, which EMA helpers (timm's ``ModelEmaV3``,
diffusers' ``EMAModel(foreach=True)``) and hand-written optimizers call on lists of tensors:
each is the per-tensor op over the list (a scalar, a list of scalars or a list of tensors as
the second operand, as torch's), the in-place ones (``_foreach_mul_``, ``_foreach_lerp_``, ...)
returning the list they changed, as torch 2.13's."""

from __future__ import annotations

_BINARY = ("add", "sub", "mul", "div", "maximum", "minimum", "pow", "clamp_min", "clamp_max")
_UNARY = ("abs", "neg", "sqrt", "rsqrt", "exp", "log", "log1p", "expm1", "sin", "cos", "tanh",
          "sigmoid", "sign", "reciprocal", "floor", "ceil", "round", "trunc", "frac", "zero")
_TERNARY = ("lerp", "addcmul", "addcdiv")

__all__ = [f"_foreach_{n}{s}" for n in _BINARY + _UNARY + _TERNARY for s in ("", "_")
           if f"{n}{s}" != "zero"] + ["_foreach_norm", "_foreach_copy_"]


def _seq(other, n):
    if isinstance(other, (list, tuple)):
        if len(other) != n:
            raise RuntimeError(f"Tensor lists must have the same number of tensors, got {n} "
                               f"and {len(other)}")
        return list(other)
    return [other] * n


def _method(name, inplace):
    if name in ("clamp_min", "clamp_max"):
        def call(t, *a, **k):
            kw = {"min": a[0]} if name == "clamp_min" else {"max": a[0]}
            return t.clamp_(**kw) if inplace else t.clamp(**kw)
        return call
    if name in ("addcmul", "addcdiv"):  # torch's positional scalar(s) are the method's value=
        def call(t, t1, t2, value=1):
            return getattr(t, name + ("_" if inplace else ""))(t1, t2, value=value)
        return call
    if name in ("maximum", "minimum") and inplace:
        def call(t, o):
            t.copy_(getattr(t, name)(o))
        return call
    return lambda t, *a, **k: getattr(t, name + ("_" if inplace else ""))(*a, **k)


def _make(name, inplace):
    call = _method(name, inplace)

    def op(tensors, *others, **kwargs):
        cols = [_seq(o, len(tensors)) for o in others]  # a list: one operand per tensor
        out = [call(t, *(c[i] for c in cols), **kwargs) for i, t in enumerate(tensors)]
        return tensors if inplace else out  # torch 2.13's in-place ones return their list

    op.__name__ = op.__qualname__ = f"_foreach_{name}{'_' if inplace else ''}"
    op.__doc__ = f"torch's ``{op.__name__}``: ``{name}`` over each tensor of the list."
    return op


for _n in _BINARY + _UNARY + _TERNARY:
    for _inp in (False, True):
        if _n != "zero" or _inp:
            globals()[f"_foreach_{_n}{'_' if _inp else ''}"] = _make(_n, _inp)


def _foreach_norm(tensors, ord=2, dtype=None):  # noqa: A002 - torch's name
    """torch's: each tensor's vector norm, a list of 0-d tensors."""
    from .ops_linalg import vector_norm

    return [vector_norm(t, ord, dtype=dtype) for t in tensors]


def _foreach_copy_(self, src, non_blocking=False):
    """torch's: copy each of ``src`` into ``self``'s tensors."""
    for t, s in zip(self, _seq(src, len(self))):
        t.copy_(s)
    return self
