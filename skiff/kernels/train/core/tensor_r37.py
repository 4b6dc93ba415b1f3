"""Round 37: torch ``Tensor`` methods a port still missed: the in-place forms of the unary
and binary math (``x.sin_()``, ``x.erf_()``, ``x.atan2_(y)``, ``x.lt_(y)``: autograd
records them as torch's in-place ops), torch's aliases (``greater``, ``less_equal``,
``not_equal``, ``multiply``, ``subtract``, ``negative``, ``true_divide``, ``ndimension``),
``broadcast_to``, ``is_same_size``, ``itemsize``, ``is_signed``, ``get_device``,
``isposinf``/``isneginf``/``isreal``, ``addmm``/``baddbmm``/``addbmm``, ``igamma``/
``igammac``, ``i0``, ``mvlgamma``, ``cov``/``corrcoef``, ``split_with_sizes``, ``ldexp``,
``gcd``/``lcm``."""

from __future__ import annotations

__all__ = ["install"]

# x.f_(...) is x.f(...) written into x
_IN_PLACE = (
    "absolute", "acos", "acosh", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh",
    "asin", "asinh", "atan", "atanh", "cos", "cosh", "sin", "sinh", "tan", "deg2rad",
    "rad2deg", "digamma", "erf", "erfc", "erfinv", "exp2", "expm1", "frac", "i0", "lgamma",
    "log10", "log1p", "log2", "reciprocal", "rsqrt", "sgn", "sinc", "trunc", "negative",
    "cumprod", "arctan2", "atan2", "hypot", "fmod", "float_power", "xlogy", "heaviside",
    "multiply", "subtract", "divide", "true_divide", "igamma", "igammac", "polygamma",
    "mvlgamma", "logical_not", "logical_and", "logical_or", "logical_xor", "bitwise_not",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift",
    "addmm", "baddbmm", "addbmm", "ldexp", "gcd", "lcm",
)
# x.lt_(y): the comparison in x's dtype (1.0 / 0.0)
_COMPARE_IN_PLACE = {"eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge",
                     "greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le",
                     "not_equal": "ne"}
_ALIASES = {"greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le",
            "not_equal": "ne", "multiply": "mul", "subtract": "sub", "negative": "neg",
            "true_divide": "div", "ndimension": "dim"}


def _special(name):
    def method(self, other):
        from . import special_r32

        return getattr(special_r32, name)(self, other)

    return method


def _functions(name):
    def method(self, *args, **kwargs):
        from . import functions_more

        return getattr(functions_more, name)(self, *args, **kwargs)

    method.__name__ = name
    return method


def _ops_stats(name):
    def method(self, *args, **kwargs):
        from . import ops_stats

        return getattr(ops_stats, name)(self, *args, **kwargs)

    method.__name__ = name
    return method


def _cov(self, *, correction=1, fweights=None, aweights=None):
    from .tensor_math_r27 import cov

    return cov(self, correction=correction, fweights=fweights, aweights=aweights)


def _corrcoef(self):
    from .tensor_math_r27 import corrcoef

    return corrcoef(self)


def _sign_kind(self):
    return self.dtype.kind in "fic" or self.dtype.name == "bfloat16"


class _ZeroGrad:
    """Made on first use (autograd imports tensor): a node with a zero gradient."""

    fn = None

    @classmethod
    def apply(cls, x, value):
        if cls.fn is None:
            from .autograd import Function, xp_of

            class ZeroGrad(Function):
                def forward(self, a, value=None):
                    self.shape = a.shape
                    return value

                def backward(self, g):
                    return xp_of(g).zeros(self.shape, dtype=g.dtype)

                def backward_t(self, want, g):  # create_graph: still zero (elementwise)
                    return g * 0.0

            cls.fn = ZeroGrad
        return cls.fn.apply(x, value=value)


def _records_zero(fn, grad_enabled):
    """torch's floor/ceil/round/trunc/sign: the result requires grad (a zero gradient) when
    the input does, so a loss through them alone still has a graph (skiff's had none)."""
    def method(self, *args, **kwargs):
        out = fn(self, *args, **kwargs)
        if (self.requires_grad and grad_enabled() and out._node is None
                and out.dtype.kind == "f" and not getattr(self, "_batched", False)):
            return _ZeroGrad.apply(self, out._data)
        return out

    method.__name__ = fn.__name__
    method.__doc__ = fn.__doc__
    return method


def install(tensor_class, in_place, grad_enabled) -> None:
    """Put the methods on ``tensor_class`` where it has none of that name (and the zero
    gradients on its rounding methods)."""
    for name in ("floor", "ceil", "round", "trunc", "fix", "sign"):
        setattr(tensor_class, name, _records_zero(getattr(tensor_class, name), grad_enabled))

    def put(name, fn):
        if not hasattr(tensor_class, name):
            setattr(tensor_class, name, fn)

    for name, base in _ALIASES.items():
        if hasattr(tensor_class, base):
            put(name, getattr(tensor_class, base))
    put("igamma", _special("gammainc"))
    put("igammac", _special("gammaincc"))
    put("i0", lambda self: _special_unary("i0", self))
    put("mvlgamma", _ops_stats("mvlgamma"))
    for name in ("addmm", "baddbmm", "addbmm"):
        put(name, _functions(name))
    put("cov", _cov)
    put("corrcoef", _corrcoef)
    put("broadcast_to", lambda self, size: self.expand(*size))
    put("split_with_sizes", lambda self, split_sizes, dim=0: self.split(list(split_sizes), dim))
    put("ldexp", lambda self, other: self * 2.0 ** other)
    put("gcd", _integer("gcd", tensor_class))
    put("lcm", _integer("lcm", tensor_class))
    put("is_same_size", lambda self, other: tuple(self.shape) == tuple(other.shape))
    put("is_signed", lambda self: _sign_kind(self))
    put("get_device", lambda self: self.device.index if self.is_cuda else -1)
    put("isposinf", lambda self: self.isinf() & (self > 0))
    put("isneginf", lambda self: self.isinf() & (self < 0))
    put("isreal", lambda self: self.imag == 0 if self.is_complex() else self == self)
    if not hasattr(tensor_class, "itemsize"):
        tensor_class.itemsize = property(lambda self: int(self.dtype.itemsize))
    for name in _IN_PLACE:
        if hasattr(tensor_class, name):
            put(name + "_", in_place(name, _call(name)))
    for name, op in _COMPARE_IN_PLACE.items():
        put(name + "_", in_place(name, _compare(op)))


def _integer(name, Tensor):  # noqa: N803 - the class installed on (no import of tensor)
    def method(self, other):
        b = other._data if isinstance(other, Tensor) else other
        return Tensor._make(getattr(self.xp, name)(self._data, b), False, None, 0)

    method.__name__ = name
    return method


def _special_unary(name, self):
    from . import special_r32

    return getattr(special_r32, name)(self)


def _call(name):
    return lambda self, *args, **kwargs: getattr(self, name)(*args, **kwargs)


def _compare(op):
    def fn(self, other):
        out = getattr(self, op)(other)
        return out.astype(self.dtype) if out.dtype != self.dtype else out

    return fn
