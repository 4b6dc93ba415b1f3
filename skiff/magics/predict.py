"""``%predict JOB DATA...``: ``python -m skiff predict`` in a notebook (one grammar): a
trained table or image model's predictions for new rows or images, as a table."""

from __future__ import annotations

import io
import json

from IPython.core.magic import Magics, line_magic, magics_class

from skiff.grammar.predict import COMMAND, cli

from .base import grammar_doc, parse_line, usage_errors

__all__ = ["PredictMagics"]


# what %predict? says after the usage
PREDICT_NOTES = """JOB may also be a variable holding the training job; the table shows each row or
image with its prediction, and the score when the truth is there."""


@magics_class
class PredictMagics(Magics):
    @line_magic
    @grammar_doc(COMMAND, PREDICT_NOTES)
    def predict(self, line: str = ""):
        ns = parse_line(COMMAND, line)
        if ns is None:  # --help
            return None
        with usage_errors(command="predict", line=line):
            ns.data = _frames(ns.data, self.shell.user_ns)
            document, text = cli(ns, _run_dir(ns.run, self.shell.user_ns))
        if ns.json:
            print(json.dumps(document, ensure_ascii=False))
            return None
        if ns.out:  # written: the terminal's lines (how many, the score, the notes)
            print(text)
            return None
        table, said = _table(text)
        if said:
            print("\n".join(said))
        if ns.output:
            self.shell.user_ns[ns.output] = table
        return table


def _frames(data, user_ns: dict) -> list:
    """DATA words that name a notebook DataFrame: the frame as the table file it would be
    (``%predict JOB new_df``, as ``%train mlp df`` trains on one; it was "no table file
    'new_df'")."""
    from skiff.kernels.train.table_frame import frame_table_file, is_frame

    out = []
    for word in data if isinstance(data, (list, tuple)) else [data]:
        value = user_ns.get(word) if isinstance(word, str) and word.isidentifier() else None
        out.append(str(frame_table_file(value)) if is_frame(value) else word)
    return out


def _run_dir(run: str, user_ns: dict):
    """The run folder of JOB as the terminal finds it, or of a job variable."""
    from pathlib import Path

    from skiff.jobs.listing import job_run_dir

    obj = user_ns.get(run) if run.isidentifier() else None
    if obj is not None and hasattr(obj, "run_dir") and hasattr(obj, "kind"):
        return Path(obj.run_dir)
    path = Path(run).expanduser()
    return path if path.is_dir() else job_run_dir(run, "predict")


def _table(text: str):
    """(the rows as a DataFrame, else the CSV text; the ``# ...`` lines under them)."""
    lines = text.splitlines()
    said = [ln[2:] for ln in lines if ln.startswith("# ")]
    csv = "\n".join(ln for ln in lines if not ln.startswith("# "))
    try:
        import pandas as pd
    except ImportError:  # the terminal's CSV, as text
        return _Text(csv), said
    return pd.read_csv(io.StringIO(csv), keep_default_na=False), said


class _Text(str):
    def __repr__(self) -> str:
        return str(self)
