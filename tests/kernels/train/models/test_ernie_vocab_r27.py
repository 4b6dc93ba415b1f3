"""Adding tokens (``tok.add_special_tokens`` / ``add_tokens``, ``tok.save_pretrained``) and
growing the model (``model.resize_token_embeddings``), compared with transformers doing the
same on the same folder: the same ids, decoded text and length; the saved tokenizer read
back by ``AutoTokenizer`` with the same ids; the embeddings and head resized as
transformers resizes them (old rows kept, new rows at the old rows' mean, ``pad_to_multiple
_of``), logits equal, and ``save_pretrained`` of the grown model loaded by transformers."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained
from skiff.kernels.train.models.hf_checkpoint import save_pretrained
from skiff.kernels.train.models.tokenizer import load_tokenizer

from .ernie_reference import (
    LINES,
    add_tokenizer,
    make_checkpoint,
    make_sentencepiece_checkpoint,
    torch,
    transformers,
)

TEXTS = ["Hello<|tool|> world<|result|>x", "<|result|>你好 <|tool|>",
         "The quick<|tool|><|tool|>fox", "plain text, no new token", "<|result|>"]
NEW = {"additional_special_tokens": ["<|tool|>", "<|result|>"]}


def _folders(tmp_path, kind):
    """(folder, transformers tokenizer) of a SentencePiece or a tokenizer.json checkpoint."""
    folder = tmp_path / kind
    if kind == "sentencepiece":
        _, tok = make_sentencepiece_checkpoint(folder)
        return folder, tok
    make_checkpoint(folder, "dense-gqa-tied")
    add_tokenizer(folder, " ".join(LINES), 90)
    return folder, transformers.AutoTokenizer.from_pretrained(folder)


def _same(mine, theirs, texts=TEXTS):
    assert len(mine) == len(theirs)
    assert mine.vocab_size == theirs.vocab_size  # the base vocabulary, added ones apart
    for t in texts:
        a, b = mine(t).input_ids, theirs(t).input_ids
        assert a == b, t
        for skip in (False, True):
            assert mine.decode(a, skip_special_tokens=skip) == \
                theirs.decode(b, skip_special_tokens=skip)
    assert set(mine.all_special_tokens) >= {"<|tool|>", "<|result|>"}


@pytest.mark.parametrize("kind", ["sentencepiece", "tokenizer.json"])
def test_added_special_tokens_as_transformers(tmp_path, kind):
    folder, theirs = _folders(tmp_path, kind)
    mine = load_tokenizer(folder)
    before = len(mine)
    assert mine.add_special_tokens(NEW) == theirs.add_special_tokens(NEW) == 2
    assert mine.add_special_tokens(NEW) == theirs.add_special_tokens(NEW) == 0  # known now
    assert mine.convert_tokens_to_ids(["<|tool|>", "<|result|>"]) == [before, before + 1]
    assert mine.additional_special_tokens == ["<|tool|>", "<|result|>"]
    _same(mine, theirs)
    # a pad token set through add_special_tokens, as transformers
    assert mine.add_special_tokens({"pad_token": "<|pad2|>"}) == \
        theirs.add_special_tokens({"pad_token": "<|pad2|>"})
    assert mine.pad_token_id == theirs.pad_token_id
    _same(mine, theirs, TEXTS + ["a<|pad2|>b"])
    # saved: transformers and skiff read it back with the same ids (beside the model's
    # config.json, as a model folder has it: transformers picks ERNIE's tokenizer class by it)
    files = mine.save_pretrained(tmp_path / "saved")
    (tmp_path / "saved" / "config.json").write_bytes((folder / "config.json").read_bytes())
    assert any(f.endswith("tokenizer_config.json") for f in files)
    _same(transformers.AutoTokenizer.from_pretrained(tmp_path / "saved"), theirs)
    _same(load_tokenizer(tmp_path / "saved"), theirs)


def test_added_plain_tokens_tokenizer_json(tmp_path):
    folder, theirs = _folders(tmp_path, "tokenizer.json")
    mine = load_tokenizer(folder)
    words = ["skiffy", "foxes", "quick"]  # "quick" may be a piece already
    assert mine.add_tokens(words) == theirs.add_tokens(words)
    texts = TEXTS + ["skiffy foxes jump quickly", "the quick skiffy"]
    _same_plain = [(mine(t).input_ids, theirs(t).input_ids) for t in texts]
    assert all(a == b for a, b in _same_plain)
    assert len(mine) == len(theirs)
    mine.save_pretrained(tmp_path / "saved")
    (tmp_path / "saved" / "config.json").write_bytes((folder / "config.json").read_bytes())
    again = transformers.AutoTokenizer.from_pretrained(tmp_path / "saved")
    assert [again(t).input_ids for t in texts] == [b for _, b in _same_plain]


def test_add_tokens_mistakes(tmp_path):
    folder, _ = _folders(tmp_path, "sentencepiece")
    tok = load_tokenizer(folder)
    with pytest.raises(ValueError, match="does not know 'extra'"):
        tok.add_special_tokens({"extra": ["<x>"]})
    with pytest.raises(TypeError, match="non-empty string"):
        tok.add_tokens([""])


def _resized_pair(tmp_path, shape, **kw):
    _, ref = make_checkpoint(tmp_path / "ck", shape)
    model = from_pretrained(tmp_path / "ck")
    V = model.config.vocab_size
    torch.manual_seed(0)
    ref.resize_token_embeddings(V + 5, **kw)
    model.resize_token_embeddings(V + 5, seed=0, **kw)
    return ref, model, V


@pytest.mark.parametrize("shape", ["dense-gqa-tied", "dense-mha-untied-bias", "moe-interval"])
def test_resize_token_embeddings_as_transformers(tmp_path, shape):
    _, before = make_checkpoint(tmp_path / "orig", shape)
    ref, model, V = _resized_pair(tmp_path, shape)
    n = ref.config.vocab_size
    assert model.config.vocab_size == n == V + 5
    emb = model.model.embed_tokens.weight.data
    theirs = ref.get_input_embeddings().weight.detach().numpy()
    assert emb.shape == theirs.shape
    np.testing.assert_array_equal(emb[:V], before.get_input_embeddings().weight.detach().numpy())
    # new rows: a draw of N(mean, 1e-9 cov) in both: equal to ~1e-4, far from zero
    np.testing.assert_allclose(emb[V:], theirs[V:], atol=2e-4)
    assert np.abs(emb[V:]).max() > 1e-2
    head = model.lm_head.weight.data
    their_head = ref.get_output_embeddings().weight.detach().numpy()
    assert head.shape == their_head.shape
    if model.config.tie_word_embeddings:
        assert model.lm_head.weight is model.model.embed_tokens.weight
    np.testing.assert_array_equal(head[:V], their_head[:V])
    np.testing.assert_allclose(head[V:], their_head[V:], atol=2e-4)
    ids = np.random.default_rng(2).integers(3, n, (2, 7))
    ids[:, 3] = n - 1  # a new token in the prompt
    with torch.no_grad():
        want = ref(torch.tensor(ids)).logits.numpy()
    got = np.asarray(model(ids).numpy())
    assert got.shape == want.shape
    assert np.abs(got - want).max() < 0.05 * np.abs(want).max()
    # with transformers' new rows copied in, the logits are the same to 1e-5
    model.model.embed_tokens.weight.data[V:] = theirs[V:]
    if not model.config.tie_word_embeddings:
        model.lm_head.weight.data[V:] = their_head[V:]
    got = np.asarray(model(ids).numpy())
    np.testing.assert_allclose(got, want, atol=1e-5 * np.abs(want).max())
    # greedy generation goes through the fast path: same tokens
    with torch.no_grad():
        g_want = ref.generate(torch.tensor(ids), max_new_tokens=6, do_sample=False,
                              eos_token_id=None).numpy()
    np.testing.assert_array_equal(model.generate(ids, max_new_tokens=6, eos_token_id=None),
                                  g_want)
    # saved and loaded by transformers
    save_pretrained(model, tmp_path / "saved")
    loaded = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "saved").eval()
    assert loaded.config.vocab_size == n
    with torch.no_grad():
        again = loaded(torch.tensor(ids)).logits.numpy()
    np.testing.assert_allclose(again, want, atol=1e-5 * np.abs(want).max())


def test_resize_pad_to_multiple_and_shrink(tmp_path):
    ref, model, V = _resized_pair(tmp_path, "dense-mha-untied-bias", pad_to_multiple_of=16)
    assert model.config.vocab_size == ref.config.vocab_size == -(-(V + 5) // 16) * 16
    assert model.resize_token_embeddings(None) is model.get_input_embeddings()
    model.resize_token_embeddings(V - 4)
    ref.resize_token_embeddings(V - 4)
    np.testing.assert_array_equal(model.lm_head.weight.data,
                                  ref.get_output_embeddings().weight.detach().numpy())
    ids = np.random.default_rng(3).integers(3, V - 4, (1, 6))
    with torch.no_grad():
        want = ref(torch.tensor(ids)).logits.numpy()
    np.testing.assert_allclose(np.asarray(model(ids).numpy()), want,
                               atol=1e-5 * np.abs(want).max())


def test_resize_without_mean_and_lora_refused(tmp_path):
    from skiff.kernels.train.models.lora import apply_lora

    make_checkpoint(tmp_path, "dense-gqa-tied")
    model = from_pretrained(tmp_path)
    V = model.config.vocab_size
    old = np.array(model.model.embed_tokens.weight._data)
    model.resize_token_embeddings(V + 400, mean_resizing=False, seed=1)
    new = np.asarray(model.model.embed_tokens.weight._data[V:])
    np.testing.assert_array_equal(model.model.embed_tokens.weight.data[:V], old)
    # N(0, initializer_range): transformers' _init_weights of a fresh row
    std = transformers.Ernie4_5Config().initializer_range
    assert abs(new.std() / std - 1) < 0.05 and abs(new.mean()) < 0.05 * std
    apply_lora(model, r=2, target_modules=["q_proj"])
    with pytest.raises(ValueError, match="before apply_lora"):
        model.resize_token_embeddings(V + 401)
