"""``%slove``: IPython's "Line magic function `%slove` not found." gets "did you mean
%solve?".

IPython has no hook for a missing magic; its one public way in is
``InteractiveShell.set_custom_exc`` (a handler for the exceptions a cell raises).
:func:`install` sets it for ``UsageError`` only when no other handler is set; the handler
shows every UsageError as IPython does (``showtraceback``: "UsageError: ..." on stderr, the
cell failed), a missing magic's message with the closest magic name of the shell added.
"""

from __future__ import annotations

import re

from IPython.core.error import UsageError

__all__ = ["install", "uninstall", "suggest"]

_MISSING = re.compile(r"^(Line magic function `%|Cell magic `%%)([^`]+)` not found\.$")


def suggest(message: str, line_magics, cell_magics) -> str:
    """``message`` with " (did you mean %solve?)" where it is IPython's missing-magic
    message and a registered magic of the same type is close; else ``message``."""
    found = _MISSING.match(message)
    if not found:
        return message
    from skiff.grammar.common import did_you_mean

    cell = found.group(1).startswith("Cell")
    hint = did_you_mean(found.group(2), sorted(cell_magics if cell else line_magics))
    named = re.match(r" \(did you mean '(.+)'\?\)$", hint)
    if not named:
        return message
    return f"{message[:-1]} (did you mean {'%%' if cell else '%'}{named.group(1)}?)."


def _handler(shell, etype, value, tb, tb_offset=None):
    """The shell's custom handler: a UsageError shown as IPython shows it, with the hint."""
    magics = shell.magics_manager.magics
    text = suggest(str(value), magics.get("line", {}), magics.get("cell", {}))
    if text != str(value):
        value = UsageError(text)
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
    return None


def install(shell) -> bool:
    """Set the handler on ``shell`` unless another custom handler is there; True if set."""
    if tuple(getattr(shell, "custom_exceptions", ())):
        return False
    shell.set_custom_exc((UsageError,), _handler)
    return True


def uninstall(shell) -> None:
    """Take the handler off again (only ours)."""
    if tuple(getattr(shell, "custom_exceptions", ())) == (UsageError,):
        shell.set_custom_exc((), None)
