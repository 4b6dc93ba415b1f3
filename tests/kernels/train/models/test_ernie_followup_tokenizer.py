"""``model.tokenizer`` called as a transformers user calls a tokenizer (follow-up of the round
25 probe): ``tok(texts, padding=..., truncation=..., max_length=..., return_tensors="np")``
on either padding side, ``decode``/``batch_decode`` with ``skip_special_tokens``, the
special tokens' ids, ``apply_chat_template`` with ``tokenize``/``return_tensors``, each equal
to transformers' ``AutoTokenizer`` of the same folder (a SentencePiece ``tokenizer.model``
as ERNIE ships, with and without ``add_bos_token``/``add_eos_token``, a unigram one that
cleans up tokenization spaces; a byte-level
``tokenizer.json`` whose post-processor adds ``<s>``); and ``model.generate(**tok(texts,
padding=True, return_tensors="np"))`` with skiff's own tokenizer gives transformers' tokens.
Before, the tokenizer had ``encode``/``decode`` only."""

from __future__ import annotations

import json

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained, load_tokenizer

from .ernie_reference import (
    LINES,
    make_sentencepiece_checkpoint,
    torch,
    transformers,
    write_sentencepiece,
)

TEXTS = ["Hello world", "你好，世界。模型回答问题。", "emoji 😀🚀 and 👍🏽 mixed",
         "  two leading spaces", "tabs\tand\nnew lines  ", "The quick brown fox jumps over.",
         "<s>Hello</s> <|im_start|>user\nhi<|end_of_sentence|>", "a , b . c ? don 't", ""]

CALLS = [
    {},
    {"padding": True, "return_tensors": "np"},
    {"padding": "longest", "padding_side": "left", "return_tensors": "np"},
    {"padding": True, "truncation": True, "max_length": 6, "return_tensors": "np"},
    {"padding": "max_length", "truncation": True, "max_length": 24, "padding_side": "left",
     "return_tensors": "np"},
    {"padding": True, "pad_to_multiple_of": 8, "return_tensors": "np"},
    {"add_special_tokens": False, "padding": True, "return_tensors": "np"},
    {"max_length": 4},  # a max_length alone truncates (transformers' rule)
    {"padding": True, "max_length": 4},  # ... but not with padding=True
]


def _byte_level_folder(folder):
    """A byte-level BPE ``tokenizer.json`` (every character encodable) whose post-processor
    puts ``<s>`` first, with special and plain added tokens, and a config that pads left and
    cleans up tokenization spaces."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=330, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=["<pad>", "<s>", "</s>", "<unk>", "<|im_start|>",
                        "<|end_of_sentence|>"])
    tok.train_from_iterator(["\n".join(LINES + TEXTS)], trainer)
    tok.add_tokens(["<think>", "</think>"])
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[
        ("<s>", tok.token_to_id("<s>"))])
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>", "eos_token": "</s>",
        "unk_token": "<unk>", "pad_token": "<pad>", "sep_token": "<|end_of_sentence|>",
        "padding_side": "left", "clean_up_tokenization_spaces": True,
        "chat_template": "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content']"
                         " }}<|end_of_sentence|>{% endfor %}{% if add_generation_prompt %}"
                         "<|im_start|>assistant\n<think>\n{% endif %}"}))


def _sentencepiece_folder(folder, model_type="bpe", **config):
    write_sentencepiece(folder, model_type=model_type)
    path = folder / "tokenizer_config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **config}))


FOLDERS = {
    "sentencepiece": lambda f: _sentencepiece_folder(f),
    "sentencepiece-bos-eos": lambda f: _sentencepiece_folder(
        f, add_bos_token=True, add_eos_token=True, legacy=False),
    "sentencepiece-unigram-cleanup": lambda f: _sentencepiece_folder(
        f, model_type="unigram", clean_up_tokenization_spaces=True),
    "byte-level-json": _byte_level_folder,
}


@pytest.fixture(scope="module", params=list(FOLDERS))
def pair(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    FOLDERS[request.param](folder)
    return transformers.AutoTokenizer.from_pretrained(folder), load_tokenizer(folder)


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and \
            a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("kwargs", CALLS, ids=[json.dumps(c) for c in CALLS])
def test_call_equals_transformers(pair, kwargs):
    ref, ours = pair
    for texts in (TEXTS, TEXTS[1]):
        want, got = ref(texts, **kwargs), ours(texts, **kwargs)
        assert sorted(got) == ["attention_mask", "input_ids"]
        for key in ("input_ids", "attention_mask"):
            assert _same(got[key], want[key]), (key, texts, got[key], want[key])
    assert _same(got.input_ids, got["input_ids"])  # keys as attributes, as BatchEncoding


def test_decode_equals_transformers(pair):
    ref, ours = pair
    padded = ref(TEXTS, padding=True, return_tensors="np")["input_ids"]
    every = np.arange(len(ref) // 10 * 10).reshape(-1, 10)[:, ::-1]  # specials included
    for ids in (padded, every):
        for skip in (False, True):
            assert ours.batch_decode(ids, skip_special_tokens=skip) == \
                ref.batch_decode(ids, skip_special_tokens=skip)
            assert ours.decode(ids[1], skip_special_tokens=skip) == \
                ref.decode(ids[1], skip_special_tokens=skip)
    assert ours.decode(int(padded[0, -1])) == ref.decode(int(padded[0, -1]))
    for clean in (False, True):  # (transformers 5 cleans up no BPE text)
        assert ours.decode(padded[7].tolist(), clean_up_tokenization_spaces=clean) == \
            ref.decode(padded[7].tolist(), clean_up_tokenization_spaces=clean)


def test_special_tokens_equal_transformers(pair):
    ref, ours = pair
    for name in ("bos", "eos", "pad", "unk", "sep"):
        assert getattr(ours, f"{name}_token") == getattr(ref, f"{name}_token"), name
        assert getattr(ours, f"{name}_token_id") == getattr(ref, f"{name}_token_id"), name
    assert ours.all_special_tokens == ref.all_special_tokens
    assert ours.all_special_ids == ref.all_special_ids
    assert len(ours) == len(ref)
    assert ours.padding_side == ref.padding_side
    assert ours.convert_tokens_to_ids(["</s>", "<pad>"]) == ref.convert_tokens_to_ids(
        ["</s>", "<pad>"])


def test_chat_template_equals_transformers(pair):
    ref, ours = pair
    chats = [[{"role": "user", "content": "你好 😀"}],
             [{"role": "system", "content": "Be brief."},
              {"role": "user", "content": "What is two plus two?"}]]
    for gen in (False, True):
        want = ref.apply_chat_template(chats[1], add_generation_prompt=gen, tokenize=False)
        assert ours.apply_chat_template(chats[1], add_generation_prompt=gen) == want
        ids = ref.apply_chat_template(chats[1], add_generation_prompt=gen, tokenize=True,
                                      return_dict=False)
        assert ours.apply_chat_template(chats[1], add_generation_prompt=gen, tokenize=True,
                                        return_dict=False) == ids
        enc = ours.apply_chat_template(chats[1], add_generation_prompt=gen, tokenize=True)
        assert dict(enc) == dict(ref.apply_chat_template(chats[1], tokenize=True,
                                                         add_generation_prompt=gen))
    ref.padding_side = ours.padding_side = "left"
    want = ref.apply_chat_template(chats, add_generation_prompt=True, padding=True,
                                   return_tensors="np")
    got = ours.apply_chat_template(chats, add_generation_prompt=True, padding=True,
                                   return_tensors="np")
    for key in ("input_ids", "attention_mask"):
        assert _same(got[key], want[key]), key


def test_tokenizer_mistakes(pair, tmp_path):
    _, ours = pair
    with pytest.raises(ValueError, match="rows of different lengths"):
        ours(["a", "a b c d e"], return_tensors="np")
    with pytest.raises(ValueError, match="return_tensors='tf'"):  # "pt" is torch (round 26)
        ours(["a"], return_tensors="tf")
    with pytest.raises(ValueError, match="padding_side"):
        ours(["a"], padding=True, padding_side="middle")
    _sentencepiece_folder(tmp_path, pad_token=None)
    bare = load_tokenizer(tmp_path)
    with pytest.raises(ValueError, match="no pad token"):
        bare(["a", "a b"], padding=True)
    bare.pad_token = bare.eos_token  # as transformers users do
    assert bare(["a", "a b"], padding=True)["input_ids"][0][-1] == bare.eos_token_id


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sp-checkpoint")
    ref, tok = make_sentencepiece_checkpoint(folder)
    return ref, tok, from_pretrained(folder)


def test_generate_with_skiffs_own_tokenizer(checkpoint):
    """``model.generate(**model.tokenizer(texts, padding=True, return_tensors="np"))``: left
    padded, the tokens transformers' greedy ``generate`` gives on its own tokenizer's batch,
    and the same text from ``batch_decode``; right padded (where transformers' own generation
    goes wrong and says so), the same new tokens after the prompts as given."""
    ref, tok, model = checkpoint
    texts = ["Hello world", "你好，世界。模型回答问题。", "What is two plus two?", "ERNIE"]
    tok.padding_side = model.tokenizer.padding_side = "left"
    enc = model.tokenizer(texts, padding=True, return_tensors="np")
    assert (enc["attention_mask"] == 0).any()
    got = model.generate(**enc, max_new_tokens=8)
    with torch.no_grad():
        want = ref.generate(**tok(texts, padding=True, return_tensors="pt"),
                            max_new_tokens=8, do_sample=False).numpy()
    assert got.shape == want.shape and np.array_equal(got, want)
    assert model.tokenizer.batch_decode(got, skip_special_tokens=True) == \
        tok.batch_decode(want, skip_special_tokens=True)
    right = model.tokenizer(texts, padding=True, padding_side="right", return_tensors="np")
    assert not np.array_equal(right["input_ids"], enc["input_ids"])
    again = model.generate(**right, max_new_tokens=8)
    width = enc["input_ids"].shape[1]
    assert np.array_equal(again[:, :width], right["input_ids"])
    assert np.array_equal(again[:, width:], want[:, width:])
