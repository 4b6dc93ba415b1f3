"""transformers' user hooks of ``generate``: ``logits_processor`` (its own processors and a
user's class, in a ``LogitsProcessorList``) and ``stopping_criteria``, compared with
transformers' ``generate`` on the same tiny checkpoints: the same sequences and processed
scores, greedy and sampling, one row and a left-padded batch (the packed path)."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, torch, transformers

gen_utils = pytest.importorskip("transformers.generation")


@pytest.fixture(scope="module", params=["dense-gqa-tied", "moe-shared"])
def pair(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("hooks-" + request.param)
    _, ref = make_checkpoint(folder, request.param)
    return ref, from_pretrained(folder)


class Bias(transformers.LogitsProcessor):
    """A user's processor: a fixed bias over the vocabulary, odd tokens forbidden after the
    fourth position (reads input_ids and edits scores in place, as users write them)."""

    def __init__(self, vocab):
        self.bias = torch.linspace(-3.0, 3.0, vocab)

    def __call__(self, input_ids, scores):
        scores = scores + self.bias
        if input_ids.shape[1] > 4:
            scores[:, 1::2] = -float("inf")
        return scores


class LastIn(transformers.StoppingCriteria):
    def __init__(self, ids):
        self.ids = torch.tensor(ids)

    def __call__(self, input_ids, scores, **kwargs):
        return torch.isin(input_ids[:, -1], self.ids)


def _batch(padded):
    ids = np.random.default_rng(1).integers(3, 60, (2, 5))
    mask = np.ones_like(ids)
    if padded:
        ids[1, :2], mask[1, :2] = 0, 0
    return ids, mask


def _both(ref, model, ids, mask, **kw):
    with torch.no_grad():
        want = ref.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                            return_dict_in_generate=True, output_scores=True, **kw)
    got = model.generate(ids, attention_mask=mask, return_dict_in_generate=True,
                         output_scores=True, **kw)
    return got, want


def _same_scores(got, want):
    assert len(got.scores) == len(want.scores)
    for mine, theirs in zip(got.scores, want.scores):
        theirs = theirs.numpy()
        live = np.isfinite(theirs).any(axis=1) & np.isfinite(mine).any(axis=1)
        np.testing.assert_array_equal(np.isfinite(mine[live]), np.isfinite(theirs[live]))
        ok = np.isfinite(theirs) & live[:, None]
        np.testing.assert_allclose(mine[ok], theirs[ok], atol=1e-4)


@pytest.mark.parametrize("padded", [False, True])
def test_logits_processors_greedy_as_transformers(pair, padded):
    ref, model = pair
    ids, mask = _batch(padded)
    V = model.config.vocab_size
    procs = transformers.LogitsProcessorList([
        transformers.SuppressTokensLogitsProcessor([5, 7, 11]),
        transformers.NoBadWordsLogitsProcessor([[12], [20, 21]], eos_token_id=None),
        Bias(V)])
    got, want = _both(ref, model, ids, mask, logits_processor=procs, max_new_tokens=8,
                      do_sample=False, eos_token_id=None, pad_token_id=0,
                      repetition_penalty=1.2)
    np.testing.assert_array_equal(got.sequences, want.sequences.numpy())
    _same_scores(got, want)
    new = got.sequences[:, ids.shape[1]:]
    assert not np.isin(new, [5, 7, 11, 12]).any()
    # without the processors the tokens differ (the hooks do act)
    plain = model.generate(ids, attention_mask=mask, max_new_tokens=8, eos_token_id=None)
    assert not np.array_equal(plain, got.sequences)


def test_logits_processor_runs_before_temperature(pair):
    """Sampling with top_k=1 is deterministic: the processor's bias comes before the
    temperature (scores (z + b) / T), as in transformers."""
    ref, model = pair
    ids, mask = _batch(True)
    procs = [Bias(model.config.vocab_size)]
    got, want = _both(ref, model, ids, mask, logits_processor=procs, max_new_tokens=6,
                      do_sample=True, top_k=1, temperature=0.5, eos_token_id=None,
                      pad_token_id=0)
    np.testing.assert_array_equal(got.sequences, want.sequences.numpy())
    _same_scores(got, want)


@pytest.mark.parametrize("padded", [False, True])
def test_stopping_criteria_as_transformers(pair, padded):
    ref, model = pair
    ids, mask = _batch(padded)
    with torch.no_grad():
        free = ref.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                            max_new_tokens=10, do_sample=False, eos_token_id=None).numpy()
    stops = [int(free[0, ids.shape[1] + 2]), int(free[1, ids.shape[1] + 5])]
    for eos in (None, [int(free[0, -1])]):
        kw = dict(max_new_tokens=10, do_sample=False, eos_token_id=eos, pad_token_id=0,
                  stopping_criteria=transformers.StoppingCriteriaList([LastIn(stops)]))
        with torch.no_grad():
            want = ref.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                                **kw).numpy()
        got = model.generate(ids, attention_mask=mask, **kw)
        if eos is not None:  # finished rows padded as transformers pads them
            np.testing.assert_array_equal(got, want)
        else:  # no eos: neither pads a stopped row; it goes on until all rows stopped
            np.testing.assert_array_equal(got, want)
        assert got.shape[1] < ids.shape[1] + 10


def test_hook_mistakes(pair):
    _, model = pair
    ids = np.array([[3, 4, 5]])
    with pytest.raises(TypeError, match="callables"):
        model.generate(ids, logits_processor=[3], max_new_tokens=2)
    with pytest.raises(ValueError, match="returned None"):
        model.generate(ids, logits_processor=[lambda i, s: None], max_new_tokens=2)
    # a plain function over numpy-compatible tensors works too
    out = model.generate(ids, max_new_tokens=3, eos_token_id=None,
                         logits_processor=lambda i, s: s * 0 + torch.arange(s.shape[1]))
    assert (out[0, 3:] == model.config.vocab_size - 1).all()
