"""What a tokenizer call returns, built as transformers' (fast) tokenizers build it.

A call encodes each text (or text pair) into a *row*: a dict of equal-length lists,
``input_ids``, ``token_type_ids`` (0 for the first text and its special tokens, 1 for the
second), ``special_tokens_mask`` (1 for the tokens ``add_special_tokens`` put in, and for
padding) and ``offset_mapping`` ((start, end) characters of each token in its own text;
(0, 0) for special tokens and padding). This module truncates pairs
(:func:`pair_lengths`, the ``tokenizers`` library's rule), pads rows
(:func:`pad_rows`) and lays them out as a :class:`BatchEncoding` of lists, numpy arrays or
torch tensors (:func:`assemble`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["BatchEncoding", "pair_lengths", "pad_rows", "assemble", "rows_from_features"]

KEYS = ("input_ids", "token_type_ids", "attention_mask", "special_tokens_mask",
        "offset_mapping", "length")


class BatchEncoding(dict):
    """What calling a tokenizer returns, as transformers' ``BatchEncoding``: a dict
    (``input_ids``, ``attention_mask``, ...) whose keys are also attributes, so that
    ``model.generate(**enc)`` and ``enc.input_ids`` both work; ``enc.to(device)`` moves
    torch tensors (numpy arrays and lists stay as they are: skiff's models take them)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def to(self, device):
        for key, value in self.items():
            if hasattr(value, "to") and not isinstance(value, np.ndarray):
                self[key] = value.to(str(device))
        return self


def pair_lengths(n1: int, n2: int, budget: int, strategy: str) -> tuple[int, int]:
    """How many tokens of each text of a pair remain when the two (without their special
    tokens) must fit ``budget``: ``longest_first`` as the ``tokenizers`` library cuts (the
    longer text first, then both halves), ``only_first`` / ``only_second`` one text."""
    if n1 + n2 <= budget:
        return n1, n2
    if budget <= 0:  # the library empties both texts then, whatever the strategy
        return 0, 0
    if strategy in ("only_first", "only_second"):
        cut = n1 + n2 - budget
        size = n1 if strategy == "only_first" else n2
        if size <= cut:  # the tokenizers library refuses this too
            raise ValueError(f"truncation={strategy!r} to this max_length would remove "
                             f"{cut} tokens from a text of {size}: use truncation=True "
                             "(longest_first) or a larger max_length")
        return (n1 - cut, n2) if strategy == "only_first" else (n1, n2 - cut)
    swap = n1 > n2
    if swap:
        n1, n2 = n2, n1
    n2 = n1 if n1 > budget else max(n1, budget - n1)
    if n1 + n2 > budget:
        n1 = budget // 2
        n2 = n1 + budget % 2
    return (n2, n1) if swap else (n1, n2)


def pad_rows(rows: list[dict], width: int, side: str, pad_id: int) -> None:
    """Pad each row to ``width`` on ``side``, in place: ``pad_id``, mask 0, type 0, special
    1, offsets (0, 0) (transformers' padding of each key)."""
    fills = {"input_ids": pad_id, "attention_mask": 0, "token_type_ids": 0,
             "special_tokens_mask": 1, "offset_mapping": (0, 0)}
    for row in rows:
        n = max(width - len(row["input_ids"]), 0)
        if not n:
            continue
        for key, fill in fills.items():
            if key in row:
                row[key] = [fill] * n + row[key] if side == "left" else row[key] + [fill] * n


def _tensor(rows: list, kind: str):
    if kind == "np":
        return np.asarray(rows, dtype=np.int64)
    try:
        import torch
    except ImportError:
        raise ImportError("return_tensors='pt' needs torch; skiff's models take numpy: use "
                          "return_tensors='np'") from None
    return torch.tensor(rows, dtype=torch.long)


def assemble(rows: list[dict], single: bool, return_tensors, keys) -> BatchEncoding:
    """The rows as a :class:`BatchEncoding` of ``keys`` (those of :data:`KEYS` asked for):
    lists (one row's lists for a single text: transformers' unbatched form), or (B, T)
    arrays / tensors (``offset_mapping`` (B, T, 2)) with ``return_tensors`` "np" / "pt"."""
    if return_tensors not in (None, "np", "pt"):
        raise ValueError(f"return_tensors={return_tensors!r}: 'np' (numpy, what skiff's "
                         "models take), 'pt' (torch tensors; skiff's models take them too) "
                         "or None (lists)")
    for row in rows:
        row["length"] = len(row["input_ids"])
    out = BatchEncoding()
    if return_tensors is not None and len({len(r["input_ids"]) for r in rows}) > 1:
        raise ValueError("the texts give rows of different lengths, which make no array: "
                         "pass padding=True (and truncation=True)")
    for key in KEYS:
        if key not in keys:
            continue
        values = [r[key] for r in rows]
        if key == "offset_mapping":
            values = [[tuple(o) for o in v] for v in values]
        if return_tensors is not None:
            width = len(rows[0]["input_ids"]) if rows else 0
            shape = (len(rows), width, 2) if key == "offset_mapping" else (len(rows), width)
            if key == "length":
                shape = (len(rows),)
            out[key] = _tensor(np.asarray(values, dtype=np.int64).reshape(shape).tolist(),
                               return_tensors)
        elif single:
            out[key] = [values[0]] if key == "length" else values[0]
        else:
            out[key] = values
    return out


def rows_from_features(features) -> tuple[list[dict], bool]:
    """``pad``'s input as rows: a dict of per-row lists (a :class:`BatchEncoding`) or a list
    of per-example dicts (a data collator's); one unbatched example counts as one row."""
    if isinstance(features, dict):
        ids = features.get("input_ids")
        if ids is None:
            raise ValueError("pad needs input_ids")
        ids = np.asarray(ids).tolist() if hasattr(ids, "tolist") else ids
        single = bool(ids) and isinstance(ids[0], (int, np.integer))
        names = list(features)
        columns = {k: (np.asarray(features[k]).tolist() if hasattr(features[k], "tolist")
                       else features[k]) for k in names}
        if single:
            columns = {k: [v] for k, v in columns.items()}
        rows = [{k: list(columns[k][b]) for k in names if k != "length"}
                for b in range(len(columns["input_ids"]))]
        return rows, single
    rows = []
    for f in features:
        if not isinstance(f, dict) or "input_ids" not in f:
            raise ValueError("pad takes a dict of lists or a list of dicts with input_ids")
        rows.append({k: (np.asarray(v).tolist() if hasattr(v, "tolist") else list(v))
                     for k, v in f.items() if k != "length"})
    return rows, False


def overflow_windows(full: dict, bare: list, max_length: int, stride: int) -> list[dict]:
    """transformers' ``return_overflowing_tokens=True`` (its fast tokenizers'): the text's
    tokens (``bare``: its ids without special tokens; ``full``: the row with them) cut in
    windows of ``max_length`` minus the special tokens, each next window starting ``stride``
    tokens before the last one ended, each with the special tokens around it."""
    n, extra = len(bare), len(full["input_ids"]) - len(bare)
    pre = next((k for k in range(extra + 1) if full["input_ids"][k:k + n] == bare), None)
    if pre is None:  # the special tokens are not around the text: one row, as encoded
        return [full]
    width = int(max_length) - extra
    if width <= 0:
        raise ValueError(f"max_length={max_length} leaves no room for the text beside its "
                         f"{extra} special tokens")
    if not 0 <= int(stride) < width:
        raise ValueError(f"stride={stride} must be below the window's {width} tokens "
                         f"(max_length={max_length} minus {extra} special tokens): each "
                         "window must move on")
    rows, start = [], 0
    while True:
        end = min(start + width, n)
        keep = list(range(pre)) + list(range(pre + start, pre + end)) + \
            list(range(pre + n, pre + n + extra - pre))
        rows.append({k: [v[i] for i in keep] for k, v in full.items()})
        if end >= n:
            return rows
        start += width - int(stride)
