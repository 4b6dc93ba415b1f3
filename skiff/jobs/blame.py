"""Whose mistake a failed job's error is (round 47, h11): ``jobs show`` and the notebook's
views printed skiff's traceback under every failed job, a missing file or a bad column as
much as skiff's own bug. Decided from the run folder's error record (its message and the
traceback the job wrote): a user's error is one skiff raised on purpose, in its own code,
naming what is wrong (``raise TableError(...)``, ``raise ValueError(...)``: the kinds of
error every front shows as one line, :data:`skiff.grammar.common.USER_ERRORS`), or a file
the system could not open (an ``OSError`` such as ``FileNotFoundError``). Anything else (a
``TypeError`` or ``KeyError`` raised by Python itself in skiff's code, an error raised in a
library, a notebook function's own error, whose traceback its user needs) keeps its
traceback in view."""

from __future__ import annotations

import builtins
import re
import sys

__all__ = ["users_error"]

# the last line of a traceback: ``pkg.mod.TableError: message`` (or a bare ``ValueError``)
_LAST = re.compile(r"^([A-Za-z_][\w.]*)(?::|$)")
_FRAME = re.compile(r'^\s*File "([^"]*)", line \d+')


def _error_class(name: str):
    """The class a traceback's last line names, where it is a builtin or skiff's own (its
    module imported: skiff's code only), else None."""
    if "." not in name:
        found = getattr(builtins, name, None)
        return found if isinstance(found, type) else None
    module, _, attr = name.rpartition(".")
    if module != "skiff" and not module.startswith("skiff."):
        found = getattr(sys.modules.get(module), attr, None)  # a library's, if loaded
        return found if isinstance(found, type) else None
    try:
        import importlib

        found = getattr(importlib.import_module(module), attr, None)
    except Exception:  # noqa: BLE001 - a record from another version: not known
        return None
    return found if isinstance(found, type) else None


def users_error(error: str | None, traceback: str | None) -> bool:
    """Whether a failed job's error (its record's ``message`` and ``traceback``) is the
    user's to fix, shown as its one line (the traceback behind ``jobs logs``), rather than
    skiff's own bug or a function's error, shown with its traceback. False where there is no
    traceback (nothing to hide) or it cannot be read."""
    if not error or not traceback or not isinstance(traceback, str):
        return False
    lines = [line for line in traceback.rstrip("\n").splitlines() if line.strip()]
    if not lines:
        return False
    at = next((i for i in range(len(lines) - 1, -1, -1) if _FRAME.match(lines[i])), None)
    if at is None:
        return False
    # the exception's line: the first after the innermost frame that is not indented (its
    # source line and carets are); a message may run on over the lines after it
    said = next((line for line in lines[at + 1:] if not line[:1].isspace()), "")
    match = _LAST.match(said)
    cls = _error_class(match.group(1)) if match else None
    if cls is None or not issubclass(cls, BaseException):
        return False
    if issubclass(cls, OSError) and not issubclass(cls, (ConnectionError, TimeoutError)):
        return True  # a file named that is not there, not readable, a folder...
    from skiff.grammar.common import USER_ERRORS

    if not issubclass(cls, USER_ERRORS):
        return False
    path = _FRAME.match(lines[at]).group(1)
    source = lines[at + 1].strip() if at + 1 < len(lines) else ""
    return _skiffs(path) and source.startswith("raise ")


def _skiffs(path: str) -> bool:
    """Whether a frame's file is skiff's own code (this install's, or another install's)."""
    import os

    # this package's folder (skiff/jobs/ is one below it)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    path = path.replace("\\", "/")
    return path.startswith(here.replace("\\", "/")) or "-packages/skiff/" in path
