"""Round 30 follow-ups: skiff's GPT given dict items ``{"x": ..., "y": ...}`` (targets of
-100 outside the scored span). ``GPT.loss``'s ``x, y = batch`` took the dict's keys
("invalid literal for int(): 'x'"); the Trainer now passes the item's pair, and counts it as a
token loss: the held-out loss and one accumulated step's loss are the mean over every scored
target of the set. Oracle: torch 2.13's cross_entropy(ignore_index=-100) over the logits."""

from __future__ import annotations

import numpy as np
import torch

import skiff
from skiff.kernels.train.models.gpt import GPT

V, T = 13, 6


def items(rows=4, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, V, (rows, T)).astype("i8")
    y = rng.integers(0, V, (rows, T)).astype("i8")
    for i, k in enumerate([1, 1, T, T - 1]):  # micro-batches of 2 and 11 scored targets
        y[i, :T - k] = -100
    return x, y, [{"x": x[i], "y": y[i]} for i in range(rows)]


def torch_token_mean(model, x, y):
    with skiff.no_grad():
        logits = torch.tensor(np.asarray(model(x).numpy()))
    return torch.nn.functional.cross_entropy(logits.reshape(-1, V), torch.tensor(y).reshape(-1),
                                             ignore_index=-100).item()


def tiny():
    skiff.seed(0)
    return GPT(block_size=T, vocab_size=V, n_layer=1, n_head=2, n_embd=8)


def test_dict_items_evaluate_and_accumulate_as_torchs_token_mean():
    x, y, data = items()
    model = tiny()
    want = torch_token_mean(model, x, y)
    trainer = skiff.Trainer(model, optimizer="sgd", lr=0.1, schedule="constant", clip=None,
                            batch_size=2, grad_accum=2, shuffle=False, verbose=False)
    for batch in (1, 3):
        got = trainer.evaluate(data, batch_size=batch)["val_loss"]
        np.testing.assert_allclose(got, want, rtol=2e-5, err_msg=str(batch))
    direct = model.loss({"x": x, "y": y}).item()  # GPT.loss itself on a dict batch
    np.testing.assert_allclose(direct, want, rtol=2e-5)
    result = trainer.train(data, steps=1)  # the window's loss, before its update
    np.testing.assert_allclose(result.losses[0], want, rtol=2e-5)
