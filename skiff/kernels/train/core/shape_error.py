"""``ShapeError``: skiff's shape mismatches as torch's ``RuntimeError`` and numpy's
``ValueError`` both (a ported ``except RuntimeError:`` catches them, as does skiff's own
``except ValueError:``), with torch's wording first where it has one."""

from __future__ import annotations

import numpy as np


class ShapeError(ValueError, RuntimeError):
    """A shape mismatch (torch raises RuntimeError; skiff raised ValueError)."""


def dims(shape) -> str:
    """``4x5`` (torch's form of a matrix's shape in its messages)."""
    return "x".join(str(int(s)) for s in shape)


def wrap_dim(dim, ndim: int) -> int:
    """``dim`` in ``[0, ndim)``: torch's IndexError for one out of ``[-ndim, ndim)`` (a 0-d
    tensor takes 0 and -1), where ``dim % ndim`` would pick another axis silently."""
    n = max(int(ndim), 1)
    d = int(dim)
    if not -n <= d < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {d})")
    return d % n


class GradDtypeError(ValueError, RuntimeError):
    """An integer or bool tensor asked to require grad (torch: RuntimeError)."""


def check_grad_dtype(dtype) -> None:
    if dtype.kind not in "fc" and dtype.name != "bfloat16":
        raise GradDtypeError(f"only float and complex tensors can require grad (torch: only "
                             f"Tensors of floating point dtype can require gradients), got "
                             f"dtype {dtype}")


class IndexOutOfRange(IndexError, RuntimeError):
    """An index out of its dimension (torch: RuntimeError for gather/scatter, IndexError for
    index_add/index_copy; either ``except`` catches it)."""


def check_index(idx, size: int, dim: int) -> None:
    """torch's refusal of negative indices in gather/scatter/index_select/index_add (numpy's
    indexing would count them from the end, silently); positive ones past the end numpy
    refuses itself. Host arrays only (a device min would wait for the GPU)."""
    if type(idx) is np.ndarray and idx.size and idx.dtype.kind == "i":
        low = int(idx.min())
        if low < 0:
            raise IndexOutOfRange(f"index {low} is out of bounds for dimension {dim} with size "
                                  f"{size}")


def broadcast_error(a, b) -> ShapeError:
    """torch's message for two shapes that do not broadcast (the first mismatch from the
    right, numbered in the result's dims)."""
    a, b = tuple(int(s) for s in a), tuple(int(s) for s in b)
    nd = max(len(a), len(b))
    pa, pb = (1,) * (nd - len(a)) + a, (1,) * (nd - len(b)) + b
    for i in range(nd - 1, -1, -1):
        if pa[i] != pb[i] and pa[i] != 1 and pb[i] != 1:
            return ShapeError(f"The size of tensor a ({pa[i]}) must match the size of tensor b "
                              f"({pb[i]}) at non-singleton dimension {i}")
    return ShapeError(f"shapes {a} and {b} cannot be broadcast together")


class DtypeMismatch(RuntimeError):
    """Operands of a matrix product or a convolution in two dtypes (torch refuses them; numpy
    would promote the float32 one silently, doubling a layer's cost or hiding a stray
    float64 tensor)."""


_C_NAMES = {"float32": ("float", "Float"), "float64": ("double", "Double"),
            "float16": ("c10::Half", "Half"), "bfloat16": ("c10::BFloat16", "BFloat16"),
            "int64": ("long int", "Long"), "int32": ("int", "Int"), "int16": ("short", "Short"),
            "int8": ("signed char", "Char"), "uint8": ("unsigned char", "Byte"),
            "bool": ("bool", "Bool"), "complex64": ("c10::complex<float>", "ComplexFloat"),
            "complex128": ("c10::complex<double>", "ComplexDouble")}


def _names(dtype):
    name = str(dtype)
    return _C_NAMES.get(name, (name, name))


def check_matmul_dtypes(a, b) -> None:
    """torch's refusal of ``a @ b`` (``mm``, ``bmm``, ``linear``...) in two dtypes."""
    if a.dtype != b.dtype:
        raise DtypeMismatch(f"expected m1 and m2 to have the same dtype, but got: "
                            f"{_names(a.dtype)[0]} != {_names(b.dtype)[0]}")


def check_conv_dtypes(x, weight, bias=None) -> None:
    """torch's refusal of a convolution whose input, weight or bias differ in dtype."""
    if x.dtype != weight.dtype:
        raise DtypeMismatch(f"expected scalar type {_names(x.dtype)[1]} but found "
                            f"{_names(weight.dtype)[1]} (the input is {x.dtype}, the weight "
                            f"{weight.dtype}: cast one, e.g. input.to(weight.dtype))")
    if bias is not None and bias.dtype != x.dtype:
        raise DtypeMismatch(f"Input type ({_names(x.dtype)[0]}) and bias type "
                            f"({_names(bias.dtype)[0]}) should be the same")


def check_dot_dtypes(a, b) -> None:
    """torch's ``dot``/``vdot`` refusal of two dtypes."""
    if a.dtype != b.dtype:
        raise DtypeMismatch(f"dot : expected both vectors to have same dtype, but found "
                            f"{_names(a.dtype)[1]} and {_names(b.dtype)[1]}")


def check_einsum_dtypes(operands) -> None:
    """torch's ``einsum`` refusal of operands in two dtypes (the first one's is expected)."""
    for t in operands[1:]:
        if t.dtype != operands[0].dtype:
            raise DtypeMismatch(f"expected scalar type {_names(operands[0].dtype)[1]} but "
                                f"found {_names(t.dtype)[1]}")
