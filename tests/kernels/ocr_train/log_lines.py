"""A reporter that keeps a fine-tune's log lines, for tests that read what a run said."""

from __future__ import annotations

from skiff.kernels.backend.report import Reporter


class LogLines(Reporter):
    """The base reporter (no progress kept, never stops) with its log lines in ``lines``."""

    def __init__(self):
        self.lines = []

    def log(self, message, *, level="info"):
        self.lines.append(message)
