"""Noticing a run that diverges before its loss turns NaN, and which checkpoint is still good.

A learning rate far too large does not always end in NaN: the loss can jump from 5.8 to 80
and stay there, and the run would end "done" without a word. :class:`DivergenceWatch`
follows the loss of every step through an exponential moving average and calls the run
diverging when that average stays ``factor`` times above the best it reached, and above the
first loss, for ``patience`` steps in a row. The divergence *began* at the step of that best
average: a checkpoint written after it holds weights that are already on their way out, so
the last good checkpoint is the newest one written at or before that step.

>>> watch = DivergenceWatch()
>>> [watch.update(step, loss) for step, loss in enumerate([5.8, 5.5, 90.0, 85.0, 88.0], 1)]
[False, False, False, False, True]
>>> watch.onset, round(watch.best, 2)
(2, 5.71)
"""

from __future__ import annotations

import math
from pathlib import Path

__all__ = ["DivergenceWatch", "OVERFLOW_ERRORS"]

# what arithmetic on numbers that overflowed raises (numba's kernels divide in Python's
# error model: a variance of inf - inf gives ZeroDivisionError, not a NaN)
OVERFLOW_ERRORS = (ZeroDivisionError, OverflowError)


class DivergenceWatch:
    """The loss trend of one run: :meth:`update` after each step returns True once, at the
    step the run is found diverging; :attr:`onset` is where the divergence began."""

    def __init__(self, *, factor: float = 3.0, patience: int = 3, smoothing: float = 0.7):
        if not factor > 1 or patience < 1 or not 0 <= smoothing < 1:
            raise ValueError(f"DivergenceWatch needs factor > 1, patience >= 1 and 0 <= "
                             f"smoothing < 1, got {factor!r}, {patience!r}, {smoothing!r}")
        self.factor, self.patience, self.smoothing = factor, int(patience), smoothing
        self.first: float | None = None
        self.ema: float | None = None
        self.best = math.inf
        self.onset: int | None = None      # the step of the best average so far
        self.rising = 0
        self.detected_at: int | None = None
        self._checkpoints: list[tuple[int, Path]] = []

    def update(self, step: int, loss: float) -> bool:
        """Take the loss of ``step``; True when this step shows the run diverging (once)."""
        if not math.isfinite(loss):
            return False            # NaN and inf are caught where they happen
        if self.first is None:
            self.first = loss
        self.ema = loss if self.ema is None else \
            self.smoothing * self.ema + (1 - self.smoothing) * loss
        if self.ema < self.best:
            self.best, self.onset = self.ema, step
        above = self.best > 0 and self.ema > self.factor * self.best and self.ema > self.first
        self.rising = self.rising + 1 if above else 0
        if self.rising >= self.patience and self.detected_at is None:
            self.detected_at = step
            return True
        return False

    @property
    def diverging(self) -> bool:
        return self.detected_at is not None

    def describe(self) -> str:
        """One line: from what to what the loss went, since which step."""
        return (f"the loss rose from {self.best:.4g} (average at step {self.onset}) to "
                f"{self.ema:.4g}, more than {self.factor:g}x, for {self.rising} steps")

    def note_checkpoint(self, step: int, path) -> None:
        if path is not None:
            self._checkpoints.append((int(step), Path(path)))

    def good_checkpoint(self, failed_step: int | None = None) -> Path | None:
        """The newest checkpoint still on disk from before the divergence began: at or
        before :attr:`onset` when the loss was on the way up, else (a NaN out of the blue
        at ``failed_step``) before ``failed_step``."""
        trending = self.diverging or self.rising > 0 or (
            self.ema is not None and self.best > 0 and self.ema > 1.5 * self.best)
        limit = self.onset if trending or failed_step is None else failed_step - 1
        if limit is None:
            return None
        good = [(s, p) for s, p in self._checkpoints if s <= limit and p.exists()]
        return max(good, key=lambda sp: sp[0])[1] if good else None

    def summary(self) -> dict:
        """What the ``divergence`` info field of a run holds."""
        return {"detected_at": self.detected_at, "began": self.onset, "best_loss": self.best,
                "loss": self.ema}

    def failure(self, step: int, what: str) -> str:
        """The one-line error of a run that diverged at ``step`` because of ``what``."""
        good = self.good_checkpoint(step)
        keep = (f"; the last good checkpoint (before the divergence began) is {good.name}"
                if good is not None else "; no checkpoint from before the divergence is left")
        return f"training diverged at step {step}: {what}{keep}"

    def warning(self, step: int) -> str:
        """The warning of a run found diverging at ``step`` that goes on."""
        good = self.good_checkpoint(step)
        return (f"the loss is diverging at step {step}: {self.describe()}; lower the learning "
                "rate" + (f" (last good checkpoint: {good.name})" if good else "")
                + " or pass stop_on_divergence=True (--stop-on-divergence)")
