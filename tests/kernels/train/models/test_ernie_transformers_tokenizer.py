"""``model.tokenizer`` called the rest of the ways a transformers user calls one (round 26):
text pairs (``tok(a, b)``, ``text_pair=``, lists of firsts and seconds, a list of (a, b)
pairs, with ``token_type_ids``, each truncation strategy), ``return_tensors="pt"``,
``return_offsets_mapping``, ``return_special_tokens_mask``, ``return_length``, ``pad`` (a
data collator's call), ``tokenize``, ``convert_ids_to_tokens``, ``convert_tokens_to_string``,
``get_vocab``; each equal to transformers' ``AutoTokenizer`` of the same folder (a
SentencePiece ``tokenizer.model`` as ERNIE ships, one with ``add_bos_token`` /
``add_eos_token``, a byte-level ``tokenizer.json`` with a ``<s>`` post-processor, a
Metaspace one without a post-processor). Before,
pairs and these options were refused, and the token methods were missing. Then
``model.generate(**tok(texts, padding=True, return_tensors="pt").to(model.device))``, the
transformers idiom, gives transformers' tokens."""

from __future__ import annotations

import json

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained, load_tokenizer

from .ernie_reference import (
    LINES,
    add_tokenizer,
    make_sentencepiece_checkpoint,
    torch,
    transformers,
)
from .test_ernie_followup_tokenizer import _byte_level_folder, _sentencepiece_folder

A, B = "Hello world, hello skiff!", "What is two plus two?"
ODD = ["  two  spaces", "a\tb\nc", "你好，世界。 😀 👍🏽", "x <s> y</s>",
       "<s>Hello</s> <|im_start|>user\nhi<|end_of_sentence|>", ""]
ALL = dict(return_token_type_ids=True, return_special_tokens_mask=True,
           return_offsets_mapping=True, return_length=True)

CALLS = {
    "pair": lambda t: t(A, B, return_token_type_ids=True),
    "text_pair=": lambda t: t(A, text_pair=B, **ALL),
    "pair lists": lambda t: t([A, B, ODD[2]], [B, ODD[0], A], padding=True, **ALL),
    "list of pairs": lambda t: t([(A, B), (B, ODD[3])], return_token_type_ids=True),
    "pair longest_first": lambda t: t([A, B], [B + " " + A, ODD[2]], truncation=True,
                                      max_length=9, **ALL),
    "pair only_second": lambda t: t(A, B + " " + A, truncation="only_second",
                                    max_length=20, **ALL),
    "pair only_first": lambda t: t(A + " " + B, B, truncation="only_first", max_length=18),
    "pt": lambda t: t([A, *ODD], padding=True, return_tensors="pt", **ALL),
    "np left": lambda t: t(ODD, padding="max_length", truncation=True, max_length=12,
                           padding_side="left", return_tensors="np", **ALL),
    "offsets": lambda t: t(ODD, return_offsets_mapping=True),
    "single all": lambda t: t(ODD[2], **ALL),
    "pad collator": lambda t: t.pad([t(A), t(ODD[2]), t(B)], return_tensors="pt"),
    "pad dict left": lambda t: t.pad(t([A, B]), padding_side="left", pad_to_multiple_of=8),
    "tokenize": lambda t: [t.tokenize(s) for s in [A, *ODD]],
    "tokenize pair": lambda t: t.tokenize(A, B, add_special_tokens=True),
    "convert_ids_to_tokens": lambda t: [t.convert_ids_to_tokens(t(s)["input_ids"])
                                        for s in [A, *ODD]],
    "convert_ids_to_tokens skip": lambda t: t.convert_ids_to_tokens(
        t(ODD[4])["input_ids"], skip_special_tokens=True),
    "one id": lambda t: t.convert_ids_to_tokens(int(t(A)["input_ids"][-1])),
    "convert_tokens_to_string": lambda t: [t.convert_tokens_to_string(t.tokenize(s))
                                           for s in [A, *ODD[:3]]],
    "get_vocab": lambda t: t.get_vocab(),
    "model_input_names": lambda t: t.model_input_names,
    "chat pt": lambda t: t.apply_chat_template([{"role": "user", "content": A}],
                                               add_generation_prompt=True, tokenize=True,
                                               return_dict=True, return_tensors="pt"),
}


def _plain(value):
    """Comparable form: tensors as ("pt", list), arrays as ("np", list), tuples as lists."""
    if hasattr(value, "keys"):  # transformers' BatchEncoding is no dict
        return {k: _plain(value[k]) for k in value.keys()}
    if isinstance(value, torch.Tensor):
        assert value.dtype == torch.long
        return "pt", value.tolist()
    if isinstance(value, np.ndarray):
        return "np", value.tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


@pytest.fixture(scope="module", params=["sentencepiece", "sentencepiece-bos-eos",
                                        "byte-level", "metaspace-no-template"])
def pair(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    if request.param == "byte-level":
        _byte_level_folder(folder)
    elif request.param == "metaspace-no-template":  # no post-processor: pairs typed 0/1
        add_tokenizer(folder, "\n".join(LINES + ODD), 300)
        (folder / "tokenizer_config.json").write_text(json.dumps({
            "tokenizer_class": "PreTrainedTokenizerFast", "pad_token": "<pad>",
            "eos_token": "</s>", "bos_token": "<s>", "unk_token": "<unk>"}))
    elif request.param == "sentencepiece":
        _sentencepiece_folder(folder)
    else:
        _sentencepiece_folder(folder, add_bos_token=True, add_eos_token=True)
    return transformers.AutoTokenizer.from_pretrained(folder), load_tokenizer(folder)


@pytest.mark.parametrize("call", list(CALLS))
def test_call_equals_transformers(pair, call):
    ref, ours = pair
    try:
        want = _plain(CALLS[call](ref))
    except ValueError:  # a folder without what the call needs (a chat template): both refuse
        with pytest.raises(ValueError):
            CALLS[call](ours)
        return
    assert _plain(CALLS[call](ours)) == want


@pytest.mark.parametrize("strategy", ["only_first", "only_second"])
@pytest.mark.parametrize("max_length", [4, 7, 10])
def test_truncating_a_text_too_short_is_one_error(pair, strategy, max_length):
    """Where transformers raises (the tokenizers library's "Sequence to truncate too
    short"), one error naming the way out; elsewhere transformers' ids."""
    ref, ours = pair
    try:
        want = ref(A, B, truncation=strategy, max_length=max_length)
    except Exception as exc:
        assert "too short" in str(exc)
        with pytest.raises(ValueError, match=f"truncation='{strategy}'.*longest_first"):
            ours(A, B, truncation=strategy, max_length=max_length)
    else:
        assert _plain(ours(A, B, truncation=strategy, max_length=max_length)) == _plain(want)


def test_generate_from_torch_encoding(tmp_path):
    """The transformers idiom end to end on skiff's own tokenizer: ``inputs =
    tok(texts, padding=True, return_tensors="pt").to(model.device)``;
    ``model.generate(**inputs)``; ``tok.batch_decode(out, skip_special_tokens=True)``."""
    ref, tok = make_sentencepiece_checkpoint(tmp_path)
    model = from_pretrained(tmp_path)
    texts = [A, B, ODD[2]]
    mine = model.tokenizer(texts, padding=True, padding_side="left",
                           return_tensors="pt").to(model.device)
    theirs = tok(texts, padding=True, padding_side="left", return_tensors="pt")
    assert isinstance(mine["input_ids"], torch.Tensor)
    out = model.generate(**mine, max_new_tokens=8, do_sample=False)
    with torch.no_grad():
        want = ref.generate(**theirs, max_new_tokens=8, do_sample=False)
    np.testing.assert_array_equal(out, want.numpy())
    assert model.tokenizer.batch_decode(out, skip_special_tokens=True) == \
        tok.batch_decode(want, skip_special_tokens=True)
