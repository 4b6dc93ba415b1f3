"""torch's top-level names beside ``skiff.tensor``: ``manual_seed``, ``device``, the dtypes
(``skiff.float64``, ``skiff.long``), ``from_numpy``/``as_tensor``/``is_tensor``, ``equal``/
``allclose``, ``randn_like``/``rand_like``/``full_like``/``empty``/``randint``/``randperm``/
``linspace``, ``multinomial``, ``save``/``load``, grad-mode switches, and the function forms
of the tensor methods (``skiff.flatten(x, 1)``, ``skiff.exp(x)``, ``skiff.max(x, 1)``).

Re-exported by :mod:`skiff.api`; each is checked against torch in
tests/kernels/train/core/test_torch_ports.py.
"""

from __future__ import annotations

import builtins as _b

import numpy as np

from . import default_dtype as _dd
from . import tensor as _tensor_mod
from .autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .functions_more import addbmm, addmm, baddbmm, bernoulli, meshgrid, tensordot
from .out_arg import with_out
from .random import get_generator
from .random import seed as _seed
from .serialize import load, save
from .tensor import Tensor, _as_dtype, _shape_arg, tensor
from .tensor_math_r27 import FUNCTIONS as _R27_FUNCTIONS
from .tensor_math_r27 import METHODS as _R27_METHODS
from .torch_runtime import (
    Generator,
    are_deterministic_algorithms_enabled,
    get_float32_matmul_precision,
    get_num_threads,
    get_rng_state,
    set_float32_matmul_precision,
    set_num_threads,
    set_printoptions,
    set_rng_state,
    use_deterministic_algorithms,
)

float16 = half = np.dtype(np.float16)
iinfo = np.iinfo


def __getattr__(name: str):
    """``bfloat16`` is made on first use: its dtype comes from ml_dtypes, whose extension
    takes ~0.6 s to load, and most trainings never ask for it (PEP 562)."""
    if name != "bfloat16":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        value = _as_dtype("bfloat16")
    except ValueError:  # pragma: no cover - without ml_dtypes
        value = None
    globals()["bfloat16"] = value
    return value


def finfo(dtype=None):
    """torch's ``finfo``: ``skiff.finfo(skiff.float32).min`` (float32 when no dtype; bfloat16
    through ml_dtypes)."""
    dt = _as_dtype(dtype) or _dd.FLOAT
    if dt.name == "bfloat16":
        import ml_dtypes

        return _FInfo(ml_dtypes.finfo(dt), dt)
    return _FInfo(np.finfo(dt), dt)


class _FInfo:
    """torch's ``finfo``: Python floats (round 45 h7: numpy scalars, so ``json.dumps`` of a
    config holding ``finfo(x.dtype).eps`` failed), ``dtype`` a string, torch's repr."""

    _FIELDS = ("resolution", "min", "max", "eps", "smallest_normal", "tiny")

    def __init__(self, info, dt):
        self.bits = _b.int(info.bits)  # (this module's ``int``/``float`` are dtypes)
        for name in self._FIELDS:
            setattr(self, name, _b.float(getattr(info, name)))
        self.resolution = 10.0 ** -_b.int(info.precision)  # torch's: exactly 1e-6 for float32
        self.dtype = dt.name

    def __repr__(self):
        parts = ", ".join(f"{n}={getattr(self, n):g}" for n in self._FIELDS)
        return f"finfo({parts}, dtype={self.dtype})"
float32 = float = np.dtype(np.float32)  # noqa: A001 - torch's names
float64 = double = np.dtype(np.float64)
int8, uint8, int16 = np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16)
int32 = int = np.dtype(np.int32)  # noqa: A001
int64 = long = np.dtype(np.int64)
bool = np.dtype(np.bool_)  # noqa: A001


class inference_mode(no_grad):
    """torch's ``inference_mode(mode=True)``: no graph inside (skiff keeps no inference-tensor
    flag: this is ``no_grad``); ``inference_mode(False)`` turns grad mode on, as torch's.
    Also a decorator, with or without the call (``@inference_mode``)."""

    def __new__(cls, mode=True):
        if callable(mode):  # the bare decorator
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode=True):
        self.inference = _b.bool(mode)
        set_grad_enabled.__init__(self, not self.inference)  # torch's guard: grad = not mode

    def __enter__(self):
        global _INFERENCE
        self.prev_inference = _INFERENCE
        _INFERENCE = _tensor_mod._IN_INFERENCE = self.inference
        return super().__enter__()

    def __exit__(self, *exc):
        global _INFERENCE
        _INFERENCE = _tensor_mod._IN_INFERENCE = self.prev_inference
        return super().__exit__(*exc)

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with inference_mode(self.inference):
                return fn(*args, **kwargs)

        return wrapper


_INFERENCE = False


def is_inference_mode_enabled() -> bool:
    """torch's: whether an ``inference_mode()`` block is open."""
    return _INFERENCE


def manual_seed(seed):
    """torch's ``manual_seed``: reset skiff's generator (weights, dropout, ``randn``) to
    ``seed``. The numbers are numpy's, not torch's: the same seed gives the same run in
    skiff, not torch's weights (copy those with ``load_state_dict``)."""
    return _seed(seed)


def _meta_device(device):
    from .meta_r41 import factory_device

    return factory_device(device)


def _meta_tensor(shape, dt) -> Tensor:
    from .meta_r41 import meta_array

    return Tensor(meta_array(shape, dt), dtype=dt)


def device(spec="cpu", index=None):
    """torch's ``device("cpu")`` / ``device("cuda", 0)``: skiff's device object."""
    from skiff.kernels.backend import resolve_device

    from .meta_r41 import META, is_meta_spec

    if is_meta_spec(spec):  # torch's shapes-only device (a context manager too)
        return META
    return resolve_device(spec if index is None else f"{spec}:{index}")


def from_numpy(array) -> Tensor:
    """A tensor on ``array`` itself (no copy, dtype kept, float64 too)."""
    array = np.asarray(array)
    return Tensor._make(array, False, None, 0)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    if isinstance(data, Tensor) and dtype is None and device is None:
        return data
    if hasattr(data, "dtype") and hasattr(data, "shape") and dtype is None and not isinstance(
            data, Tensor):
        dtype = data.dtype  # an array keeps its dtype and, when nothing changes, its memory
    return Tensor(data, dtype=dtype, device=device)


def is_tensor(x) -> bool:
    return isinstance(x, Tensor)


def numel(x) -> int:
    return x.numel()


def equal(a, b) -> bool:
    """Same shape and the same values."""
    return a.shape == b.shape and _b.bool((np.asarray(a.numpy()) == np.asarray(b.numpy())).all())


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    return _b.bool(np.allclose(_np(a), _np(b), rtol=rtol, atol=atol, equal_nan=equal_nan))


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False) -> Tensor:
    return tensor(np.isclose(_np(a), _np(b), rtol=rtol, atol=atol, equal_nan=equal_nan))


def _np(x):
    return x.numpy() if isinstance(x, Tensor) else np.asarray(x)


def _like(draw):
    def make(input, *, dtype=None, device=None, requires_grad=False, generator=None):  # noqa: A002
        dt = _as_dtype(dtype) or input.dtype
        from . import random as _rnd

        if _rnd.batched_draw is not None and input.xp is np:  # vmap, randomness="different"
            out = _rnd.batched_draw(lambda g, shape: np.asarray(draw(g, shape), dtype=dt),
                                    tuple(input.shape), generator)
            if out is not None:
                return out
        host = np.asarray(draw(get_generator(generator), input.shape), dtype=dt)
        return Tensor(host, dtype=dt, device=device or input.device,
                      requires_grad=requires_grad)

    return make


randn_like = _like(lambda g, shape: g.standard_normal(shape))
rand_like = _like(lambda g, shape: g.random(shape))


def full_like(input, fill_value, *, dtype=None, device=None):  # noqa: A002
    dt = _as_dtype(dtype) or input.dtype
    if device is None:
        from .tensor import like_batched

        out = like_batched(input, fill_value, dt)  # under vmap: batched, as torch's
        if out is not None:
            return out
    return Tensor(np.full(input.shape, fill_value, dtype=dt), dtype=dt,
                  device=device or input.device)


@with_out(creation=True)
def empty(*size, dtype=None, device=None, requires_grad=False, **kw) -> Tensor:
    """Zeros (skiff does not hand out uninitialised memory); torch's ``size=`` keyword too."""
    if "size" in kw:
        size = _tensor_mod._size_kw(size, kw.pop("size"))
    if kw:
        raise TypeError(f"empty() got an unexpected keyword argument {next(iter(kw))!r}")
    device = _meta_device(device)  # meta inside torch.device("meta")
    dt = _as_dtype(dtype) or _dd.FLOAT
    if device is not None and str(device) == "meta":  # no memory (a broadcast zero)
        return Tensor(np.broadcast_to(np.zeros((), dt), _shape_arg(size)), dtype=dt,
                      device=device, requires_grad=requires_grad)
    return Tensor(np.zeros(_shape_arg(size), dtype=dt), dtype=dt, device=device,
                  requires_grad=requires_grad)


def empty_like(input, *, dtype=None, device=None):  # noqa: A002
    return full_like(input, 0, dtype=dtype, device=device)


def randint(low, high=None, size=None, *, dtype=None, device=None, generator=None) -> Tensor:
    """torch's ``randint(high, size)`` / ``randint(low, high, size)``: int64 in [low, high)."""
    device = _meta_device(device)  # meta inside torch.device("meta")
    if size is None:
        if not isinstance(high, (tuple, list)):
            raise TypeError("randint needs a size: randint(high, (n,)) or randint(low, high, (n,))")
        low, high, size = 0, low, high
    dt = _as_dtype(dtype) or np.dtype(np.int64)
    if str(device) == "meta":  # torch's: a shape and dtype, nothing drawn
        return _meta_tensor(tuple(size), dt)
    from .random import per_sample

    out = per_sample(lambda g, s: g.integers(low, high, size=s).astype(dt), tuple(size),
                     generator) if device in (None, "cpu") else None
    if out is not None:  # vmap(randomness="different"): one batched draw, nothing loops
        return out
    host = get_generator(generator).integers(low, high, size=tuple(size)).astype(dt)
    return Tensor(host, dtype=dt, device=device)


def randperm(n, *, dtype=None, device=None, generator=None) -> Tensor:
    device = _meta_device(device)  # meta inside torch.device("meta")
    dt = _as_dtype(dtype) or np.dtype(np.int64)
    if str(device) == "meta":  # torch's: a shape and dtype, nothing drawn
        return _meta_tensor((n,), dt)
    from .random import per_sample

    out = per_sample(lambda g, s: np.argsort(g.random(s), axis=-1).astype(dt), (n,),
                     generator)
    if out is not None:  # vmap(randomness="different"): a permutation per sample, no loop
        return out
    return Tensor(get_generator(generator).permutation(n).astype(dt), dtype=dt, device=device)


@with_out(creation=True)
def linspace(start, end, steps, *, dtype=None, device=None) -> Tensor:
    device = _meta_device(device)  # meta inside torch.device("meta")
    dt = _as_dtype(dtype) or _dd.FLOAT
    return Tensor(np.linspace(start, end, steps, dtype=dt), dtype=dt, device=device)


def multinomial(input, num_samples, replacement=False, *, generator=None):  # noqa: A002
    return input.multinomial(num_samples, replacement, generator=generator)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    device = _meta_device(device)  # meta inside torch.device("meta")
    dt = _as_dtype(dtype) or _dd.FLOAT
    return Tensor(np.eye(n, m, dtype=dt), dtype=dt, device=device, requires_grad=requires_grad)


def _method(name):
    def fn(input, *args, **kwargs):  # noqa: A002 - torch's name
        if not isinstance(input, Tensor) and not getattr(input, "is_sparse", False):
            input = tensor(input)  # noqa: A001
        return getattr(input, name)(*args, **kwargs)

    fn.__name__ = name
    fn.__doc__ = f"``skiff.{name}(x, ...)`` is ``x.{name}(...)`` (torch's function form)."
    return with_out(fn)


_METHODS = ("flatten", "exp", "log", "sin", "cos", "tanh", "sigmoid", "relu", "sqrt", "rsqrt",
            "abs", "square", "softmax", "log_softmax", "argmax", "argsort", "max", "min", "sum",
            "mean", "prod", "var", "std", "amax", "amin", "maximum", "minimum", "clamp", "clip",
            "topk", "sort", "cumsum", "norm", "gather", "index_select", "masked_fill", "chunk",
            "narrow", "unbind", "logsumexp", "log1p", "expm1", "reciprocal", "neg", "pow",
            "matmul", "mm", "bmm", "unsqueeze", "squeeze", "permute", "transpose", "reshape",
            "tril", "triu", "flip", "t", "floor", "round", "sign", "any", "all", "isfinite",
            "isnan", "isinf", "floor_divide", "remainder", "fmod", "div", "divide", "erf",
            "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "arcsinh",
            "arccosh", "arctanh", "atan2", "hypot", "log2", "log10", "exp2",
            "trunc", "ceil", "frac", "lerp", "addcmul", "addcdiv", "roll", "tile", "movedim",
            "moveaxis", "unflatten", "repeat_interleave", "outer", "nan_to_num", "diag", "trace",
            "count_nonzero", "is_floating_point", "clamp_min", "clamp_max", "cumprod",
            "index_add", *_R27_METHODS, "scatter_reduce", "scatter_add", "scatter",
            "index_fill", "index_copy")

globals().update({_n: _method(_n) for _n in _METHODS})
from . import tensor_math_r27 as _r27  # noqa: E402
from .sparse_r37 import sparse_coo_tensor, spmm  # noqa: E402  (Tensor.to_sparse, sparse mm)

globals().update({_n: getattr(_r27, _n) for _n in _R27_FUNCTIONS})

__all__ = [
    "sparse_coo_tensor", "spmm",
    "manual_seed", "device", "from_numpy", "as_tensor", "is_tensor", "numel", "equal",
    "allclose", "isclose", "randn_like", "rand_like", "full_like", "empty", "empty_like",
    "randint", "randperm", "linspace", "multinomial", "save", "load", "no_grad", "enable_grad",
    "set_grad_enabled", "is_grad_enabled", "inference_mode", "is_inference_mode_enabled",
    "float16", "half", "float32", "float", "float64", "double", "int8", "uint8", "int16",
    "int32", "int", "int64", "long", "bool", "autograd", "finfo", "iinfo", "eye",
    "bfloat16",  # noqa: F822 (made on first use by the module's __getattr__)
    "meshgrid", "addmm", "baddbmm", "addbmm", "tensordot", "bernoulli",
    *_METHODS, *_R27_FUNCTIONS,
    "set_num_threads", "get_num_threads", "use_deterministic_algorithms",
    "are_deterministic_algorithms_enabled", "set_printoptions", "set_float32_matmul_precision",
    "get_float32_matmul_precision", "get_rng_state", "set_rng_state", "Generator",
    "autocast", "masked_scatter", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
    # complex tensors (round 28): torch.cfloat, torch.view_as_real, torch.complex, ...
    "cfloat", "cdouble", "complex64", "complex128", "view_as_real", "view_as_complex",
    "complex", "angle", "is_complex", "real", "imag", "conj",
    "resolve_conj", "resolve_neg", "conj_physical", "is_conj", "is_neg",
    # torch's default device (round 42: "meta" or the host)
    "set_default_device", "get_default_device",
]

from . import torch_autograd as autograd  # noqa: E402  (skiff.autograd: torch's names)

# round 38: torch's top-level aliases and small functions (torch_toplevel_r38); the names
# already here (hsplit, vsplit, pdist) stay as they are
from . import torch_toplevel_r38 as _top38  # noqa: E402
from .amp_torch import autocast  # noqa: E402,F401  (torch's)
from .complex_r28 import (  # noqa: E402,F401,A004  (torch's names; `complex` after all code)
    angle,
    cdouble,
    cfloat,
    complex,
    complex64,
    complex128,
    conj,
    conj_physical,
    imag,
    is_complex,
    is_conj,
    is_neg,
    real,
    resolve_conj,
    resolve_neg,
    view_as_complex,
    view_as_real,
)
from .meta_r41 import get_default_device, set_default_device  # noqa: E402,F401
from .tensor_r28 import masked_scatter  # noqa: E402,F401
from .torch_autograd import is_anomaly_check_nan_enabled, is_anomaly_enabled  # noqa: E402

_TOP38 = [_n for _n in _top38.__all__ if _n not in __all__]
globals().update({_n: getattr(_top38, _n) for _n in _TOP38})
__all__ += _TOP38

# round 39: torch.lu (deprecated), torch.lu_solve(b, LU, pivots) (deprecated), torch.lu_unpack
from .linalg_r39 import TOPLEVEL as _TOP39  # noqa: E402

globals().update(_TOP39)
__all__ += list(_TOP39)

# round 39 (h13): torch.geqrf, torch.ormqr and Tensor.geqrf / Tensor.ormqr
from .linalg_qr_r39 import TOPLEVEL as _TOP39QR  # noqa: E402
from .linalg_qr_r39 import install as _install_qr39  # noqa: E402

globals().update(_TOP39QR)
__all__ += list(_TOP39QR)
_install_qr39(Tensor)

# round 43 (h9): torch.segment_reduce, torch.empty_strided
from . import functions_r43 as _r43  # noqa: E402

globals().update({_n: getattr(_r43, _n) for _n in _r43.__all__})
__all__ += list(_r43.__all__)

# round 43 (h16): torch.Size, torch.dtype, pi/e/inf/nan, the memory formats, the legacy
# FloatTensor/DoubleTensor/LongTensor; memory_format= on contiguous/clone and the creators
from . import top_names_r43 as _r43h16  # noqa: E402

globals().update({_n: getattr(_r43h16, _n) for _n in _r43h16.__all__})
__all__ += list(_r43h16.__all__)
for _n in _r43h16.LIKE_CREATORS:
    globals()[_n] = _r43h16.accept_memory_format(globals()[_n])
_r43h16.install(Tensor)

# round 44 (h7): torch.frombuffer; storage_offset/data_ptr/dim_order/new_empty_strided
from . import tensor_storage_r44 as _r44h7  # noqa: E402

globals().update({_n: getattr(_r44h7, _n) for _n in _r44h7.__all__})
__all__ += list(_r44h7.__all__)
_r44h7.install(Tensor)

# round 44 (h12): torch.histogramdd
from . import histogramdd_r44 as _r44h12  # noqa: E402

globals().update({_n: getattr(_r44h12, _n) for _n in _r44h12.__all__})
__all__ += list(_r44h12.__all__)

# round 45 (h7): the ``*_like`` creators keep a dense input's layout (torch's
# ``preserve_format``) and take ``memory_format=channels_last`` (were row-major always)
from .layout_r45 import like_layout as _like_layout  # noqa: E402

for _n in _r43h16.LIKE_CREATORS:
    globals()[_n] = _like_layout(globals()[_n])
# ``skiff.zeros_like``/``ones_like`` are read from ``tensor.py`` (skiff/api.py's NAMES, loaded
# after this module): wrapped there too; skiff's own code calls them on row-major arrays
for _n in ("zeros_like", "ones_like"):
    setattr(_tensor_mod, _n, _like_layout(getattr(_tensor_mod, _n)))
    globals()[_n] = getattr(_tensor_mod, _n)
