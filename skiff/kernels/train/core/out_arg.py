"""torch's ``out=`` argument on the function forms (``torch.add(a, b, out=o)``,
``torch.sum(x, 1, out=o)``, ``torch.cat(ts, out=o)``, ``torch.max(x, 1, out=(v, i))``):
the result is written into ``out`` (a view writes through to its base) and ``out`` is
returned, with torch's rules:

- an argument that requires grad (grad mode on), or ``out`` itself requiring grad, is
  torch's RuntimeError ("functions with out=... arguments don't support automatic
  differentiation");
- a result that cannot be cast to ``out``'s dtype (float into an integer or bool tensor,
  complex into real) is torch's RuntimeError ("result type Float can't be cast to the
  desired output type Long"); an integer result into a float ``out`` is kept;
- ``out`` of another shape is resized (a UserWarning when it had elements, as torch's).
"""

from __future__ import annotations

import functools
import warnings

_TORCH = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
          "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
          "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}
_RANK = {"b": 0, "u": 1, "i": 1, "f": 2, "V": 2, "c": 3}  # bool < int < float < complex


def _kind(dt) -> int:
    return 2 if dt.name == "bfloat16" else _RANK.get(dt.kind, 2)


def _tensors(args, kwargs):
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, (list, tuple)):
            yield from (t for t in a if hasattr(t, "_node"))
        elif hasattr(a, "_node"):
            yield a


def _write(name, result, out, creation=False):
    if not hasattr(out, "_data") or not hasattr(result, "_data"):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    src, dst = result.dtype, out.dtype
    if _kind(src) > _kind(dst) and not creation:  # a factory fills out in out's dtype
        raise RuntimeError(f"result type {_TORCH.get(src.name, src.name)} can't be cast to "
                           f"the desired output type {_TORCH.get(dst.name, dst.name)}")
    arr = result._data
    if tuple(out.shape) != tuple(arr.shape):
        if out._data.size:
            warnings.warn(
                f"An output with one or more elements was resized since it had shape "
                f"{list(out.shape)}, which does not match the required output shape "
                f"{list(arr.shape)}. This behavior is deprecated, and in a future PyTorch "
                "release outputs will not be resized unless they have zero elements. You can "
                "explicitly reuse an out tensor t by resizing it, inplace, to zero elements "
                "with t.resize_(0).", UserWarning, stacklevel=4)
        out._data = arr.astype(dst, copy=True)
    else:
        from .autograd import no_grad

        with no_grad():  # torch's in-place write: versioned, through a view to its base
            out.copy_(result.detach() if src == dst else result.detach().to(dtype=dst))
    return out


def with_out(fn=None, name=None, creation=False):
    """``fn`` taking torch's keyword ``out=`` (a tensor, or a tuple for a tuple result);
    ``creation``: a factory (``zeros``, ``arange``), its values in ``out``'s dtype."""
    if fn is None:
        return functools.partial(with_out, name=name, creation=creation)
    name = name or fn.__name__

    @functools.wraps(fn)
    def wrapped(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        from .autograd import is_grad_enabled

        outs = tuple(out) if isinstance(out, (list, tuple)) else (out,)
        if is_grad_enabled() and any(getattr(t, "requires_grad", False) for t in
                                     (*_tensors(args, kwargs), *outs)):
            raise RuntimeError(f"{name}(): functions with out=... arguments don't support "
                               "automatic differentiation, but one of the arguments requires "
                               "grad.")
        result = fn(*args, **kwargs)
        if isinstance(out, (list, tuple)):
            if not isinstance(result, tuple) or len(result) != len(out):
                raise TypeError(f"{name}(): out= takes one tensor here, got {len(out)}")
            for r, o in zip(result, out):
                _write(name, r, o)
            return type(result)(*out) if hasattr(result, "_fields") else tuple(out)
        if creation and result.dtype != out.dtype:
            result = result.to(dtype=out.dtype)
        return _write(name, result, out, creation)

    return wrapped


__all__ = ["with_out"]
