"""``generate`` with torch input returns torch, as transformers (round 29c; it returned numpy,
so a transformers script's ``torch.cat([ids, out], -1)`` was a TypeError), and a
``GenerateOutput`` lists only the entries transformers lists (``keys()`` held the None ones).
Each against transformers' ``generate`` on the same checkpoint."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_sentencepiece_checkpoint, torch

PROMPTS = ["Hello world", "What is two plus two? Four.", "The quick brown fox"]


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sp-torch-out")
    ref, tok = make_sentencepiece_checkpoint(folder)
    return ref, tok, from_pretrained(folder)


def _hf(ref, enc, **kw):
    with torch.no_grad():
        return ref.generate(**enc, **kw)


@pytest.mark.parametrize("padded", [False, True])
def test_torch_in_torch_out(pair, padded):
    ref, tok, model = pair
    enc = tok(PROMPTS if padded else PROMPTS[:1], padding=padded, padding_side="left",
              return_tensors="pt")
    kw = dict(max_new_tokens=6, do_sample=False)
    want = _hf(ref, enc, **kw)
    got = model.generate(**enc, **kw)
    assert isinstance(got, torch.Tensor) and got.dtype == want.dtype == torch.int64
    assert torch.equal(got, want)
    # what a transformers script does with it next
    assert torch.equal(torch.cat([enc["input_ids"], got[:, enc["input_ids"].shape[1]:]], -1),
                       got)
    assert got[0].tolist() == want[0].tolist()
    assert tok.batch_decode(got, skip_special_tokens=True) == \
        tok.batch_decode(want, skip_special_tokens=True)


def test_numpy_in_numpy_out(pair):
    _, tok, model = pair
    enc = tok(PROMPTS[:1], return_tensors="np")
    got = model.generate(**enc, max_new_tokens=3)
    assert isinstance(got, np.ndarray)


@pytest.mark.parametrize("kw", [dict(output_scores=True),
                                dict(output_logits=True),
                                dict(output_scores=True, output_logits=True),
                                dict(output_hidden_states=True),
                                dict(num_beams=2, output_scores=True)])
def test_dict_output_keys_and_types_as_transformers(pair, kw):
    ref, tok, model = pair
    enc = tok(PROMPTS, padding=True, padding_side="left", return_tensors="pt")
    kw = dict(kw, max_new_tokens=4, do_sample=False, return_dict_in_generate=True)
    want = _hf(ref, enc, **kw)
    got = model.generate(**enc, **kw)
    skip = {"past_key_values", "cache"}  # both keep a cache; transformers' may be dropped
    assert [k for k in got.keys() if k not in skip] == \
        [k for k in want.keys() if k not in skip]
    assert torch.equal(got.sequences, want.sequences) and torch.equal(got[0], want[0])
    for name in ("scores", "logits"):
        assert (getattr(got, name) is None) == (getattr(want, name) is None)
        for mine, theirs in zip(getattr(got, name) or (), getattr(want, name) or ()):
            assert isinstance(mine, torch.Tensor)
            fin = torch.isfinite(theirs)
            assert torch.equal(fin, torch.isfinite(mine))
            torch.testing.assert_close(mine[fin], theirs[fin], atol=1e-4, rtol=1e-4)
    if kw.get("output_hidden_states"):
        h, w = got.hidden_states, want.hidden_states
        assert len(h) == len(w) and isinstance(h[-1][-1], torch.Tensor)
        real = enc["attention_mask"].bool()  # padded prompt positions differ (see states)
        torch.testing.assert_close(h[0][-1][real], w[0][-1][real], atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(h[-1][-1], w[-1][-1], atol=1e-4, rtol=1e-4)
