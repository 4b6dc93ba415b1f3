"""``--class-weight`` on a table file whose target is a column of numbers (a regression):
refused when the command is read, before any run folder, in the words the job used when it
refused it only once it ran (round 41: ``train mlp houses.csv --target price --class-weight
balanced`` made a run folder and failed in it)."""

from __future__ import annotations

import os

__all__ = ["refuse_on_regression", "READ_AT_SUBMIT_BYTES"]

# a table larger than this is read once, by the job (which refuses it there as before)
READ_AT_SUBMIT_BYTES = 16 << 20


def refuse_on_regression(data, target=None, drop=None) -> None:
    """ValueError when ``data`` is a table file (.csv/.tsv/.npz) of at most
    :data:`READ_AT_SUBMIT_BYTES` whose target (``target``, or the one the table picks) is a
    regression's: :func:`skiff.kernels.train.tables.read_table` decides it as the job will.
    A table the job would refuse for another reason is left for the job to say."""
    from skiff.kernels.train.tables import TableError, is_table, read_table

    if data is None or not is_table(str(data)):
        return
    path = os.path.expanduser(str(data))
    try:
        if os.path.getsize(path) > READ_AT_SUBMIT_BYTES:
            return
        table = read_table(path, target, drop)
    except (OSError, TableError, ValueError):
        return
    if table.classes is None:
        raise ValueError(f"--class-weight weighs classes, and the target {table.target!r} "
                         "is a column of numbers (a regression): drop it")
