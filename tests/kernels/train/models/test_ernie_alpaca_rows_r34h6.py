"""Alpaca rows (round 34, h6; a ``.jsonl`` of them was "row 1 has keys instruction, input,
output", and a ``.csv`` with those columns took the input column alone as the prompt):
``{"instruction", "input", "output"}`` (``system``, ``history`` optional) as
LLaMA-Factory's ``formatting: alpaca`` reads them: the user's turn is the instruction and
the input joined by a newline, earlier ``history`` pairs before it. The ids and labels
equal transformers' ``apply_chat_template(..., return_assistant_tokens_mask=True)`` on that
conversation, from a ``.jsonl`` and from a ``.csv`` with the same columns; held-out rows
too (the loss equal torch's on transformers' model)."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained
from skiff.kernels.train.models.chat import ChatDataset
from skiff.kernels.train.models.evaluate import HeldOut, chat_loss, read_heldout
from skiff.kernels.train.models.hf_checkpoint import read_training_rows, text_dataset

from .ernie_reference import make_sentencepiece_checkpoint, torch, transformers
from .test_ernie_chat_formats_r33h9 import TEMPLATE

ROWS = [{"instruction": "What is two plus two?", "input": "", "output": "Four."},
        {"instruction": "Translate to English.", "input": "你好，世界。",
         "output": "Hello world", "system": "Answer briefly."},
        {"instruction": "And this one?", "input": "模型", "output": "model",
         "history": [["Translate to English.\n你好", "Hello"]]}]


def _conversation(row):
    """LLaMA-Factory's AlpacaDatasetConverter, written out."""
    msgs = [{"role": "system", "content": row["system"]}] if row.get("system") else []
    for q, a in row.get("history", []):
        msgs += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
    query = "\n".join(x for x in (row["instruction"], row.get("input")) if x)
    return msgs + [{"role": "user", "content": query},
                   {"role": "assistant", "content": row["output"]}]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    folder = tmp_path_factory.mktemp("alpaca") / "base"
    make_sentencepiece_checkpoint(folder, chat_template=TEMPLATE)
    return folder, transformers.AutoTokenizer.from_pretrained(folder), from_pretrained(folder)


def _want(htok, messages):
    enc = htok.apply_chat_template(messages, tokenize=True, return_dict=True,
                                   return_assistant_tokens_mask=True)
    ids = np.array(enc["input_ids"])
    return ids, np.where(np.array(enc["assistant_masks"]) == 1, ids, -100)


def _check(ds, wants):
    assert len(ds) == len(wants)
    for (x, y), (ids, labels) in zip(ds.items, wants):
        np.testing.assert_array_equal(x, ids[:-1])
        np.testing.assert_array_equal(y, labels[1:])


def test_alpaca_jsonl_as_transformers(setup, tmp_path):
    _, htok, model = setup
    wants = [_want(htok, _conversation(r)) for r in ROWS]
    _check(ChatDataset(ROWS, model.tokenizer, 128), wants)
    path = tmp_path / "alpaca.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in ROWS))
    assert read_training_rows(path)[0] == "chat"
    _check(text_dataset(model, str(path), 128), wants)
    # a .json list, and rows without "input" (Stanford Alpaca leaves it empty, others out)
    bare = [{k: v for k, v in r.items() if k != "input"} for r in ROWS]
    path = tmp_path / "alpaca.json"
    path.write_text(json.dumps(bare))
    _check(text_dataset(model, str(path), 128),
           [_want(htok, _conversation(r)) for r in bare])


def test_alpaca_csv_joins_instruction_and_input(setup, tmp_path):
    _, htok, model = setup
    rows = ROWS[:2]
    path = tmp_path / "alpaca.csv"
    with open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["instruction", "input", "output", "system"])
        for r in rows:
            w.writerow([r["instruction"], r["input"], r["output"], r.get("system", "")])
    _check(text_dataset(model, str(path), 128), [_want(htok, _conversation(r)) for r in rows])


def test_alpaca_heldout_loss_as_torch(setup, tmp_path):
    folder, htok, model = setup
    ref = transformers.AutoModelForCausalLM.from_pretrained(folder).eval()
    path = tmp_path / "held.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in ROWS[1:]))
    got = chat_loss(model, HeldOut(read_heldout(path), model.tokenizer).chats)
    total = count = 0.0
    for r in ROWS[1:]:
        ids, labels = _want(htok, _conversation(r))
        with torch.no_grad():
            logits = ref(torch.tensor(ids[None])).logits[0, :-1]
        total += float(torch.nn.functional.cross_entropy(
            logits, torch.tensor(labels[1:]), ignore_index=-100, reduction="sum"))
        count += int((labels[1:] != -100).sum())
    loss = got["loss"] if isinstance(got, dict) else got
    np.testing.assert_allclose(loss, total / count, rtol=1e-4)


def test_alpaca_mistakes_are_one_error(setup):
    _, _, model = setup
    with pytest.raises(ValueError, match="row 1: 'history' is a list"):
        ChatDataset([dict(ROWS[0], history=["x"])], model.tokenizer, 64)
    with pytest.raises(ValueError, match="row 1: the instruction and input are both empty"):
        ChatDataset([{"instruction": "", "output": "y"}], model.tokenizer, 64)
