"""Evaluation of ERNIE-4.5 against torch on the transformers model: perplexity (blockwise
NLL), each multiple-choice option's log-likelihood, and exact match of greedy answers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained
from skiff.kernels.train.models.evaluate import (
    choice_logprobs,
    exact_match,
    multiple_choice,
    perplexity,
)

from .ernie_reference import add_tokenizer, make_checkpoint, torch

TEXT = "a skiff is a small boat that carries one or two people across a calm sea " * 4


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    folder = tmp_path_factory.mktemp("eval")
    _, ref = make_checkpoint(folder, "moe-shared")
    add_tokenizer(folder, TEXT, vocab_size=80)
    return ref, from_pretrained(folder)


def _torch_logp(ref, ids):
    with torch.no_grad():
        return torch.log_softmax(ref(torch.tensor(ids[None])).logits[0].double(), -1).numpy()


def test_perplexity_equals_torch(pair):
    ref, model = pair
    ids = model.tokenizer.encode(TEXT)
    got = perplexity(model, TEXT, block_size=16)
    total, n = 0.0, 0
    for s in range(0, len(ids) - 1, 16):
        block = ids[s:s + 17]
        logp = _torch_logp(ref, block[:-1])
        total -= logp[np.arange(len(block) - 1), block[1:]].sum()
        n += len(block) - 1
    assert got["tokens"] == n == len(ids) - 1
    assert abs(got["loss"] - total / n) <= 1e-5 * total / n
    assert got["perplexity"] == pytest.approx(math.exp(total / n), rel=1e-5)


def test_multiple_choice_scores_equal_torch(pair):
    ref, model = pair
    prompt, choices = "a skiff is a", ["small boat", "calm sea", "people"]
    got = choice_logprobs(model, prompt, choices)
    p = model.tokenizer.encode(prompt)
    for score, choice in zip(got, choices):
        c = model.tokenizer.encode(choice)
        seq = np.concatenate([p, c])
        logp = _torch_logp(ref, seq[:-1])
        want = logp[np.arange(len(p) - 1, len(seq) - 1), c].sum()
        assert abs(score - want) <= 1e-4 * abs(want)
    best = int(np.argmax(got))
    rows = [{"prompt": prompt, "choices": choices, "answer": best},
            {"prompt": prompt, "choices": choices, "answer": (best + 1) % 3}]
    result = multiple_choice(model, rows)
    assert result["picks"] == [best, best] and result["accuracy"] == 0.5
    with pytest.raises(ValueError, match="row 1 needs 'prompt', 'choices' and 'answer'"):
        multiple_choice(model, [{"prompt": "x"}])


def test_exact_match(pair):
    _, model = pair
    prompt = "a skiff is"
    ids = model.tokenizer.encode(prompt)
    out = model.generate(ids[None], max_new_tokens=4, eos_token_id=None)[0]
    answer = model.tokenizer.decode(out[len(ids):]).strip().split("\n")[0].strip()
    result = exact_match(model, [{"prompt": prompt, "answer": answer},
                                 {"prompt": prompt, "answer": answer + " not"}],
                         max_new_tokens=4)
    assert result["answers"][0] == answer and result["exact_match"] == 0.5
