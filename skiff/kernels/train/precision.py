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
           "weight_bytes"]

PRECISIONS = ("32", "bf16-mixed", "fp16-mixed")
_DTYPES = {"bf16-mixed": "bfloat16", "fp16-mixed": "float16"}


def check_precision(precision) -> str:
    """``precision`` as one of :data:`PRECISIONS` (``32`` and ``"fp32"`` mean ``"32"``)."""
    text = str(precision).strip().lower()
    text = {"fp32": "32", "float32": "32", "bf16": "bf16-mixed", "fp16": "fp16-mixed"}.get(
        text, text)
    if text not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}: choose from {', '.join(PRECISIONS)}")
    return text


def check_mixed_strategy(strategy, precision: str) -> None:
    """Mixed precision runs on one device or plain data parallel (every rank the whole
    model); the sharded and split strategies keep float32 for now, said in one line."""
    from .parallel.data_parallel import DataParallel
    from .strategy import SingleDevice

    if isinstance(strategy, SingleDevice) or type(strategy) is DataParallel:
        return
    raise ValueError(f"precision {precision!r} runs with one device or plain data parallel "
                     f"(strategy 'single' or 'dp'), not {getattr(strategy, 'name', strategy)!r}"
                     " yet: use precision '32' with it")


def weight_bytes(precision: str) -> int:
    """Bytes of one stored parameter under ``precision`` (for the planner)."""
    return 4 if check_precision(precision) == "32" else 2


class _Params:
    def __init__(self, params):
        self._params = list(params)

    def parameters(self):
        return self._params


class MixedTraining:
    """16-bit ``params`` with float32 masters and a loss scaler, for the Trainer's step."""

    def __init__(self, params, precision: str):
        from .core.amp import MixedPrecision

        self.precision = check_precision(precision)
        if self.precision == "32":
            raise ValueError("MixedTraining is for bf16-mixed or fp16-mixed precision")
        self.amp = MixedPrecision(_Params(params), dtype=_DTYPES[self.precision])
        self.skipped = 0

    @property
    def scaler(self):
        return self.amp.scaler

    def master_params(self) -> list:
        return self.amp.master_params()

    @property
    def loss_scale(self) -> float:
        """What the loss is multiplied by before backward (1 for bf16)."""
        return float(self.scaler.scale_value) if self.scaler.enabled else 1.0

    @staticmethod
    def float32_loss(loss_fn):
        """``loss_fn`` with its loss in float32, so that scaling it cannot overflow."""

        def fn(model, batch):
            loss = loss_fn(model, batch)
            return loss.astype(np.float32) if loss.dtype != np.float32 else loss

        return fn

    def step(self, optimizer, clip: float | None) -> tuple[bool, float]:
        """Masters' gradients from the model's, unscaled; skip on inf/nan, clip, step, round
        back. Returns (whether the step ran, the gradient norm before clipping)."""
        from .core.optim import clip_grad_norm_

        amp = self.amp
        for p, m in zip(amp.params, amp.master):
            m.grad = None if p.grad is None else p.grad.astype(np.float32)
            p.grad = None
        ok = self.scaler.unscale_grads(amp.master)
        norm = math.inf
        if ok:
            live = [m for m in amp.master if m.grad is not None]
            norm = float(clip_grad_norm_(live, clip)) if clip is not None else \
                float(math.sqrt(sum(float((m.grad.astype(np.float64) ** 2).sum())
                                    for m in live)))
            ok = math.isfinite(norm)
        if ok:
            optimizer.step()
            for p, m in zip(amp.params, amp.master):
                p.data[...] = m.data.astype(amp.dtype)
        else:
            self.skipped += 1
            self.scaler.skipped_steps += 1
            self.scaler.found_inf = True
        self.scaler.update()
        for m in amp.master:
            m.grad = None
        return ok, norm

    def state_dict(self) -> dict:
        return {"precision": self.precision, **self.amp.state_dict(), "skipped": self.skipped}

    def load_state_dict(self, state: dict) -> None:
        if state.get("precision") not in (None, self.precision):
            raise ValueError(f"the checkpoint was trained in {state['precision']} precision, "
                             f"this run asks for {self.precision}")
        self.amp.load_state_dict(state)
        self.skipped = int(state.get("skipped", 0))
