"""Reporters that ask a job to stop part-way, as a Cancel press would (round 36: one helper
for the test files that each defined their own ``_StopAt``)."""

from __future__ import annotations

from skiff.kernels.backend.report import NullReporter


class StopAtLook(NullReporter):
    """Asks to stop at its ``k``-th look (``should_stop`` call); ``looks`` counts them, so
    ``StopAtLook(10**9)`` counts the looks a whole run takes."""

    def __init__(self, k: int):
        super().__init__()
        self.k, self.looks = k, 0

    def should_stop(self):
        self.looks += 1
        return self.looks >= self.k


class StopAtStep(NullReporter):
    """Asks to stop once the reported progress reaches step ``stop`` (never when ``None``)."""

    def __init__(self, stop: int | None = None):
        super().__init__()
        self.stop, self.step = stop, 0

    def progress(self, done, total=None, **kw):
        self.step = done

    def should_stop(self):
        return self.stop is not None and self.step >= self.stop
