"""``%skiff``: the panel of forms (Train, Solve, OCR), the Chat tab and the job monitor."""

from __future__ import annotations

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class

from skiff.grammar.common import did_you_mean

__all__ = ["PanelMagics"]

TABS = ("train", "solve", "ocr", "chat", "jobs")


@magics_class
class PanelMagics(Magics):
    @line_magic
    def skiff(self, line=""):
        """Show the skiff panel: ``%skiff [train|solve|ocr|chat|jobs]`` opens it on that tab."""
        words = line.split()
        if words and words[0] in ("-h", "--help"):
            print(f"%skiff [{'|'.join(TABS)}]: the skiff panel, opened on that tab: forms "
                  "that launch train, solve and OCR jobs, a chat with a checkpoint, and the "
                  "job monitor")
            return None
        if len(words) > 1 or (words and words[0] not in TABS):
            hint = did_you_mean(words[0], TABS) if len(words) == 1 else ""
            raise UsageError(f"%skiff takes one tab name ({', '.join(TABS)}), got "
                             f"{line!r}{hint}")
        from skiff.widgets.panels import panel

        return panel(words[0] if words else None)
