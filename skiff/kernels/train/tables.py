"""A table file as training arrays for the built-in ``mlp``: ``python -m skiff train mlp
data.csv`` (or ``.tsv``, ``.npz``) from a terminal, as a notebook trains on arrays of its own.

CSV and TSV: a first row with any cell that is not a number is the header. A CSV with more
semicolons than commas is a spreadsheet's export with decimal commas (``1,5;2,0;yes``); in a
comma or tab file a column of them (``"0,126"``) is found by :mod:`.table_decimal`; each number
column's mark goes into ``table.json`` (``decimal``), so that predict reads a new file's
ambiguous ``"1,304"`` as training's neighbours did (:func:`read_rows`). A column
without a single value (a trailing separator's) is left out, as SimpleImputer drops it.
The target is the column named ``label``, ``target``, ``y`` or ``class`` (any case), else the
one column of words (iris's ``species``), else the last one; every other column is a feature.
A feature column of numbers may have empty cells (or ``NA``, ``n/a``, ``?``, ``-``...): they
are filled with the column's mean; a word among numbers is refused with its row and column
(a typo). A column of words only is categories (a city, a colour): one 0/1 feature per value
(one-hot), up to ``MAX_CATEGORIES`` values and at most half as many as rows; more is free
text or an identifier, refused with its first word's row and column. A column of dates
(``2024-03-05``, ``05/03/2024 14:30``) is days since 1970, month and weekday (and hour) as
numbers (:mod:`.table_dates`), never the target found by shape. What
was decided is in ``Table.notes`` and the encoding in ``table.json``, so ``predict`` reads new
rows the same way. A target of words is classes (sorted names, numbered from 0); a target of whole
numbers is classes too when it has at most ``MAX_CLASSES`` values and fewer than half as many
as rows, else, like any other numbers, a regression target.

NPZ: arrays named ``x``/``X``/``features`` and ``y``/``Y``/``target``/``labels`` (or exactly two
arrays: the 2-D one is the features); integer targets are classes, float targets regression.

Features are standardised (mean 0, standard deviation 1 per column) and a regression target
too; :class:`Table` keeps the means and deviations so that predictions can be mapped back
(``to_json``, written beside the model as ``table.json``).
"""

from __future__ import annotations

import csv
import io
import itertools
import math
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .table_cells import blank_note, column_notes, grouped_commas, records
from .table_dates import date_features, date_order, looks_like_date, order_text
from .table_decimal import decimal_comma_columns
from .table_jsonl import JSON_LINES, json_lines_rows

__all__ = ["TABLE_SUFFIXES", "OTHER_TABLES", "other_table_hint", "TARGET_NAMES", "MAX_CLASSES",
           "MAX_CATEGORIES", "Table", "TableError", "is_table", "table_columns", "pick_target",
           "read_table", "encode_column", "apply_encoding", "words_column", "MAX_WORDS"]

TABLE_SUFFIXES = (".csv", ".tsv", ".npz", ".jsonl", ".ndjson")
TARGET_NAMES = ("label", "target", "y", "class")
MAX_CLASSES = 50
MAX_CATEGORIES = 50
MISSING = frozenset({"", "na", "n/a", "nan", "null", "none", "?", "-", "--", "#n/a"})


class TableError(ValueError):
    """The file cannot be read as a training table (the message names the row and column)."""


class FreeTextColumn(TableError):
    """A feature column of words too many to be categories (an identifier, free text)."""


@dataclass
class Table:
    """Standardised features ``x`` (float32, rows x features) and the target ``y``: class
    numbers (int64) or a standardised column (float32, rows x 1)."""

    x: np.ndarray
    y: np.ndarray
    columns: list[str]
    target: str
    classes: list[str] | None = None  # names of the classes, None for a regression
    x_mean: np.ndarray = field(default_factory=lambda: np.zeros(0))
    x_std: np.ndarray = field(default_factory=lambda: np.ones(0))
    y_mean: float = 0.0
    y_std: float = 1.0
    notes: list[str] = field(default_factory=list)  # what reading the file decided (logged)
    # how the file's columns became features: [{"name", "kind": "number", "fill"} or
    # {"name", "kind": "categories", "values": [...]}] (None: all numbers, none missing)
    encoding: list | None = None
    scaled_on: int | None = None  # the rows the scaling was fitted on (None: all of them)
    # each number column's decimal mark, "," or "." (a column of whole numbers has none):
    # predict reads a new file's "1,304" by it (None: no decimal comma anywhere)
    decimal: dict | None = None

    @property
    def outputs(self) -> int:
        return len(self.classes) if self.classes is not None else 1

    def to_json(self) -> dict:
        return {"columns": self.columns, "target": self.target, "classes": self.classes,
                "notes": self.notes,
                "x_mean": self.x_mean.tolist(), "x_std": self.x_std.tolist(),
                "y_mean": self.y_mean, "y_std": self.y_std, "rows": int(len(self.x)),
                # the training rows under --val-split: the means and deviations are theirs
                "scaled_on_rows": int(self.scaled_on if self.scaled_on is not None
                                      else len(self.x)),
                **({"encoding": self.encoding} if self.encoding is not None else {}),
                **({"decimal": self.decimal} if self.decimal else {})}


def is_table(path) -> bool:
    return Path(str(path)).suffix.lower() in TABLE_SUFFIXES


# tables in formats ``mlp`` does not read, and pandas' reader of each (round 45: a JSON-lines
# file was "trains on 'blobs' or a table file (.csv, .tsv, .npz)", no way on said)
OTHER_TABLES = {".json": "read_json(path)", ".parquet": "read_parquet(path)",
                ".feather": "read_feather(path)", ".xlsx": "read_excel(path)",
                ".xls": "read_excel(path)", ".ods": "read_excel(path)"}


def other_table_hint(path) -> str:
    """How to train ``mlp`` on a table of another format (JSON lines, Parquet, Excel): ''
    when ``path`` is none of them. The notebook's ``%train mlp df`` takes a DataFrame."""
    path = Path(str(path))
    reader = OTHER_TABLES.get(path.suffix.lower())
    if reader is None:
        return ""
    csv_name = path.with_suffix(".csv").name
    return (f"; {path.name} is a {path.suffix.lower()[1:]} table, which mlp does not read: "
            f"in a notebook, df = pd.{reader.replace('path', repr(str(path)))} and then "
            f"%train mlp df; or write it as CSV first: "
            f"pd.{reader.replace('path', repr(str(path)))}.to_csv({csv_name!r}, index=False)")


def read_table(path, target: str | None = None, drop=None, fit_rows=None,
               text=None, ngrams: int = 1, tfidf: bool = False) -> Table:
    """The training table in ``path`` (see the module docstring); ``target``: the column to
    predict, by name (any case) or 1-based number, instead of the one found by name/shape;
    ``drop``: columns to leave out (names or 1-based numbers, a list or one comma-separated
    text: a passenger's name, a ticket number, an identifier), which predict then ignores.
    ``fit_rows``: the rows (indices, or ``fit_rows(n)`` of the file's n rows) whose means and
    deviations scale the features and fill the gaps, the training rows when some are held
    out for validation (scikit-learn fits its scaler on them); None: every row.
    ``text``: columns of sentences (names or numbers, as ``drop``), each read as a bag of
    words: one feature per word of the training rows, its count in the cell (scikit-learn's
    ``CountVectorizer``; round 47 h9: such a column was "free text or an identifier").
    ``ngrams=2``: runs of up to 2 words are features too (``ngram_range=(1, 2)``);
    ``tfidf=True``: each count times the word's inverse document frequency, each row of the
    column scaled to length 1 (scikit-learn's ``TfidfVectorizer`` defaults; round 48 h3)."""
    check_text_options(ngrams, tfidf)
    if (ngrams != 1 or tfidf) and not text:
        raise TableError("ngrams and tfidf shape the features of text columns; name them "
                         "(text='review', --text review)")
    path = Path(path)
    if not path.is_file():
        raise TableError(f"no table file {str(path)!r}")
    if other_table_hint(path):  # an .xlsx was read as CSV: "one column" (round 48 h20)
        raise TableError(f"{path.name}: not a .csv, .tsv, .jsonl or .npz table"
                         + other_table_hint(path))
    if path.suffix.lower() == ".npz":
        if target is not None or drop:
            raise TableError(f"{path.name}: an .npz table names its arrays x and y; "
                             f"{'--target picks' if target is not None else 'drop leaves out'}"
                             " a column of a .csv or .tsv file")
        x, y, columns, target = _read_npz(path)
        encoding, read_notes, marks = None, [], {}
    else:
        x, y, columns, target, encoding, read_notes, marks = _read_delimited(
            path, "\t" if path.suffix.lower() == ".tsv" else ",", target, drop, fit_rows,
            text, (int(ngrams), bool(tfidf)))
    if len(x) < 2:
        raise TableError(f"{path.name}: {len(x)} row of data; training needs at least 2")
    x, kept, notes = _drop_row_index(x, columns)
    if encoding is not None and len(kept) < len(columns):  # the row index was a number column
        encoding = [e for e in encoding if e["name"] != columns[0]]
    fit = _fit_mask(fit_rows, len(x), y)
    notes += column_notes(x, kept, fit)  # a constant column, an identifier's numbers
    table = _standardised(x, y, kept, target, fit)
    table.scaled_on = None if fit is None else int(fit.sum())
    if table.classes is not None and len(table.classes) < 2:  # the cross-entropy's shape error
        raise TableError(f"{path.name}: the target {target!r} is {table.classes[0]!r} in all "
                         f"{len(x)} rows: one class, nothing to tell apart; a classifier "
                         "needs rows of two classes or more (or pick another column with "
                         "--target)")
    table.notes = notes + read_notes + _imbalance(table)
    if encoding is not None and any(e["kind"] != "number" or e.get("filled") for e in encoding):
        table.encoding = encoding
    if "," in marks.values():  # the columns read with decimal commas: predict reads so
        table.decimal = {c: m for c, m in marks.items() if c in kept or c == target}
    return table


def _imbalance(table: Table) -> list[str]:
    """A note when the rarest class has under a tenth of the rows of the commonest: a model
    that never predicts it still scores a high accuracy (metrics.json gives each class's
    recall); it names the option that weighs the classes (scikit-learn's "balanced")."""
    if table.classes is None:
        return []
    counts = np.bincount(table.y, minlength=len(table.classes))
    if counts.min() * 10 >= counts.max():
        return []
    rare, common = int(counts.argmin()), int(counts.argmax())
    shown = ", ".join(f"{c} {n}" for c, n in zip(table.classes, counts))
    return [f"classes imbalanced: {table.classes[rare]!r} has {counts[rare]} of "
            f"{int(counts.sum())} rows ({shown}); always answering "
            f"{table.classes[common]!r} is {counts[common] / counts.sum():.0%} accurate: read "
            "each class's recall (metrics.json, predict's notes), or weigh the classes: "
            "--class-weight balanced (Trainer(class_weight='balanced') in Python)"]


INDEX_NAMES = ("", "unnamed: 0", "index", "id", "row")


def _drop_row_index(x: np.ndarray, columns: list[str]):
    """Leave out a first column that only numbers the rows (0, 1, 2, ... or 1, 2, 3, ...)
    under no name, 'Unnamed: 0', 'index', 'id' or 'row': pandas writes its index so
    (``df.to_csv()``), and as a feature it would teach the model the file's row order."""
    if x.shape[1] < 2 or columns[0].strip().lower() not in INDEX_NAMES:
        return x, columns, []
    n = np.arange(len(x), dtype=np.float64)
    col = x[:, 0]
    if not (np.array_equal(col, n) or np.array_equal(col, n + 1)):
        return x, columns, []
    name = repr(columns[0]) if columns[0] else "the unnamed first column"
    return x[:, 1:], columns[1:], [f"left out {name}: it numbers the rows (a row index, as "
                                   "pandas writes one), not a feature"]


# a spreadsheet's formatted amount: "$1,200.50", "-€3.5", "12 %", "1,234,567" (commas only
# as thousands groups of three, so a decimal comma "1,5" stays a word)
_AMOUNT = re.compile(r"^([+-]?)\s*[$€£¥]?\s*([+-]?)([1-9]\d{0,2}(?:,\d{3})+|\d+)(\.\d*)?\s*"
                     r"[$€£¥%]?$")


def _number(cell: str) -> float | None:
    """The number a cell holds: plain (``1.5e3``) or as a spreadsheet formats an amount
    (``$1,200.50`` is 1200.5, ``45%`` is 45: the number shown), else None."""
    try:
        value = float(cell)
    except ValueError:
        m = _AMOUNT.match(cell.strip()) if any(ch.isdigit() for ch in cell) else None
        if m is None or (m.group(1) and m.group(2)):
            return None
        value = float(m.group(1) + m.group(2) + m.group(3).replace(",", "") + (m.group(4) or ""))
    return value if math.isfinite(value) else None


def _cells(path: Path, delimiter: str, limit: int | None = None, notes=None,
           commas: list | None = None) -> list:
    """``(line number, stripped cells)`` of each non-empty line of a CSV or TSV file (the
    first ``limit`` of them when given). The file is UTF-8, UTF-16 (Excel's "Unicode text")
    or Windows-1252 (Excel's CSV on Windows): it was a UnicodeDecodeError unless UTF-8; how
    it was decoded goes to ``notes`` when it is not UTF-8. ``commas``: a list given gets the
    0-based numbers of the columns read with decimal commas."""
    from .data import decode_text_file

    if path.suffix.lower() in JSON_LINES:  # one object a line: the keys, then the records
        return json_lines_rows(path, limit, TableError)
    text, note = decode_text_file(path)
    if note and notes is not None:
        notes.append(note)
    head = text[:65536]
    if delimiter == "," and (head.count(";") > head.count(",") or _semicolons(head)):
        delimiter = ";"  # a spreadsheet's export where the comma is the decimal mark
    blank: list[int] = []  # rows of separators only (round 48 h20: dropped unsaid)
    # each cell stripped once (a 200k-row file); a record's first line (a quoted cell over two
    # lines: later errors named a line too early, round 48 h20)
    found = records(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter), blank)
    rows = list(itertools.islice(found, limit))
    if blank and notes is not None:
        notes.append(blank_note(blank))
    if delimiter == ";":  # "1,5" is one and a half there; "1.234,5" a thousand and more
        raw = rows  # (round 48 h20: it was "not a number")
        rows = [(k, [c.replace(",", ".") if _number(c.replace(",", ".")) is not None
                     else c for c in r]) for k, r in grouped_commas(rows, notes)]
        if commas is not None:
            commas += sorted({j for (_, r), (_, cells) in zip(rows, raw) for j, c in
                              enumerate(cells) if "," in c and r[j] != c})
    elif ("," in text) if delimiter == "\t" else ('"' in text):  # '"0,126"': a comma inside
        rows, found = decimal_comma_columns(rows)  # was 126, and '"1,49"' refused
        if commas is not None:
            commas += found
        if found and notes is not None and rows:
            first = rows[0][1]
            named = any(_number(c) is None for c in first)
            notes.append("decimal commas in column" + ("s " if len(found) > 1 else " ")
                         + ", ".join(repr(first[j]) if named and j < len(first)
                                     else str(j + 1) for j in found)
                         + " ('0,126' is 0.126 there)")
    if not rows:
        raise TableError(f"{path.name}: no rows")
    return rows


_SEMICOLON_CELL = re.compile(r"^[+-]?\d+(?:,\d+)?$")


def _semicolons(head: str) -> bool:
    """A file of decimal commas only, "1,304;2,500", has as many commas as semicolons (it was
    split at the commas): ``;`` it is when the first line has ``;`` and no ``,`` (a header
    ``a;b``), or when the first lines all split at ``;`` into as many numbers of one comma."""
    lines = [t for t in head.splitlines()[:20] if t.strip()]
    if not lines or ";" not in lines[0]:
        return False
    if "," not in lines[0]:
        return True
    cells = [t.split(";") for t in (lines[:-1] if len(lines) > 1 else lines)]
    return len({len(c) for c in cells}) == 1 and all(
        _SEMICOLON_CELL.match(c.strip()) for row in cells for c in row)


def read_rows(path, decimal: dict | None = None, notes: list | None = None,
              order: list | None = None) -> tuple[list[str] | None, list]:
    """(the header, or None when the first row is all numbers; the other rows as
    ``(line, cells)``) of a CSV or TSV file, read as training reads it. ``decimal``: the
    training columns' decimal marks (``table.json``): a column trained on decimal commas reads
    ``1,304`` as 1.304, not as a thousands grouping; where the file's cells say otherwise
    (points where training had commas, or the reverse) it is said in ``notes``; ``order``:
    the columns of a file without a header (training's)."""
    path = Path(path)
    if path.is_dir():  # a folder of images for a table's model
        raise TableError(f"{str(path)!r} is a folder: this model was trained on a table, and "
                         "predicts the rows of a .csv or .tsv file")
    if not path.is_file():
        raise TableError(f"no table file {str(path)!r}")
    if path.suffix.lower() not in (".csv", ".tsv", ".txt") + JSON_LINES:
        raise TableError(f"{path.name}: predict reads .csv, .tsv or .jsonl files")
    commas: list[int] = []
    rows = _cells(path, "\t" if path.suffix.lower() == ".tsv" else ",", commas=commas)
    first = rows[0][1]
    header = first if rows[0][0] == 0 or any(_number(c) is None for c in first) else None
    if header is not None and len(rows) < 2:
        raise TableError(f"{path.name}: a header and no rows")
    body = rows[1:] if header is not None else rows
    if decimal:
        body = _training_marks(header or order or [], body, decimal, set(commas),
                               [] if notes is None else notes)
    return header, body


_DECIMAL_COMMA = re.compile(r"^[+-]?\d+,\d+$")


def _training_marks(names, body: list, decimal: dict, commas: set, notes: list) -> list:
    """``body`` with the cells of the columns trained on decimal commas read so (``1,304``:
    1.304, as the training file's neighbours said; this file alone cannot tell), and a note
    for each column whose cells contradict training's mark."""
    out = [(line, list(cells)) for line, cells in body]
    for j, name in enumerate(names):
        mark = decimal.get(name)
        if mark is None or j in commas:  # the file's own reading found decimal commas
            if mark == "." and j in commas:
                notes.append(f"column {name!r}: decimal commas in this file where training's "
                             "cells had points: read as decimal commas")
            continue
        cells = [cells[j] for _, cells in out if j < len(cells)]
        points = [c for c in cells if "." in c and _number(c) is not None]
        if mark == "," and points:
            notes.append(f"column {name!r}: {len(points)} cell{'s' if len(points) > 1 else ''} "
                         f"with a decimal point ({points[0]!r}) where training's had decimal "
                         f"commas: read as {float(points[0]):g} (a decimal point, not a "
                         "thousands grouping: check the file's number format)")
        if mark == ",":
            for _, row in out:
                if j < len(row) and _DECIMAL_COMMA.match(row[j]):
                    row[j] = row[j].replace(",", ".")
    return out


def table_columns(path) -> list[str]:
    """The column names of a .csv/.tsv table (``column N`` without a header)."""
    path = Path(path)
    rows = _cells(path, "\t" if path.suffix.lower() == ".tsv" else ",", limit=2)
    first = rows[0][1]
    if (rows[0][0] == 0 or any(_number(c) is None for c in first)) and len(rows) > 1:
        return first
    return [f"column {i + 1}" for i in range(len(first))]


def pick_target(path, columns: list[str], target: str) -> int:
    """The index of column ``target`` (a name in any case, or a 1-based number)."""
    path = Path(path)
    lowered = [c.strip().lower() for c in columns]
    want = str(target).strip().lower()
    if want in lowered:
        return lowered.index(want)
    if want.isdigit() and 1 <= int(want) <= len(columns):
        return int(want) - 1
    if want.isdigit():
        raise TableError(f"{path.name}: no column {want}: the columns are numbered 1 to "
                         f"{len(columns)} ({', '.join(columns)})")
    parts = [w.strip() for w in want.split(",")]
    if len(parts) > 1 and all(w in lowered or w.isdigit() for w in parts):
        # two target columns (multi-label, as scikit-learn's MLPClassifier fits a 2-D y):
        # it was "no column 'a,b'", as if the names were wrong
        parts = [columns[lowered.index(w)] if w in lowered else w for w in parts]
        raise TableError(f"{path.name}: --target {target!r} names {len(parts)} columns; a "
                         "model here predicts one target column (no multi-label or "
                         "multi-output): train one model per column (--target "
                         f"{parts[0]}, then --target {parts[1]}), or join them into one "
                         "column of classes (e.g. pandas: df['ab'] = df.a.astype(str) + '_' + "
                         "df.b.astype(str)) and train on it")
    import difflib

    close = difflib.get_close_matches(want, lowered, n=1, cutoff=0.6)
    hint = f" (did you mean {columns[lowered.index(close[0])]!r}?)" if close else ""
    raise TableError(f"{path.name}: no column {target!r}{hint}; the columns are "
                     f"{', '.join(columns)}")


def _dropped(path: Path, columns: list[str], drop) -> list[int]:
    """The indices of the columns ``drop`` names (each found as ``--target`` is)."""
    if not drop:
        return []
    names = [d.strip() for d in drop.split(",")] if isinstance(drop, str) else \
        [str(d).strip() for d in drop]
    return sorted({pick_target(path, columns, d) for d in names if d})


def _fit_mask(fit_rows, n: int, labels=None):
    """A boolean mask of the ``n`` rows the statistics come from (None: all of them); a
    ``fit_rows`` with ``by_labels`` is called with the target's cells too (a stratified
    hold-out's training rows, round 46 h7)."""
    if fit_rows is None:
        return None
    if callable(fit_rows) and getattr(fit_rows, "by_labels", False):
        rows = fit_rows(n, labels)
    else:
        rows = fit_rows(n) if callable(fit_rows) else fit_rows
    mask = np.zeros(n, bool)
    mask[np.asarray(rows, np.int64)] = True
    return mask if mask.any() else None


def _read_delimited(path: Path, delimiter: str, chosen: str | None = None, drop=None,
                    fit_rows=None, text=None, text_as=(1, False)):
    decoded: list[str] = []  # a file that is not UTF-8: how it was read
    commas: list[int] = []  # the columns read with decimal commas
    rows = _cells(path, delimiter, notes=decoded, commas=commas)
    first = rows[0][1]
    header = rows[0][0] == 0 or any(_number(c) is None for c in first)  # 0: JSON's keys
    columns = first if header else [f"column {i + 1}" for i in range(len(first))]
    body = rows[1:] if header else rows
    width = len(columns)
    if width < 2:
        raise TableError(f"{path.name}: one column; a table needs features and a target")
    if header:  # predict finds the features by name: one name, one column
        seen = {}
        for i, c in enumerate(columns):
            if c in seen:
                raise TableError(f"{path.name}: columns {seen[c] + 1} and {i + 1} are both "
                                 f"named {c!r}; rename one (predict finds columns by name)")
            seen[c] = i
    lowered = [c.lower() for c in columns]
    dropped = _dropped(path, columns, drop)
    texts = [i for i in _dropped(path, columns, text) if i not in dropped]
    chosen_at = pick_target(path, columns, chosen) if chosen is not None else None
    # a column with no value at all (a spreadsheet's trailing separator, "x;label;", or a
    # "notes" column nobody filled): left out, as scikit-learn's SimpleImputer drops it; it
    # was "every cell is empty", and the unnamed trailing one was taken for the target
    blank = [i for i in range(width) if i not in dropped and i != chosen_at and body
             and all(i >= len(cells) or is_missing(cells[i]) for _, cells in body)]
    kept = [i for i in range(width) if i not in dropped and i not in blank]
    if len(kept) < 2:
        raise TableError(f"{path.name}: {len(kept)} column{'' if len(kept) == 1 else 's'} "
                         "with values left" + (f" ({len(blank)} with every cell empty)"
                                              if blank else "")
                         + "; a table needs features and a target")
    words = [i for i, c in enumerate(body[0][1]) if i in kept and _number(c) is None
             and not looks_like_date(c) and i not in texts] if body else []  # a date, a
    # text: features, not classes
    target = chosen_at if chosen is not None else next(
        (lowered.index(t) for t in TARGET_NAMES if t in lowered
         and lowered.index(t) not in dropped),
        words[0] if len(words) == 1 else kept[-1])  # a column of words: the classes
    if target in texts:
        raise TableError(f"{path.name}: {columns[target]!r} is the target, not a text column "
                         "to read as words; pick another target with --target")
    if target in dropped:
        raise TableError(f"{path.name}: {columns[target]!r} is the target and cannot be left "
                         "out; pick another target with --target")
    features = [i for i in kept if i != target]
    if not features:
        raise TableError(f"{path.name}: leaving out {', '.join(columns[i] for i in dropped)} "
                         "leaves no feature")
    notes = decoded + ([f"left out column{'s' if len(dropped) > 1 else ''} "
                        f"{', '.join(repr(columns[i]) for i in dropped)} (as asked)"]
                       if dropped else [])
    if blank:
        shown = [repr(columns[i]) if columns[i] else f"{i + 1} (unnamed)" for i in blank]
        notes.append(f"left out column{'s' if len(blank) > 1 else ''} {', '.join(shown)}: "
                     "every cell is empty (scikit-learn's SimpleImputer drops such a column)")
    if chosen is None and target != kept[-1] and lowered[target] not in TARGET_NAMES:
        # the lone column of words was taken for the target over the last column: say so
        notes.append(f"target: {columns[target]!r}, the one column of words (classes), not "
                     f"the last column {columns[kept[-1]]!r}; --target picks another")
    elif chosen is None and lowered[target] not in TARGET_NAMES and header:
        # no column is named label/target/y/class: "price,area,rooms" learnt the rooms
        notes.append(f"target: {columns[target]!r}, the last column (none is named "
                     f"{', '.join(TARGET_NAMES)}); --target picks another")
    for line, cells in body:
        if len(cells) != width:
            raise TableError(f"{path.name}, line {line}: {len(cells)} cells where the "
                             f"{'header has' if header else 'first row has'} {width}")
    # a target cell that is missing ('', NA, ?...) is refused as scikit-learn refuses a NaN
    # in y: an "NA" among prices made the prices classes, one per value, without a word
    unlabelled = [line for line, cells in body if is_missing(cells[target])]
    if unlabelled:
        line = unlabelled[0]
        cell = next(cells[target] for k, cells in body if k == line)
        more = (f" (and {len(unlabelled) - 1} more row{'s' if len(unlabelled) > 2 else ''})"
                if len(unlabelled) > 1 else "")
        raise TableError(f"{path.name}, line {line}, column {columns[target]!r} (the "
                         f"target): an empty cell{f' ({cell!r})' if cell else ''}{more}; "
                         "leave out the rows whose target is not known (predict is for "
                         "them), or pick another column with --target")
    labels = [cells[target] for _, cells in body]
    is_number = {v: _number(v) is not None for v in set(labels)}  # each distinct cell once
    numeric = [is_number[v] for v in labels]
    if not all(numeric) and 2 * sum(numeric) >= len(labels) and \
            len(set(labels)) > MAX_CLASSES:  # a quantity with a typo: not hundreds of classes
        k = numeric.index(False)
        raise TableError(f"{path.name}, line {body[k][0]}, column {columns[target]!r} (the "
                         f"target): {labels[k]!r} is not a number (the column's other cells "
                         f"are numbers, {len(set(labels))} different values: a quantity, not "
                         "classes)")
    parts, names, encoding, free = [], [], [], []
    fit = _fit_mask(fit_rows, len(body), labels)
    for i in features:
        try:
            values, spec, note = (words_column if i in texts else encode_column)(
                path.name, columns[i], [cells[i] for _, cells in body],
                [line for line, _ in body], fit, *((text_as,) if i in texts else ()))
        except FreeTextColumn as exc:  # every such column named at once, then refused
            free.append((columns[i], str(exc)))
            continue
        parts.append(values)
        names += spec.pop("features")
        encoding.append(spec)
        notes += [note] if note else []
    if free:
        listed = ",".join(name for name, _ in free)
        more = (f"; so {'is' if len(free) == 2 else 'are'} "
                f"{', '.join(repr(name) for name, _ in free[1:])}" if len(free) > 1 else "")
        raise TableError(f"{free[0][1]}{more}; leave {'them' if len(free) > 1 else 'it'} "
                         f"out: --drop {shlex.quote(listed)} (read_table(..., drop=...))")
    # each number column's decimal mark (whole numbers only: none), for predict's new rows
    marks = {columns[j]: "," for j in commas if j < width}
    marks.update({columns[j]: "." for j in kept if columns[j] not in marks and any(
        "." in cells[j] and _number(cells[j]) is not None for _, cells in body)})
    return np.hstack(parts), labels, names, columns[target], encoding, notes, marks


def is_missing(cell: str) -> bool:
    return cell.strip().lower() in MISSING


def _plain_numbers(cells: list[str]) -> np.ndarray | None:
    """The cells as float64 when each is a finite number numpy parses as ``float()`` does
    (``1.5``, ``-2e3``; no gap, word, amount or ``nan``), else None (the cell-by-cell read)."""
    try:
        col = np.asarray(cells, dtype=np.float64)
    except (ValueError, TypeError, OverflowError):
        return None
    return col if col.ndim == 1 and len(col) and np.isfinite(col).all() else None


def encode_column(file: str, name: str, cells: list[str], lines: list[int], fit=None):
    """``(features (rows x k), spec, note)`` of one feature column: a column of numbers with
    its missing cells filled by its mean (k = 1), or of words one-hot over its values. The
    spec (``kind``, ``fill`` or ``values``, and ``features``: their names) is what
    :func:`apply_encoding` needs for new rows. ``fit``: a mask of the rows whose mean fills
    the gaps (the training rows; None: all)."""
    plain = _plain_numbers(cells)
    if plain is not None:  # every cell a finite number: numpy parses them at C speed (a
        # 200k-row file's 8 columns took 6.3 CPU s in _number, pandas' whole read 0.8 s)
        fill = float(np.mean(plain if fit is None or not np.any(fit) else plain[fit]))
        return plain[:, None], {"name": name, "kind": "number", "fill": fill, "filled": 0,
                                "features": [name]}, None
    read = {c: (True, None) if is_missing(c) else (False, _number(c)) for c in set(cells)}
    numbers = [read[c][1] for c in cells]  # each distinct cell read once: large files
    words = [k for k, c in enumerate(cells) if read[c] == (False, None)]
    if not words:
        known = [v for v in numbers if v is not None]
        if not known:
            raise TableError(f"{file}, column {name!r}: every cell is empty")
        fitted = known if fit is None else [v for v, f in zip(numbers, fit)
                                            if f and v is not None] or known
        fill = float(np.mean(fitted))
        empty = len(cells) - len(known)
        col = np.array([fill if v is None else v for v in numbers], np.float64)[:, None]
        whose = "the training rows'" if fit is not None else "its"
        note = (f"column {name!r}: {empty} empty cell{'s' if empty > 1 else ''} filled with "
                f"{whose} mean {fill:.6g}") if empty else None
        return col, {"name": name, "kind": "number", "fill": fill, "filled": empty,
                     "features": [name]}, note
    k = words[0]
    dated = [looks_like_date(c) for c, (gap, v) in read.items() if not gap and v is None]
    if all(dated):  # points in time, not words
        return _date_column(file, name, cells, lines, fit)
    if 10 * sum(dated) >= 9 * len(dated):  # dates and a word: a typo, not free text
        k = next(j for j in words if not looks_like_date(cells[j]))
        raise TableError(f"{file}, line {lines[k]}, column {name!r}: {cells[k]!r} is not a "
                         "date (the column's other cells are dates; leave a gap empty)")
    if any(v is not None for v in numbers):  # numbers and a word: a typo, not categories
        raise TableError(f"{file}, line {lines[k]}, column {name!r}: {cells[k]!r} is not a "
                         f"number (the column's other cells are numbers)")
    # every missing cell ('', 'NA', 'n/a', '?') one value, as pandas reads them all NaN: each
    # spelling was a category of its own (round 48 h20), and the column "free text"
    gaps = sum(read[c][0] for c in cells)
    if gaps:
        cells = ["" if read[c][0] else c for c in cells]
    distinct = sorted({c.strip() for c in cells})
    if len(distinct) > MAX_CATEGORIES or len(distinct) > max(2, len(cells) // 2):
        raise FreeTextColumn(f"{file}, line {lines[k]}, column {name!r}: {cells[k]!r} is not "
                             f"a number, and the column holds {len(distinct)} different "
                             f"values in {len(cells)} rows: free text or an identifier, not "
                             f"categories (categories are at most {MAX_CATEGORIES} values, at "
                             f"most half as many as rows)")
    col = _one_hot(cells, distinct)
    # an empty cell is a value of its own (scikit-learn's OneHotEncoder: "missing"), named
    # so: the summary said "('', 'east', ...)" as if the column had a blank category
    shown = ", ".join(repr(d) if d else "empty cells" for d in distinct[:6]) + (
        " ..." if len(distinct) > 6 else "")
    return col, {"name": name, "kind": "categories", "values": distinct,
                 "features": [f"{name}={d or '(empty)'}" for d in distinct]}, \
        f"column {name!r}: words, one 0/1 feature per value ({shown})" + (
            f"; {gaps} missing cell{'s' if gaps > 1 else ''} (empty, NA...) one value of "
            "their own" if gaps else "")


MAX_WORDS = 2000  # a text column's features: its most frequent words
_WORD = re.compile(r"[^\W_]+")  # letters and digits, as CountVectorizer's (?u)\b\w\w+\b
# takes words, one-letter ones too


def words_of(cell: str) -> list[str]:
    """A text cell's words, lower-cased."""
    return _WORD.findall(cell.lower())


MAX_NGRAMS = 5  # --ngrams: runs of at most this many words


def check_text_options(ngrams, tfidf) -> None:
    """``ngrams`` a whole number 1..:data:`MAX_NGRAMS`, ``tfidf`` a bool, said in one line."""
    if isinstance(ngrams, bool) or not isinstance(ngrams, (int, np.integer)) or \
            not 1 <= ngrams <= MAX_NGRAMS:
        raise TableError(f"ngrams is the longest run of words a text feature is, 1 to "
                         f"{MAX_NGRAMS} (2: words and word pairs), got {ngrams!r}")
    if not isinstance(tfidf, (bool, np.bool_)):
        raise TableError(f"tfidf is True (counts times inverse document frequency, rows of "
                         f"length 1) or False (counts), got {tfidf!r}")


def terms_of(cell: str, ngrams: int = 1) -> list[str]:
    """A text cell's words and, for ``ngrams`` > 1, its runs of 2..ngrams consecutive words
    joined by a space (scikit-learn's word n-grams)."""
    words = words_of(cell)
    out = list(words)
    for n in range(2, ngrams + 1):
        out += [" ".join(words[i:i + n]) for i in range(len(words) - n + 1)]
    return out


def _word_counts(cells: list[str], values: list[str], ngrams: int = 1,
                 idf=None) -> np.ndarray:
    index = {v: k for k, v in enumerate(values)}
    out = np.zeros((len(cells), len(values)), np.float64)
    for r, c in enumerate(cells):
        for w in terms_of(c, ngrams):
            k = index.get(w)
            if k is not None:
                out[r, k] += 1
    if idf is not None:  # TfidfVectorizer: tf * idf, each row of length 1 (an empty row: 0)
        out *= np.asarray(idf, np.float64)
        norm = np.sqrt((out * out).sum(axis=1, keepdims=True))
        out /= np.where(norm > 0, norm, 1.0)
    return out


def words_column(file: str, name: str, cells: list[str], lines: list[int], fit=None,
                 text_as=(1, False)):
    """A column of sentences (``text=``) as :func:`encode_column` gives a column: each word of
    the training rows (``fit``; the :data:`MAX_WORDS` in most rows where there are more) a
    feature, its count in each cell (an empty cell: none). ``text_as``: ``(ngrams, tfidf)``
    of :func:`read_table`; the idf is ``ln((1 + n) / (1 + df)) + 1`` over the ``n`` training
    rows, ``df`` of them holding the word (scikit-learn's ``smooth_idf``)."""
    ngrams, tfidf = text_as
    rows = [set(terms_of(c, ngrams)) for k, c in enumerate(cells) if fit is None or fit[k]]
    seen: dict[str, int] = {}
    for r in rows:
        for w in r:
            seen[w] = seen.get(w, 0) + 1
    if not seen:
        raise TableError(f"{file}, column {name!r}: no words in it to read as text")
    vocab = sorted(sorted(seen, key=lambda w: (-seen[w], w))[:MAX_WORDS])
    what = "word" if ngrams == 1 else f"word and run of up to {ngrams} words"
    note = (f"column {name!r}: text, one feature per {what} ({len(vocab)}"
            + (f", the {MAX_WORDS} in most rows of {len(seen)}" if len(seen) > MAX_WORDS else "")
            + ("), each its count times its inverse document frequency, each row scaled to "
               "length 1 (TF-IDF)" if tfidf else "), each its count in the row"))
    spec = {"name": name, "kind": "words", "values": vocab,
            "features": [f"{name}:{w}" for w in vocab]}
    if ngrams > 1:
        spec["ngrams"] = ngrams
    idf = None
    if tfidf:  # of the training rows, kept for predict
        idf = [float(np.log((1 + len(rows)) / (1 + seen[w])) + 1) for w in vocab]
        spec["idf"] = idf
    return _word_counts(cells, vocab, ngrams, idf), spec, note


def _one_hot(cells: list[str], values: list[str]) -> np.ndarray:
    """Rows x len(values) of 0/1: which value each (stripped) cell is; none for a cell that
    is none of them."""
    index = {v: k for k, v in enumerate(values)}
    code = {c: index.get(c.strip(), -1) for c in set(cells)}
    ids = np.fromiter((code[c] for c in cells), np.int64, count=len(cells))
    col = np.zeros((len(cells), len(values)), np.float64)
    rows = np.flatnonzero(ids >= 0)
    col[rows, ids[rows]] = 1.0
    return col


def _date_column(file: str, name: str, cells: list[str], lines: list[int], fit=None):
    order, why = date_order(cells)
    col, names, fill, hour = date_features(file, name, cells, lines, order, is_missing,
                                              error=TableError)
    if fit is not None and any(map(is_missing, cells)):  # gaps: the training rows' means
        mine = [c for c, f in zip(cells, fit) if f]
        try:
            fill = date_features(file, name, mine, lines, order, is_missing, hour=hour,
                                 error=TableError)[2]
        except TableError:  # no known date among them: every row's
            pass
        else:
            col = date_features(file, name, cells, lines, order, is_missing, fill=fill,
                                hour=hour, error=TableError)[0]
    empty = sum(map(is_missing, cells))
    note = (f"column {name!r}: dates ({order_text(order)}), as {', '.join(names)}"
            + (f"; {why}" if why else "")
            + (f"; {empty} empty cell{'s' if empty > 1 else ''} filled with the column's "
               "means" if empty else ""))
    return col, {"name": name, "kind": "date", "order": order, "fill": fill, "hour": hour,
                 "features": names}, note


def apply_encoding(file: str, encoding: list, cells_of, lines: list[int]):
    """New rows' features as training encoded them: ``cells_of(name)`` gives a column's
    cells. Returns ``(x, notes)``: a missing number takes the training mean, a word training
    never saw sets none of its column's features (both said in the notes)."""
    parts, notes = [], []
    for spec in encoding:
        name, cells = spec["name"], cells_of(spec["name"])
        if spec["kind"] == "number":
            col = np.empty((len(cells), 1), np.float64)
            empty = 0
            for r, c in enumerate(cells):
                v = None if is_missing(c) else _number(c)
                if v is None and not is_missing(c):
                    raise TableError(f"{file}, line {lines[r]}, column {name!r}: {c!r} is not "
                                     "a number")
                empty += v is None
                col[r, 0] = spec["fill"] if v is None else v
            if empty:
                notes.append(f"column {name!r}: {empty} empty cell{'s' if empty > 1 else ''} "
                             f"filled with the training mean {spec['fill']:.6g}")
        elif spec["kind"] == "date":  # the training order, fill and hour feature
            order = spec["order"]
            if order == "ymd":  # trained on 2024-03-05 (a DataFrame's dates): new rows'
                # 05.03.2024 were "not a date"; their own order, as training finds one
                order, why = date_order([c for c in cells if not is_missing(c)])
                if order != "ymd":
                    notes.append(f"column {name!r}: dates read {order_text(order)} (training's "
                                 f"were year first)" + (f"; {why}" if why else ""))
            col = date_features(file, name, cells, lines, order, is_missing,
                                fill=spec["fill"], hour=spec["hour"], error=TableError)[0]
            empty = sum(is_missing(c) for c in cells)
            if empty:
                notes.append(f"column {name!r}: {empty} empty cell{'s' if empty > 1 else ''} "
                             "filled with the training means")
        elif spec["kind"] == "words":  # a bag of the training rows' words
            col = _word_counts(cells, spec["values"], spec.get("ngrams", 1), spec.get("idf"))
        else:
            values = spec["values"]
            if "" in values:  # a missing cell ('NA', '?') is training's empty one
                cells = ["" if is_missing(c) and c.strip() not in values else c for c in cells]
            col = _one_hot(cells, values)
            unseen = sorted({c.strip() for c in cells} - set(values))
            if unseen:
                count = sum(c.strip() not in values for c in cells)
                # 'TRUE' where training had 'true' (Excel's booleans, Python's 'True'): the
                # case is the difference, said so (one-hot compares cells as they are)
                lower = {v.lower(): v for v in values}
                cased = [f"{u!r} is {lower[u.lower()]!r} in training" for u in unseen
                         if u.lower() in lower]
                notes.append(f"column {name!r}: {count} row{'s' if count > 1 else ''} with a "
                             f"value training never saw ({', '.join(map(repr, unseen[:5]))}): "
                             f"none of its features set"
                             + (f" (the case differs: {', '.join(cased[:3])})" if cased else ""))
        parts.append(col)
    return np.hstack(parts), notes


def _read_npz(path: Path):
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    def pick(names):
        return next((arrays[n] for n in names if n in arrays), None)

    x, y = pick(("x", "X", "features")), pick(("y", "Y", "target", "labels"))
    if (x is None or y is None) and len(arrays) == 2:
        a, b = arrays.values()
        x, y = (a, b) if np.ndim(a) == 2 else (b, a)
    if x is None or y is None:
        raise TableError(f"{path.name}: arrays {sorted(arrays)}; name them x and y (or give "
                         "exactly two arrays, the features 2-D)")
    x, y = np.asarray(x), np.asarray(y)
    if x.ndim != 2 or x.dtype.kind not in "fiub":
        raise TableError(f"{path.name}: the features must be a 2-D array of numbers, got "
                         f"{x.dtype} of shape {x.shape}")
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1 or len(y) != len(x):
        raise TableError(f"{path.name}: the target must have one value per row ({len(x)}), "
                         f"got shape {y.shape}")
    bad = np.argwhere(~np.isfinite(x.astype(np.float64)))
    if len(bad):
        r, c = bad[0]
        raise TableError(f"{path.name}: x[{r}, {c}] is {x[r, c]} (features must be finite)")
    labels = y.astype(str).tolist() if y.dtype.kind in "iubUS" else y.astype(np.float64)
    return x.astype(np.float64), labels, [f"x{i}" for i in range(x.shape[1])], "y"


def _classes_of(labels):
    """``(ids, classes, None)`` where the target's cells are classes (words, or a few whole
    numbers), else ``(None, None, values)``: a regression's numbers."""
    read = {v: _number(v) for v in set(labels)}  # each distinct cell once: large files
    numbers = [read[v] for v in labels]
    values = np.array(numbers, np.float64) if all(v is not None for v in numbers) else None
    whole = values is not None and bool(np.all(values == np.round(values)))
    keys = [int(v) for v in values] if whole else labels  # "1" and "1.0": one class
    distinct = sorted(set(keys))
    if values is None or (whole and len(distinct) <= MAX_CLASSES
                          and len(distinct) < len(labels) / 2):
        index = {v: k for k, v in enumerate(distinct)}
        return (np.array([index[v] for v in keys], np.int64), [str(v) for v in distinct],
                None)
    return None, None, values


def class_ids(labels) -> np.ndarray | None:
    """Each row's class index where a table's target is classes (as :func:`read_table`
    decides), else None (a regression, or an npz's float targets)."""
    if labels is None or isinstance(labels, np.ndarray):
        return None
    return _classes_of(labels)[0]


def _standardised(x: np.ndarray, labels, columns, target, fit=None) -> Table:
    """The features scaled, and a regression's targets, by the means and deviations of the
    ``fit`` rows (a mask: the training rows; None: all)."""
    rows = x if fit is None else x[fit]
    mean, std = rows.mean(0), rows.std(0)
    std = np.where(std > 0, std, 1.0)
    xs = ((x - mean) / std).astype(np.float32)
    if isinstance(labels, np.ndarray):  # float targets of an npz: a regression
        values, classes = labels, None
    else:
        ids, distinct, values = _classes_of(labels)
        if ids is not None:
            return Table(xs, ids, list(columns), target, distinct, mean, std)
        classes = None
    fitted = values if fit is None else values[fit]
    ym, ysd = float(fitted.mean()), float(fitted.std()) or 1.0
    y = ((values - ym) / ysd).astype(np.float32)[:, None]
    return Table(xs, y, list(columns), target, classes, mean, std, ym, ysd)
