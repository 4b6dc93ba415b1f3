"""Mixed precision's cast policy for losses, as ``torch.autocast``'s: while a mixed-precision
Trainer computes a loss (:func:`float32_losses`), skiff's loss functions (cross_entropy,
nll_loss, log_softmax, kl_div, the BCEs, every ``*_loss``) take their 16-bit Tensor arguments
in float32, whoever calls them: the Trainer, a model computing its loss inside ``forward``
(HF style, ``model(x, labels=y)``), ``nn.CrossEntropyLoss``, ``x.log_softmax()``.

Each such function is defined under :func:`float32_in_mixed`; the switch is a context
variable (per thread and per asyncio task), so outside a mixed-precision loss the functions
run as written at the cost of one lookup. The cast is differentiable: the gradient flows
back into the 16-bit activations. A loss written from raw operations (``((out - y) ** 2)
.mean()``) stays in 16 bits, as it does under torch's autocast.
"""

from __future__ import annotations

import contextvars
import functools
from contextlib import contextmanager

from . import autocast_ops as _ac

__all__ = ["float32_in_mixed", "float32_losses", "float32_losses_active"]

_ACTIVE = contextvars.ContextVar("skiff_float32_losses", default=False)


def float32_losses_active() -> bool:
    """Whether the loss functions cast 16-bit inputs to float32 here and now."""
    return _ACTIVE.get()


@contextmanager
def float32_losses():
    """``with float32_losses():`` skiff's loss functions run in float32 (re-entrant)."""
    token = _ACTIVE.set(True)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def _is_16_bit_tensor(value) -> bool:
    return hasattr(value, "_data") and hasattr(value, "astype") and \
        str(getattr(value.dtype, "name", value.dtype)) in ("float16", "bfloat16")


def _float32(value):
    return value.astype("float32") if _is_16_bit_tensor(value) else value


def float32_in_mixed(fn):
    """``fn`` (a loss function) taking 16-bit Tensor arguments in float32 while
    :func:`float32_losses` is on."""
    autocast_fp32 = fn.__name__ != "log_softmax"  # torch's CPU autocast keeps it 16-bit

    @functools.wraps(fn)
    def loss_fn(*args, **kwargs):
        if not _ACTIVE.get() and (_ac.LOW is None or not autocast_fp32):
            return fn(*args, **kwargs)
        return fn(*(_float32(a) for a in args), **{k: _float32(v) for k, v in kwargs.items()})

    loss_fn.float32_in_mixed = True
    return loss_fn
