"""A pandas DataFrame as a table file, so ``%train mlp df --target outcome`` reads it as
``train mlp data.csv --target outcome`` does: words one-hot, gaps filled, dates as days,
month and weekday, ``table.json`` beside the model for ``predict``. The arrays way
(``_from_pandas``) takes numbers only and knows no target column: ``--target`` was ignored
and the target's words refused ("encode text or categories first").

The frame is written once per content (its hash names the file) as UTF-8 CSV: no index
unless it is named (then it is a column), gaps empty, dates as ISO text, booleans as
``True``/``False`` (two categories), a category column as its values."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

__all__ = ["is_frame", "frame_table_file", "frames_folder"]


def is_frame(value) -> bool:
    """A pandas DataFrame (pandas is not imported for anything else)."""
    return type(value).__module__.startswith("pandas") and hasattr(value, "columns") \
        and hasattr(value, "to_csv")


def frames_folder() -> Path:
    """``frames`` in the runs folder (``$SKIFF_RUNS``, else ``./skiff-runs``: the rule of
    ``skiff.jobs.store.runs_root``, which a kernel may not import), so the job's config names
    a file that stays for a resume, as the run folders do."""
    root = os.environ.get("SKIFF_RUNS", "").strip() and os.environ["SKIFF_RUNS"]
    return (Path(root) if root else Path.cwd() / "skiff-runs").expanduser().absolute() / "frames"


def frame_table_file(frame, folder=None) -> Path:
    """``folder/frame-<hash>.csv`` (default :func:`frames_folder`): the frame as a table file
    (written when not there)."""
    if any(name is not None for name in getattr(frame.index, "names", [None])):
        frame = frame.reset_index()  # a named index is data (an id, a date)
    names = [str(c) for c in frame.columns]
    if len(set(names)) < len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise ValueError(f"the DataFrame has two columns named {dup!r}; rename one (predict "
                         "finds columns by name)")
    text = frame.to_csv(index=False, lineterminator="\n", date_format="%Y-%m-%dT%H:%M:%S")
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    folder = frames_folder() if folder is None else Path(folder).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"frame-{digest}.csv"
    if not path.is_file():
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    return path
