"""``%skiff``: the panel of forms (Train, Solve, OCR) and the job monitor."""

from __future__ import annotations

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class

__all__ = ["PanelMagics"]

TABS = ("train", "solve", "ocr", "jobs")


@magics_class
class PanelMagics(Magics):
    @line_magic
    def skiff(self, line=""):
        """Show the skiff panel: ``%skiff [train|solve|ocr|jobs]`` opens it on that tab."""
        words = line.split()
        if len(words) > 1 or (words and words[0] not in TABS):
            raise UsageError(f"%skiff takes one tab name ({', '.join(TABS)}), got {line!r}")
        from skiff.widgets.panels import panel

        return panel(words[0] if words else None)
