"""A user's ``logits_processor`` / ``stopping_criteria`` that treat each batch row its own
way, in a left-padded batch whose rows end at different steps (round 41, h6): transformers
passes every row (a finished one padded), so row ``i`` of the scores is always prompt
``i``. skiff passed only the rows still generating (a processor's row ``i`` became another
prompt once a row had finished) and called a criterion one row at a time (a criterion
returning one answer per row was a broadcast error). Checked against transformers' own
``generate`` of the same checkpoint: greedy, sampled with transformers' draws, beams."""

from __future__ import annotations

import numpy as np
import pytest

from .ernie_reference import make_checkpoint, torch

transformers = pytest.importorskip("transformers")

LENS = (3, 6, 4)
T = max(LENS)
EOS = 2


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    from skiff.kernels.train.models import from_pretrained

    folder = tmp_path_factory.mktemp("hooks_rows")
    _, ref = make_checkpoint(folder, "dense-gqa-tied")
    rng = np.random.default_rng(3)
    ids = np.zeros((3, T), np.int64)
    mask = np.zeros((3, T), np.int64)
    for i, n in enumerate(LENS):
        ids[i, T - n:] = rng.integers(3, 96, n)
        mask[i, T - n:] = 1
    return ref, from_pretrained(folder), ids, mask


class Plan(transformers.LogitsProcessor):
    """Row ``i`` is pushed towards its own token of each step (row 0 towards the eos at
    once, row 1 after three steps): which row is which decides every token."""

    PLAN = ([EOS] * 8, [40, 41, 42, EOS] + [43] * 4, [50, 51, 52, 53, 54, 55, 56, 57])

    def __call__(self, input_ids, scores):
        step = input_ids.shape[1] - T
        for i in range(scores.shape[0]):
            scores[i, self.PLAN[i % 3][step]] += 30.0
        return scores


class LastBan(transformers.LogitsProcessor):
    """Each row's last token banned in every row: reads the other rows' ids (a finished
    row's last id is the pad)."""

    def __call__(self, input_ids, scores):
        scores[:, input_ids[:, -1]] = -float("inf")
        return scores


class RowStop(transformers.StoppingCriteria):
    """Row ``i`` done after its own number of new tokens: one answer per row."""

    def __init__(self, after):
        self.after = after

    def __call__(self, input_ids, scores, **kwargs):
        return torch.tensor([input_ids.shape[1] >= T + k for k in self.after])


def _both(pair, seed=None, **kw):
    ref, model, ids, mask = pair
    kw = dict(max_new_tokens=8, pad_token_id=0, **kw)
    if seed is not None:
        torch.manual_seed(seed)
    with torch.no_grad():
        want = ref.generate(torch.tensor(ids), attention_mask=torch.tensor(mask), **kw).numpy()
    gen = None if seed is None else torch.Generator().manual_seed(seed)
    got = np.asarray(model.generate(ids, attention_mask=mask, generator=gen, **kw))
    return got, want


@pytest.mark.parametrize("how", ["greedy", "sampled", "beams"])
def test_a_per_row_processor_sees_its_own_row(pair, how):
    kw = dict(do_sample=how == "sampled", num_beams=2 if how == "beams" else 1,
              seed=5 if how == "sampled" else None)
    got, want = _both(pair, eos_token_id=EOS,
                      logits_processor=transformers.LogitsProcessorList([Plan()]), **kw)
    np.testing.assert_array_equal(got, want)
    if how == "greedy":  # the plan was followed: rows ended at different steps
        assert got[0, T] == EOS and got[1, T + 3] == EOS and got[2, T + 7] == 57


def test_a_processor_reading_other_rows(pair):
    got, want = _both(pair, eos_token_id=EOS, logits_processor=transformers.LogitsProcessorList(
        [Plan(), LastBan()]))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("eos", [EOS, None])
def test_a_criterion_answering_per_row(pair, eos):
    got, want = _both(pair, eos_token_id=eos, stopping_criteria=transformers.
                      StoppingCriteriaList([RowStop([2, 6, 4])]))
    np.testing.assert_array_equal(got, want)


def _allowed(batch_id, ids):
    """transformers' ``prefix_allowed_tokens_fn``: prompt 1 keeps to ids 20..59, the others
    to five ids that follow from their last token, or the eos."""
    if batch_id == 1:
        return list(range(20, 60))
    return [(int(ids[-1]) * 7 + k) % 96 for k in range(5)] + [EOS]


@pytest.mark.parametrize("kw", [dict(), dict(num_beams=2), dict(do_sample=True, seed=3),
                                dict(do_sample=True, seed=4, num_return_sequences=2)],
                         ids=["greedy", "beams", "sampled", "sampled-copies"])
def test_prefix_allowed_tokens_fn(pair, kw):
    """Was refused ("not supported"); transformers' ``batch_id`` is the row // max(num_beams,
    num_return_sequences)."""
    got, want = _both(pair, eos_token_id=EOS, prefix_allowed_tokens_fn=_allowed, **kw)
    np.testing.assert_array_equal(got, want)
    if not kw:
        assert all(20 <= t < 60 for t in got[1, T:])


def test_prefix_allowed_tokens_fn_empty_is_an_error(pair):
    _, model, ids, mask = pair
    with pytest.raises(ValueError, match="returned an empty list for batch ID 0"):
        model.generate(ids, attention_mask=mask, max_new_tokens=2,
                       prefix_allowed_tokens_fn=lambda b, s: [])
