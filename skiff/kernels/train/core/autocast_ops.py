"""torch's CPU autocast op lists, applied where skiff's ops run (``amp_torch.autocast`` sets
:data:`LOW` while an enabled ``autocast("cpu", dtype)`` block is open).

- lower precision (``low``): matmul / mm / bmm / addmm / linear / einsum /
  scaled_dot_product_attention take their float32 operands in the autocast dtype (bfloat16
  or float16) and give it back (skiff's GEMM runs on the rounded values in float32 and
  rounds the result: torch's bf16 GEMM accumulates in float32 too);
- float32 (``full``): the losses (cross_entropy, nll, mse, l1, smooth_l1, huber, bce,
  bce_with_logits, kl_div, ...) take 16-bit operands in float32, as torch's;
- every other op runs in its inputs' dtype (a bfloat16 activation stays bfloat16).

float64 operands are left alone (torch's). Gradients flow back through the casts to each
leaf's own dtype (float32 weights get float32 ``.grad``).
"""

from __future__ import annotations

LOW = None  # the numpy dtype of an open CPU autocast, or None


def _is_float(dt) -> bool:
    return dt.kind == "f" or dt.name == "bfloat16"


def _cast(t, dtype):
    if (hasattr(t, "_data") and hasattr(t, "_node") and t.dtype != dtype and _is_float(t.dtype)
            and t.dtype.itemsize < 8 and getattr(t.device, "type", "cpu") == "cpu"):
        return t.to(dtype=dtype)
    return t


def low(*tensors):
    """The operands in the autocast dtype (float32 ones; float64 and ints kept)."""
    d = LOW
    return tuple(_cast(t, d) if t is not None else None for t in tensors)


def full(*tensors):
    """The 16-bit operands in float32 (a loss's inputs under autocast)."""
    import numpy as np

    f32 = np.dtype(np.float32)
    out = []
    for t in tensors:
        dt = getattr(t, "dtype", None)
        out.append(t.to(dtype=f32) if dt is not None and hasattr(t, "_data") and (
            dt.name in ("bfloat16", "float16")) else t)
    return tuple(out)


class off:
    """A block where skiff's ops run at their operands' precision even inside an open
    autocast (torch's ops that are on neither CPU list: ``mv``, ``GRU``'s state, ...)."""

    def __enter__(self):
        global LOW
        self._was, LOW = LOW, None
        return self

    def __exit__(self, *exc):
        global LOW
        LOW = self._was
        return False

