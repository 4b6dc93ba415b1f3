"""Generation choices against transformers: the sampling distribution its warpers make
(temperature, top-k, top-p) and its repetition penalty on the same logits, stop strings,
seeded generators, prompts of different lengths through ``generate`` and their streamer."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from skiff.kernels.train.models import from_pretrained  # noqa: E402
from skiff.kernels.train.models.ernie_generate import (  # noqa: E402
    pick_next,
    repetition_penalty_,
    sampling_probs,
)

from .ernie_reference import make_sentencepiece_checkpoint  # noqa: E402

LP = transformers.generation.logits_process


def _their_probs(logits, temperature=1.0, top_k=None, top_p=None):
    warpers = [LP.TemperatureLogitsWarper(temperature)]
    if top_k is not None:
        warpers.append(LP.TopKLogitsWarper(top_k))
    if top_p is not None:
        warpers.append(LP.TopPLogitsWarper(top_p))
    z = torch.tensor(logits)
    for w in warpers:
        z = w(None, z)
    return torch.softmax(z, dim=-1).numpy()


@pytest.mark.parametrize("temperature,top_k,top_p", [(1.0, None, 0.9), (0.7, None, 0.5),
                                                     (1.3, 4, None), (1.0, 5, 0.8),
                                                     (2.0, 1, None), (1.0, None, 0.05)])
def test_sampling_distribution_equals_transformers_warpers(temperature, top_k, top_p):
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(3, 12)) * 2
    logits[1] = [5.0, 4.0, 3.0, 2.0, 1.0, 0.0, -1, -2, -3, -4, -5, -6]  # crafted: a known tail
    ours = sampling_probs(logits, temperature, top_k, top_p)
    theirs = _their_probs(logits, temperature, top_k, top_p)
    assert np.array_equal(ours > 0, theirs > 0)  # the same tokens masked
    assert np.abs(ours - theirs).max() < 1e-12


def test_top_p_masks_the_tail_it_should():
    # probabilities 0.5, 0.3, 0.15, 0.05: top_p 0.79 drops the tail 0.2 (<= 0.21), 0.81
    # keeps 0.15 (0.2 > 0.19), and a tiny top_p keeps the most likely token alone
    logits = np.log(np.array([[0.5, 0.3, 0.15, 0.05]]))
    for top_p, keep in [(0.79, [True, True, False, False]), (0.81, [True, True, True, False]),
                        (0.01, [True, False, False, False])]:
        assert (sampling_probs(logits, top_p=top_p) > 0).tolist() == [keep]
        assert (_their_probs(logits, top_p=top_p) > 0).tolist() == [keep]


def test_seeded_draws_follow_the_distribution():
    logits = np.array([[2.0, 1.0, 0.5, -1.0, -3.0]])
    p = sampling_probs(logits, top_k=3)
    rng = np.random.default_rng(0)
    draws = np.concatenate([pick_next(logits, True, 1.0, 3, None, rng) for _ in range(4000)])
    freq = np.bincount(draws, minlength=5) / len(draws)
    assert freq[3] == freq[4] == 0  # outside the top 3: never drawn
    assert np.abs(freq - p[0]).max() < 0.03
    again = np.concatenate([pick_next(logits, True, 1.0, 3, None, np.random.default_rng(0))
                            for _ in range(1)])
    assert again[0] == draws[0]
    assert (pick_next(logits, True, 1.0, 1, None, rng) == 0).all()  # top-k 1 is greedy


def test_repetition_penalty_equals_transformers_processor():
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(2, 20)) * 3
    history = np.array([[1, 4, 4, 7, 19], [0, 2, 3, 5, 5]])
    ours = repetition_penalty_(logits.copy(), history, 1.7)
    theirs = LP.RepetitionPenaltyLogitsProcessor(1.7)(torch.tensor(history),
                                                      torch.tensor(logits)).numpy()
    assert np.abs(ours - theirs).max() < 1e-12
    assert not np.allclose(ours, logits)


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """A dense checkpoint with a SentencePiece tokenizer.model (its vocabulary's size)."""
    folder = tmp_path_factory.mktemp("gen")
    ref, tok = make_sentencepiece_checkpoint(folder)
    return ref, from_pretrained(folder), tok


def test_stop_strings_stop_where_transformers_stops(pair):
    ref, model, tok = pair
    ids = np.array([[5, 17, 40, 9]])
    free = model.generate(ids, max_new_tokens=24, eos_token_id=None)
    text = model.tokenizer.decode(free[0, 4:])
    plain = [text[i:i + n] for n in (2, 3) for i in range(2, len(text) - n)
             if "\ufffd" not in text[i:i + n] and text[i:i + n].strip() == text[i:i + n]]
    checked = 0
    for stop in dict.fromkeys(plain[::max(1, len(plain) // 4)]):
        with torch.no_grad():
            want = ref.generate(torch.tensor(ids), max_new_tokens=24, do_sample=False,
                                stop_strings=[stop], tokenizer=tok, eos_token_id=None,
                                pad_token_id=0).numpy()
        got = model.generate(ids, max_new_tokens=24, eos_token_id=None, stop_strings=[stop])
        assert np.array_equal(got, want), stop
        assert got.shape[1] < free.shape[1]
        assert stop in model.tokenizer.decode(got[0])
        rows = model.generate_batch([ids[0], ids[0, :2]], max_new_tokens=24,
                                    eos_token_id=None, stop_strings=stop)
        assert np.array_equal(rows[0], want[0])
        checked += 1
    assert checked >= 2  # (a run of byte pieces that is not UTF-8 decodes as one U+FFFD a
    #                      byte, as transformers decodes it: fewer plain candidates)
    with pytest.raises(ValueError, match="non-empty"):
        model.generate(ids, max_new_tokens=2, stop_strings=[""])


def test_generate_takes_prompts_of_different_lengths_and_a_generator(pair):
    _, model, _ = pair
    prompts = [np.array([5, 17, 40, 9, 3, 8]), np.array([11]), np.array([2, 60, 7])]
    seen = []
    rows = model.generate(prompts, max_new_tokens=10, eos_token_id=None,
                          streamer=lambda r, t: seen.append((r.tolist(), t.tolist())))
    assert isinstance(rows, list) and len(rows) == 3
    for p, row in zip(prompts, rows):
        alone = model.generate(p[None], max_new_tokens=10, eos_token_id=None)[0]
        assert np.array_equal(row, alone)
    assert len(seen) == 10
    streamed = {b: [t[i] for r, t in seen for i, bb in enumerate(r) if bb == b]
                for b in range(3)}
    assert all(streamed[b] == rows[b][len(prompts[b]):].tolist() for b in range(3))
    g1, g2 = np.random.default_rng(7), np.random.default_rng(7)
    a = model.generate(prompts, max_new_tokens=6, do_sample=True, generator=g1,
                       eos_token_id=None)
    b = model.generate(prompts, max_new_tokens=6, do_sample=True, generator=g2,
                       eos_token_id=None)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    c = model.generate(prompts, max_new_tokens=6, do_sample=True, generator=g1,
                       eos_token_id=None)  # the generator moved on
    assert not all(np.array_equal(x, y) for x, y in zip(a, c))
    with pytest.raises(ValueError, match="top_k"):
        model.generate(prompts[0][None], max_new_tokens=2, do_sample=True, top_k=-1)


def test_inference_attention_equals_the_packed_attention_node():
    """The prefill's grouped-query attention without a graph (chunks of rows, keys not
    copied per query head) equals the training node on the expanded heads."""
    from skiff.kernels.train.core.nn import functional as F
    from skiff.kernels.train.core.tensor import Tensor
    from skiff.kernels.train.models.ernie_generate import packed_attention_gqa

    rng = np.random.default_rng(0)
    lengths, K, R, D = [5, 150, 1, 64], 2, 3, 8
    cu = np.concatenate([[0], np.cumsum(lengths)])
    N = int(cu[-1])
    q = rng.standard_normal((N, K * R, D)).astype(np.float32)
    k, v = (rng.standard_normal((N, K, D)).astype(np.float32) for _ in range(2))
    got = packed_attention_gqa(q, k, v, cu, D ** -0.5, chunk=32)
    wide = [np.repeat(a, R, axis=1) for a in (k, v)]  # head h reads k/v head h // R
    want = F.packed_causal_attention(Tensor(q), Tensor(wide[0]), Tensor(wide[1]), cu,
                                     scale=D ** -0.5).numpy()
    assert np.abs(got - want).max() < 1e-5
