"""``tok.encode(a, b)`` and ``tok.encode(text, add_special_tokens=..., truncation=...,
max_length=..., return_tensors=...)`` as transformers' ``encode`` (round 27): before, skiff's
``encode`` took one text only ("takes 2 positional arguments but 3 were given"). Compared
with ``AutoTokenizer`` of the same folders (SentencePiece with and without bos/eos, a
byte-level ``tokenizer.json`` with a ``<s>`` post-processor). ``encode(text)`` alone stays
skiff's (an int64 array without special tokens; skiff's data code reads it)."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.models import load_tokenizer

from .ernie_reference import torch, transformers
from .test_ernie_followup_tokenizer import _byte_level_folder, _sentencepiece_folder

A, B = "Hello world, hello skiff!", "你好，世界。 What is two plus two?"

CALLS = {
    "pair": lambda t: t.encode(A, B),
    "text_pair=": lambda t: t.encode(A, text_pair=B),
    "pair no specials": lambda t: t.encode(A, B, add_special_tokens=False),
    "one with specials": lambda t: t.encode(A, add_special_tokens=True),
    "truncated pair": lambda t: t.encode(A, B, truncation=True, max_length=9),
    "only_second": lambda t: t.encode(A, B, truncation="only_second", max_length=24),
    "padded": lambda t: t.encode(A, padding="max_length", max_length=30),
    "pt": lambda t: t.encode(A, B, return_tensors="pt").tolist(),
}


@pytest.fixture(scope="module", params=["sentencepiece", "sentencepiece-bos-eos",
                                        "byte-level"])
def pair(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    if request.param == "byte-level":
        _byte_level_folder(folder)
    elif request.param == "sentencepiece":
        _sentencepiece_folder(folder)
    else:
        _sentencepiece_folder(folder, add_bos_token=True, add_eos_token=True)
    return transformers.AutoTokenizer.from_pretrained(folder), load_tokenizer(folder)


@pytest.mark.parametrize("call", list(CALLS))
def test_encode_equals_transformers(pair, call):
    ref, ours = pair
    want = CALLS[call](ref)
    got = CALLS[call](ours)
    assert got == want
    assert isinstance(got, list)


def test_encode_one_text_stays_skiffs(pair):
    ref, ours = pair
    ids = ours.encode(A)
    assert isinstance(ids, np.ndarray) and ids.dtype == np.int64
    assert ids.tolist() == ref.encode(A, add_special_tokens=False)
    assert isinstance(ours.encode(A, B, return_tensors="pt"), torch.Tensor)
    with pytest.raises(TypeError, match="call the tokenizer itself"):
        ours.encode([A, B], B)
