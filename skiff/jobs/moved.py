"""Paths in a run folder's ``result.json`` after the folder was copied or moved.

A job writes absolute paths into its result (``checkpoint``, ``weights``, an OCR job's
``out``): where its run folder was then. A runs folder copied to another disk, another
user's home or a shared drive kept naming the old place (``jobs show`` printed a checkpoint
there; ``job.result["weights"]`` was a path that no longer existed, and ``jobs resume`` of
a resumed training looked for its checkpoints in the old place). :func:`rebased` moves each
absolute path into a run folder (a folder named as a job id) of another runs root onto the
same folder beside the job's own, where that run folder is there now (a checkpoint that a
resumed training wrote into the folder it resumed goes with it when both were copied). A
path elsewhere (``--out`` beside the data) is left as written.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = ["rebased", "rebased_path"]

# a run folder's name (skiff.jobs.store.new_job_id): <date>-<time>-<kind>-<4 hex>
_RUN_NAME = re.compile(r"\d{8}-\d{6}-[A-Za-z0-9_-]+-[0-9a-f]{4}")
# a run folder's name as a path component (a separator first: a quick scan of a long text)
_IN_PATH = re.compile(re.escape(os.sep) + _RUN_NAME.pattern)


def rebased_path(text: str, root: Path, _seen: dict | None = None) -> str:
    """``text`` moved onto ``root`` when it is an absolute path into a run folder (a folder
    named as a job id) of another runs root and that run folder is under ``root``; else
    ``text`` as it is."""
    if not isinstance(text, str) or not os.path.isabs(text):
        return text
    parts = text.split(os.sep)
    for i in range(len(parts) - 1, 0, -1):
        if not _RUN_NAME.fullmatch(parts[i]):
            continue
        if os.sep.join(parts[:i]) == str(root):
            return text
        seen = {} if _seen is None else _seen
        if parts[i] not in seen:
            seen[parts[i]] = os.path.isdir(os.path.join(root, parts[i], "")) and \
                os.path.isfile(os.path.join(root, parts[i], "config.json"))
        return os.sep.join([str(root), *parts[i:]]) if seen[parts[i]] else text
    return text


def rebased(value, run_dir: Path, text: str | None = None):
    """``value`` (a result: dicts, lists, strings) with each path into a run folder that is
    now beside ``run_dir`` moved there (:func:`rebased_path`).

    ``text``: the JSON ``value`` was read from. When given, only its strings that name a run
    folder are looked at first; ``value`` itself comes back when none of them moves (the
    common case: a training's result holds a history of one entry per step, and walking
    200,000 of them took 4 s of each ``job.result``, twice in a ``jobs resume``)."""
    root = Path(os.path.abspath(run_dir)).parent
    seen: dict = {}
    if text is not None and not _any_moves(text, root, seen):
        return value

    def walk(item, depth: int = 0):
        if depth > 8:
            return item
        if isinstance(item, str):
            return rebased_path(item, root, seen) if os.sep in item else item
        if isinstance(item, dict):
            return {k: walk(v, depth + 1) for k, v in item.items()}
        if isinstance(item, list):
            return [walk(v, depth + 1) for v in item]
        return item

    return walk(value)


def _any_moves(text: str, root: Path, seen: dict) -> bool:
    """Whether a JSON string in ``text`` that names a run folder would be moved onto
    ``root`` (True too when one cannot be read back: the caller then walks it all)."""
    import json

    if "\\/" in text:  # a writer that escapes "/" as "\/": look at every string
        return True
    done: set[int] = set()
    for m in _IN_PATH.finditer(text):
        start = m.start()
        while True:  # the string's opening quote: the last one before that is not escaped
            start = text.rfind('"', 0, start)
            if start < 0:
                return True
            if _escapes(text, start) % 2 == 0:
                break
        if start in done:
            continue
        done.add(start)
        end = m.end()
        while True:
            end = text.find('"', end)
            if end < 0:
                return True
            if _escapes(text, end) % 2 == 0:
                break
            end += 1
        try:
            item = json.loads(text[start:end + 1])
        except ValueError:
            return True
        if isinstance(item, str) and rebased_path(item, root, seen) != item:
            return True
    return False


def _escapes(text: str, at: int) -> int:
    """How many backslashes stand right before ``text[at]``."""
    n = 0
    while at - n - 1 >= 0 and text[at - n - 1] == "\\":
        n += 1
    return n
