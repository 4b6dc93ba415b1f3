"""``tok(texts, truncation=True, max_length=N, return_overflowing_tokens=True, stride=S)``
(round 40, h9; was "does not take return_overflowing_tokens, stride"): every window of
each text (the text's tokens in windows of N minus the special tokens, each next one
starting S tokens back, the special tokens around each), ``overflow_to_sample_mapping``,
padded / as tensors / with offsets: equal to transformers' tokenizer of the same folder,
for a ``tokenizer.json`` with a post-processor that adds ``<s> ... </s>`` and a
SentencePiece ``tokenizer.model`` that adds a bos token."""

from __future__ import annotations

import json

import pytest

from skiff.kernels.train.models import load_tokenizer

from .ernie_reference import LINES, add_tokenizer, transformers, write_sentencepiece

TEXTS = ["Hello world, hello skiff!", "What is two plus two? Four. 你好，世界。", "A"]


def _json_folder(folder):
    from tokenizers import Tokenizer, processors

    add_tokenizer(folder, " ".join(LINES), 120)
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> $B:1 </s>:1",
        special_tokens=[("<s>", tok.token_to_id("<s>")), ("</s>", tok.token_to_id("</s>"))])
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>", "eos_token": "</s>",
        "unk_token": "<unk>", "pad_token": "<pad>"}))


def _sentencepiece_folder(folder):
    write_sentencepiece(folder)
    cfg = json.loads((folder / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(json.dumps(dict(cfg, add_bos_token=True)))


@pytest.fixture(scope="module", params=["tokenizer.json", "sentencepiece"])
def pair(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("overflow")
    (_json_folder if request.param == "tokenizer.json" else _sentencepiece_folder)(folder)
    return transformers.AutoTokenizer.from_pretrained(folder), load_tokenizer(folder)


def _plain(enc):
    return {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in enc.items()}


@pytest.mark.parametrize("kw", [
    dict(truncation=True, max_length=7, return_overflowing_tokens=True, stride=2),
    dict(truncation=True, max_length=5, return_overflowing_tokens=True),
    dict(truncation=True, max_length=8, return_overflowing_tokens=True, stride=3, padding=True,
         return_tensors="pt", return_offsets_mapping=True, return_special_tokens_mask=True),
    dict(truncation=True, max_length=6, return_overflowing_tokens=True, stride=1,
         add_special_tokens=False, return_length=True),
    dict(return_overflowing_tokens=True),  # no truncation: one row each, still batched
])
def test_overflowing_windows_equal_transformers(pair, kw):
    ref, tok = pair
    for text in (TEXTS, TEXTS[1]):
        want, got = _plain(ref(text, **kw)), _plain(tok(text, **kw))
        assert got == want
    if kw.get("max_length") == 7:
        assert len(want["input_ids"]) > 3  # a text gave several windows


def test_overflow_refusals(pair):
    ref, tok = pair
    assert tok.model_max_length == ref.model_max_length  # no limit: int(1e30), as transformers
    with pytest.raises(ValueError, match="stride"):  # transformers: a Rust panic
        tok(TEXTS, truncation=True, max_length=5, return_overflowing_tokens=True, stride=5)
    with pytest.raises(ValueError, match="pairs"):
        tok(TEXTS[:1], TEXTS[1:2], truncation=True, max_length=5,
            return_overflowing_tokens=True)
