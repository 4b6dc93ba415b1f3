"""A JSON-lines table (``.jsonl``, ``.ndjson``: one JSON object a line, pandas'
``to_json(orient="records", lines=True)``, a database's or a web service's export) read as a
CSV is: its rows as ``(line number, cells)``, the header first (the keys, in the order they
first appear), each cell the text a CSV would hold (round 47 h9: ``mlp`` refused such a file,
naming pandas' reader). A key a record lacks and ``null`` are empty cells (filled as a CSV's
gaps are), ``true``/``false`` two categories, a number its JSON text, a list or an object its
JSON text (a word, or free text)."""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["JSON_LINES", "json_lines_rows"]

JSON_LINES = (".jsonl", ".ndjson")


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, (int, float)):
        return json.dumps(value)  # 0.1 as 0.1, NaN as NaN (a gap)
    return json.dumps(value, ensure_ascii=False)


def json_lines_rows(path, limit: int | None = None, error=ValueError) -> list:
    """``(line, cells)`` rows of a JSON-lines file: the keys first (line 0), then each
    record's cells in the keys' order (``limit``: the first rows, the header counted). A
    line that is not a JSON object is refused naming it (``error``)."""
    path = Path(path)
    from .data import decode_text_file

    text, _ = decode_text_file(path)
    keys: dict[str, None] = {}
    records = []
    for k, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise error(f"{path.name}, line {k}: not JSON ({exc.msg}, column {exc.colno}); "
                        "a JSON-lines table holds one object a line") from None
        if not isinstance(rec, dict):
            raise error(f"{path.name}, line {k}: a JSON {type(rec).__name__}, not an object "
                        "({\"column\": value, ...}); a JSON-lines table holds one object a "
                        "line")
        for key in rec:
            keys.setdefault(str(key), None)
        records.append((k, rec))  # every line read, ``limit`` or not: a key may come late
    if not records:
        raise error(f"{path.name}: no rows")
    names = list(keys)
    rows = [(0, names)] + [(k, [_cell(rec.get(n)) for n in names]) for k, rec in records]
    return rows if limit is None else rows[:limit]
