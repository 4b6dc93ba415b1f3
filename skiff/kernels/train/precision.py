"""The Trainer's numeric precision: ``"32"``, ``"bf16-mixed"`` or ``"fp16-mixed"``.

Mixed precision keeps the model's parameters (so its activations and gradients) in a 16-bit
dtype and the optimizer's parameters as float32 *master* copies (:mod:`.core.amp`). A step:
backward of the loss times the loss scale (fp16 only: bfloat16 has float32's range), the
16-bit gradients moved into the masters and unscaled, the step skipped when they hold an
inf/nan (fp16: the scale halves and training goes on), clipped, applied to the masters, and
the masters rounded back into the model. Checkpoints keep the masters and the scaler, so a
resumed run continues exactly.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["PRECISIONS", "check_precision", "check_mixed_strategy", "MixedTraining",
           "weight_bytes", "local_grad_norm", "clip_values"]

PRECISIONS = ("32", "bf16-mixed", "fp16-mixed")
_DTYPES = {"bf16-mixed": "bfloat16", "fp16-mixed": "float16"}


def check_precision(precision) -> str:
    """``precision`` as one of :data:`PRECISIONS` (``32`` and ``"fp32"`` mean ``"32"``)."""
    text = str(precision).strip().lower()
    # Lightning's names too: "16-mixed" (and its older "16"), "32-true"
    text = {"fp32": "32", "float32": "32", "bf16": "bf16-mixed", "fp16": "fp16-mixed",
            "16-mixed": "fp16-mixed", "16": "fp16-mixed", "32-true": "32"}.get(text, text)
    if text not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}: choose from {', '.join(PRECISIONS)}")
    return text


def check_mixed_strategy(strategy, precision: str) -> None:
    """Mixed precision runs with one device, data parallel, ZeRO-1/2, tensor, pipeline and
    expert parallel (round 42); compressed gradients keep float32 for now (one line)."""
    from .parallel.compression import NoCompression

    compressor = getattr(strategy, "compressor", None)
    if compressor is not None and not isinstance(compressor, NoCompression):
        raise ValueError(f"precision {precision!r} does not run with "
                         f"{getattr(strategy, 'name', strategy)!r} yet (gradient "
                         "compression): use precision '32' with it")


def weight_bytes(precision: str) -> int:
    """Bytes of one stored parameter under ``precision`` (for the planner)."""
    return 4 if check_precision(precision) == "32" else 2


class MixedTraining:
    """16-bit ``params`` with float32 masters and a loss scaler, for the Trainer's step.

    ``masters=None``: a float32 master per parameter, made here. A strategy that keeps the
    optimizer's parameters itself (ZeRO: the flat float32 slice of this rank) passes them as
    ``masters``, fills their gradients and rounds them back into ``params`` with
    ``write_back()``.
    """

    def __init__(self, params, precision: str, *, masters=None, write_back=None):
        from .core.amp import GradScaler
        from .core.nn.module import Parameter
        from .core.tensor import _as_dtype

        self.precision = check_precision(precision)
        if self.precision == "32":
            raise ValueError("MixedTraining is for bf16-mixed or fp16-mixed precision")
        self.dtype = _as_dtype(_DTYPES[self.precision])
        self.params = [p for p in params if p.dtype.kind == "f"]
        self.owned = masters is not None
        self.master = list(masters) if self.owned else \
            [Parameter(p._data.astype(np.float32), dtype=np.float32) for p in self.params]
        for p in self.params:
            p._data = p._data.astype(self.dtype)
        self.write_back = write_back
        self.scaler = GradScaler(enabled=self.precision == "fp16-mixed")  # bf16: no scaling
        self.skipped = 0

    def master_params(self) -> list:
        return self.master

    @property
    def loss_scale(self) -> float:
        """What the loss is multiplied by before backward (1 for bf16)."""
        return float(self.scaler.scale_value) if self.scaler.enabled else 1.0

    @staticmethod
    def float32_loss(loss_fn):
        """``loss_fn`` with the model's 16-bit outputs cast to float32 before the loss, as
        ``torch.autocast`` runs its losses (cross_entropy, mse_loss, ...) in float32: the loss
        is float32, so its backward seeds the loss scale in float32 (2^16 cast into float16
        was inf: every fp16 run skipped its first step), and a regression's float32 targets
        meet float32 outputs. The model's ``forward`` (and ``forward_packed``) is wrapped for
        the call, so that a ``model.loss(batch)`` that calls it gets float32 outputs too."""

        return _Float32Loss(loss_fn)

    def step(self, optimizer, clip: float | None, norm=None,
             clip_value: float | None = None) -> tuple[bool, float]:
        """Masters' gradients from the model's, unscaled; the global norm (``norm(grads)``,
        over every rank: an inf/nan on any rank makes it non-finite everywhere, so all ranks
        skip together); clip (the norm to ``clip``, each element to ``clip_value``), step,
        round back. Returns (whether the step ran, the norm)."""
        if not self.owned:
            for p, m in zip(self.params, self.master):
                m._grad = None if p._grad is None else p._grad.astype(np.float32)
                p._grad = None
        with np.errstate(over="ignore", invalid="ignore"):
            self.scaler.unscale_grads(self.master)
            grads = [m._grad for m in self.master]
            total = float(norm(grads)) if norm is not None else local_grad_norm(grads)
        ok = math.isfinite(total)
        if ok:
            coef = clip / (total + 1e-6) if clip is not None else 1.0
            if coef < 1.0:
                for g in grads:
                    if g is not None:
                        g *= g.dtype.type(coef)
            if clip_value is not None:
                clip_values(optimizer, clip_value)
            optimizer.step()
            if self.write_back is not None:
                self.write_back()
            else:
                for p, m in zip(self.params, self.master):
                    p._data[...] = m._data.astype(self.dtype)
        else:
            self.skipped += 1
            self.scaler.skipped_steps += 1
        self.scaler.found_inf = not ok
        self.scaler.update()
        for m in self.master:
            m._grad = None
        return ok, total

    def state_dict(self) -> dict:
        return {"precision": self.precision, "scaler": self.scaler.state_dict(),
                "master": [np.asarray(m.numpy()).copy() for m in self.master],
                "skipped": self.skipped}

    def load_state_dict(self, state: dict) -> None:
        # fp16-mixed <-> bf16-mixed: the float32 masters carry over (they were refused, and
        # switching an unstable fp16 run to bf16 is what one does); the scaler is fp16's only:
        # bf16 has none, and an fp16 run from a bf16 checkpoint starts at 2^16
        if state.get("precision") in (None, self.precision):
            self.scaler.load_state_dict(state["scaler"])
        for m, arr in zip(self.master, state["master"]):
            m._data[...] = m.xp.asarray(arr)
        if not self.owned:
            for p, m in zip(self.params, self.master):
                p._data[...] = m._data.astype(self.dtype)
        self.skipped = int(state.get("skipped", 0))


class _Float32Loss:
    """:meth:`MixedTraining.float32_loss`'s function; ``keep`` and ``last`` are the wrapped
    function's (evaluation reads the last outputs for accuracy and R^2: under mixed precision
    they were missing from ``evaluate``, the flags set on the wrapper only)."""

    def __init__(self, loss_fn):
        self.loss_fn = loss_fn

    def __call__(self, model, batch):
        from .core.loss_policy import float32_losses

        with float32_losses():  # a loss the model computes itself runs in float32 too
            loss = _with_float32_outputs(model, self.loss_fn, batch)
        return loss.astype(np.float32) if loss.dtype != np.float32 else loss

    @property
    def keep(self):
        return self.loss_fn.keep  # AttributeError (hasattr False) where it has none

    @keep.setter
    def keep(self, value):
        self.loss_fn.keep = value

    @property
    def last(self):
        return self.loss_fn.last


def is_16_bit(dtype) -> bool:
    """Whether ``dtype`` is float16 or bfloat16 (bfloat16 is no numpy floating kind)."""
    try:
        return np.dtype(dtype).name in ("float16", "bfloat16")
    except TypeError:
        return str(dtype) in ("float16", "bfloat16")


def float32_outputs(out):
    """``out`` with each 16-bit floating Tensor (in a tuple, list or dict too) as float32."""
    if hasattr(out, "_data") and hasattr(out, "astype") and is_16_bit(out.dtype):
        return out.astype(np.float32)
    if isinstance(out, tuple) and not hasattr(out, "_fields"):
        return tuple(float32_outputs(o) for o in out)
    if isinstance(out, list):
        return [float32_outputs(o) for o in out]
    if isinstance(out, dict):
        return type(out)((k, float32_outputs(v)) for k, v in out.items()) \
            if type(out) is dict else out
    return out


def _with_float32_outputs(model, loss_fn, batch):
    """``loss_fn(model, batch)`` with the model's forward methods (:data:`_FORWARDS`)
    returning float32 for the call."""
    if not hasattr(model, "__dict__"):
        return loss_fn(model, batch)
    saved = {}
    for name in _FORWARDS:
        method = getattr(model, name, None)
        if callable(method):
            saved[name] = model.__dict__.get(name, _MISSING)
            object.__setattr__(model, name, _returning_float32(method))
    try:
        return loss_fn(model, batch)
    finally:
        for name, own in saved.items():
            if own is _MISSING:
                model.__dict__.pop(name, None)
            else:
                object.__setattr__(model, name, own)


def _returning_float32(method):
    def forward32(*args, **kwargs):
        return float32_outputs(method(*args, **kwargs))

    forward32.__wrapped__ = method  # inspect.signature sees the model's own parameters
    return forward32


# what a model's loss(batch) calls for its outputs (GPT and ERNIE take packed sequences
# through forward_packed: its logits in float16 made every packed fp16 run skip step 1)
_FORWARDS = ("forward", "forward_packed")
_MISSING = object()


def local_grad_norm(grads) -> float:
    """The L2 norm of ``grads`` (None skipped) as ``clip_grad_norm_`` takes it: one dot per
    array, summed in float64 (``train.sum_squares``: one launch and one wait on a GPU); inf or
    nan when a gradient is not finite."""
    from .core.nn.fused import sum_squares

    present = [g for g in grads if g is not None]
    return math.sqrt(float(sum_squares(*present))) if present else 0.0


def clip_values(optimizer, bound: float) -> None:
    """Each gradient element of the parameters ``optimizer`` steps within ``[-bound, bound]``
    (torch's ``clip_grad_value_``), in place: the gradients it is about to apply, so the
    averaged ones of dp, a ZeRO rank's slice, the float32 masters of mixed precision; an
    element-wise bound gives the same on every rank whichever part it holds."""
    for group in optimizer.param_groups:
        for p in group["params"]:
            g = getattr(p, "_grad", None)
            if g is not None:
                p.xp.clip(g, -bound, bound, out=g)
