"""A checkpoint's SentencePiece ``tokenizer.model`` (what the ERNIE-4.5 folders ship) encodes
and decodes as transformers' tokenizer of the same folder, and as the sentencepiece processor
on plain text. The test trains a tiny SentencePiece model on a few lines of text."""

from __future__ import annotations

import numpy as np
import pytest

spm = pytest.importorskip("sentencepiece")
transformers = pytest.importorskip("transformers")

from skiff.kernels.train.models.tokenizer import (  # noqa: E402
    HFTokenizer,
    SentencePieceTokenizer,
    load_tokenizer,
)

from .ernie_reference import write_sentencepiece  # noqa: E402

TEXTS = ["Hello world, hello skiff!", "  two  spaces", "你好 world\nnext line",
         "<think>x</think> the answer", "Q<|end_of_sentence|>A: yes<|end_of_sentence|> fin",
         "é ü 🙂 ok", "<s>start</s>", ""]


@pytest.mark.parametrize("model_type,legacy", [("bpe", True), ("bpe", False),
                                               ("unigram", True)])
def test_sentencepiece_encodes_and_decodes_as_transformers(tmp_path, model_type, legacy):
    write_sentencepiece(tmp_path, model_type=model_type, legacy=legacy)
    ours = load_tokenizer(tmp_path)
    assert isinstance(ours, SentencePieceTokenizer)
    ref = transformers.AutoTokenizer.from_pretrained(tmp_path)
    sp = spm.SentencePieceProcessor(model_file=str(tmp_path / "tokenizer.model"))
    for text in TEXTS:
        want = ref.encode(text, add_special_tokens=False)
        got = ours.encode(text)
        assert got.tolist() == want, text
        assert ours.decode(got) == ref.decode(want), text
        ids, owner = ours.encode_with_offsets(text)
        assert ids.tolist() == want
        assert (np.diff(owner[owner >= 0]) >= 0).all()  # tokens own characters in order
    for text in ("Hello world, hello skiff!", "你好 world\nnext", "é ü 🙂"):  # no added tokens
        assert ours.encode(text).tolist() == sp.encode(text)
        assert ours.decode(sp.encode(text)) == sp.decode(sp.encode(text))
    assert ours.token_id("<think>") == sp.piece_to_id("<think>")
    assert ours.vocab_size == len(ref)


def test_chat_template_tokens_equal_transformers(tmp_path):
    write_sentencepiece(tmp_path)
    ours, ref = load_tokenizer(tmp_path), transformers.AutoTokenizer.from_pretrained(tmp_path)
    messages = [{"role": "user", "content": "What is two plus two?"},
                {"role": "assistant", "content": "Four."},
                {"role": "user", "content": "你好"}]
    want = ref.apply_chat_template(messages, add_generation_prompt=True, tokenize=True,
                                   return_dict=False)
    got = ours.apply_chat_template(messages, add_generation_prompt=True, tokenize=True,
                                   return_dict=False)
    assert got == list(want)


def test_tokenizer_json_wins_and_bad_model_is_one_error(tmp_path):
    write_sentencepiece(tmp_path)
    transformers.AutoTokenizer.from_pretrained(tmp_path).save_pretrained(tmp_path / "fast")
    both = load_tokenizer(tmp_path / "fast")  # tokenizer.json beside tokenizer.model
    assert isinstance(both, HFTokenizer)
    sp_tok = load_tokenizer(tmp_path)
    assert both.encode(TEXTS[4]).tolist() == sp_tok.encode(TEXTS[4]).tolist()
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "tokenizer.model").write_bytes(b"not a model")
    with pytest.raises((RuntimeError, ValueError, OSError)):
        load_tokenizer(tmp_path / "bad")
    assert load_tokenizer(tmp_path / "nothing") is None
