"""Round 30: gradient accumulation of a token loss (targets of -100 left out) weighs each
micro-batch by its scored targets over the window's, as transformers' Trainer does
(``num_items_in_batch``): the step equals one batch of all the window's rows. Before, each
micro-batch's token mean counted ``1 / grad_accum``: micro-batches of 4 and 23 scored tokens
weighed the same and one SGD step with batch 2 x accum 2 was 107% off batch 4's. Oracles:
torch 2.13 (a hand-written loop over the same micro-batches, and one big batch) and the
transformers reference model of an open checkpoint. Per-sample losses keep ``loss / accum``.
"""

from __future__ import annotations

import numpy as np
import torch

import skiff
from skiff import nn

from .token_rows import D, PackedModel, PackedRows, T, TokenModel, V, token_data  # noqa: F401


class TorchTwin(torch.nn.Module):
    def __init__(self, state):
        super().__init__()
        self.emb = torch.nn.Embedding(V, D)
        self.out = torch.nn.Linear(D, V)
        self.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in state.items()})

    def forward(self, x):
        return self.out(self.emb(x).tanh())


def skiff_run(x, y, batch_size, accum, steps, model_cls=TokenModel, data=None):
    skiff.seed(0)
    model = model_cls()
    start = {k: np.array(v, copy=True) for k, v in model.state_dict().items()}
    trainer = skiff.Trainer(model, optimizer="sgd", lr=0.5, schedule="constant", clip=None,
                            weight_decay=0.0, batch_size=batch_size, grad_accum=accum,
                            shuffle=False)
    result = trainer.train(data if data is not None else (x, y), steps=steps)
    end = {k: np.array(v) for k, v in model.state_dict().items()}
    return start, end, result.losses


def torch_run(start, windows, x, y):
    """transformers' rule written out: sum of the token losses over the window's count."""
    twin = TorchTwin(start)
    opt = torch.optim.SGD(twin.parameters(), lr=0.5, momentum=0.9)
    losses = []
    for window in windows:
        n = sum(int((y[rows] != -100).sum()) for rows in window)
        opt.zero_grad()
        total = 0.0
        for rows in window:
            logits = twin(torch.tensor(x[rows]))
            loss = torch.nn.functional.cross_entropy(
                logits.reshape(-1, V), torch.tensor(y[rows]).reshape(-1), ignore_index=-100,
                reduction="sum") / n
            loss.backward()
            total += loss.item()
        opt.step()
        losses.append(total)
    return {k: v.detach().numpy() for k, v in twin.state_dict().items()}, losses


def test_token_cross_entropy_accumulates_as_one_big_batch():
    x, y = token_data()
    counts = (y != -100).sum(1)
    assert counts[[0, 1]].sum() != counts[[2, 3]].sum()  # the micro-batches differ
    start, end, losses = skiff_run(x, y, batch_size=4, accum=2, steps=3)
    # batch_size is the micro-batch here: rows 0-3 and 4-7 make the first window
    # 12 rows: the epoch's second window is its last micro-batch alone (transformers' rule)
    windows = [[slice(0, 4), slice(4, 8)], [slice(8, 12)], [slice(0, 4), slice(4, 8)]]
    want, want_losses = torch_run(start, windows, x, y)
    for k in want:
        np.testing.assert_allclose(end[k], want[k], rtol=1e-4, atol=2e-6, err_msg=k)
    # the loss logged per step is the window's token mean, as one big batch's
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
    # and torch's one batch of 8 rows gives the same first step
    big, big_losses = torch_run(start, [[slice(0, 8)]], x, y)
    _, end1, losses1 = skiff_run(x, y, batch_size=8, accum=1, steps=1)
    _, end2, losses2 = skiff_run(x, y, batch_size=4, accum=2, steps=1)
    for k in big:
        np.testing.assert_allclose(end2[k], big[k], rtol=1e-4, atol=2e-6, err_msg=k)
        np.testing.assert_allclose(end2[k], end1[k], rtol=1e-4, atol=2e-6, err_msg=k)
    np.testing.assert_allclose(losses2, big_losses, rtol=1e-5)


def test_per_sample_loss_keeps_loss_over_accum_with_a_short_last_micro_batch():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(10, 3)).astype("f4")
    y = (x[:, 0] > 0).astype("i8")
    skiff.seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    start = {k: np.array(v, copy=True) for k, v in model.state_dict().items()}
    skiff.Trainer(model, optimizer="sgd", lr=0.5, schedule="constant", clip=None,
                  weight_decay=0.0, batch_size=4, grad_accum=3, shuffle=False
                  ).train((x, y), steps=1)
    twin = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    twin.load_state_dict({k: torch.tensor(v) for k, v in start.items()})
    for i in range(0, 10, 4):  # micro-batches of 4, 4, 2: torch's loss / accum loop
        (torch.nn.functional.cross_entropy(twin(torch.tensor(x[i:i + 4])),
                                           torch.tensor(y[i:i + 4])) / 3).backward()
    with torch.no_grad():
        for p in twin.parameters():
            p -= 0.5 * p.grad
    for k, v in twin.state_dict().items():
        np.testing.assert_allclose(model.state_dict()[k], v.numpy(), rtol=1e-4, atol=2e-6)


def test_packed_chat_batches_with_a_model_loss_weigh_by_scored_tokens():
    x, y = token_data(rows=8, seed=3)
    start, end, losses = skiff_run(x, y, batch_size=2, accum=4, steps=1,
                                   model_cls=PackedModel, data=PackedRows(x, y))
    want, want_losses = torch_run(start, [[slice(0, 8)]], x, y)
    for k in want:
        np.testing.assert_allclose(end[k], want[k], rtol=1e-4, atol=2e-6, err_msg=k)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)


def _one_sgd_step(folder, data):
    from skiff.kernels.train.models import from_pretrained

    model = from_pretrained(folder)
    before = {k: np.array(v, copy=True) for k, v in model.state_dict().items()}
    skiff.Trainer(model, optimizer=lambda ps: skiff.optim.SGD(ps, lr=1.0), batch_size=2,
                  grad_accum=2, clip=None, schedule="constant", weight_decay=0.0,
                  shuffle=False, verbose=False).train(data, steps=1)
    return {k: np.asarray(v) - before[k] for k, v in model.state_dict().items()}


def test_open_checkpoint_accumulates_as_transformers_num_items_in_batch(tmp_path):
    """An open model's next-token loss on chat rows (assistant tokens scored only), batch 2 x
    accum 2, as ``(x, y)`` blocks and as transformers' items (``input_ids``,
    ``attention_mask``, ``labels``; they failed "too many values to unpack"): one SGD step
    equals transformers' own rule, the model's loss with ``num_items_in_batch`` (the
    window's count of ``labels[:, 1:]``) summed over the micro-batches."""
    import pytest

    pytest.importorskip("transformers")
    from .models.ernie_reference import make_checkpoint

    _, ref = make_checkpoint(tmp_path / "dense", "dense-gqa-tied")
    vocab = ref.config.vocab_size
    rng = np.random.default_rng(0)
    x = rng.integers(3, vocab, (4, 10))
    labels = x.copy()  # transformers' labels: shifted inside the model
    labels[0, :9] = labels[1, :7] = labels[3, :2] = -100  # 1, 3, 10 and 8 scored tokens
    mask = np.ones_like(x)
    mask[2, 8:] = 0  # a right-padded row: its padding is not scored
    labels[2, 8:] = -100
    n = int((labels[:, 1:] != -100).sum())
    ref.zero_grad()
    for rows in ([0, 1], [2, 3]):
        out = ref(input_ids=torch.tensor(x[rows]), attention_mask=torch.tensor(mask[rows]),
                  labels=torch.tensor(labels[rows]), num_items_in_batch=torch.tensor(n))
        out.loss.backward()
    grads = {k: p.grad.numpy() for k, p in ref.named_parameters()}
    y = np.full_like(labels, -100)  # (x, y) blocks: y holds each position's next token
    y[:, :-1] = labels[:, 1:]
    items = [{"input_ids": x[i], "attention_mask": mask[i], "labels": labels[i]}
             for i in range(4)]
    for data in ((x, y), items):  # (causal: the padding is seen by unscored positions only)
        step = _one_sgd_step(tmp_path / "dense", data)
        assert set(grads) <= set(step)
        for k, g in grads.items():
            assert np.linalg.norm(step[k] + g) <= 1e-4 * np.linalg.norm(g) + 1e-7, k


def test_accuracy_of_token_targets_leaves_out_the_ignored_ones():
    """``val_accuracy`` on per-token targets counted the -100 positions as misses (0.0143
    where torch's accuracy over the 24 scored tokens is 0.0417): now over the scored ones."""
    x, y = token_data(rows=10, seed=5)
    skiff.seed(0)
    model = TokenModel()
    twin = TorchTwin(model.state_dict())
    with torch.no_grad():
        logits = twin(torch.tensor(x))
        keep = torch.tensor(y) != -100
        want = (logits.argmax(-1) == torch.tensor(y))[keep].float().mean().item()
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, V),
                                                 torch.tensor(y).reshape(-1)).item()
    got = skiff.Trainer(model, batch_size=10, verbose=False).evaluate((x, y))
    np.testing.assert_allclose(got["val_accuracy"], want, rtol=1e-6)
    np.testing.assert_allclose(got["val_loss"], loss, rtol=1e-5)


def test_a_logged_row_holds_the_mean_loss_of_its_steps():
    """``log_every=3`` recorded the third step's loss alone; transformers' ``logging_steps``
    logs the mean over the steps since the last log: torch's losses of steps 1-3, 4-6, 7."""
    x, y = token_data(rows=14, seed=6)
    skiff.seed(0)
    model = TokenModel()
    start = {k: np.array(v, copy=True) for k, v in model.state_dict().items()}
    result = skiff.Trainer(model, optimizer="sgd", lr=0.5, schedule="constant", clip=None,
                           weight_decay=0.0, batch_size=2, shuffle=False, log_every=3,
                           verbose=False).train((x, y), steps=7)
    _, losses = torch_run(start, [[slice(2 * s, 2 * s + 2)] for s in range(7)], x, y)
    assert [row["step"] for row in result.history] == [3, 6, 7]
    np.testing.assert_allclose(result.losses, [np.mean(losses[:3]), np.mean(losses[3:6]),
                                               losses[6]], rtol=1e-5)


def test_an_epoch_ends_with_a_short_window_and_sees_every_batch():
    """12 rows, batch 4, ``grad_accum=2``, ``epochs=1`` made one step of 8 rows (the last
    batch never seen). As transformers, an epoch has ``ceil(3 / 2)`` steps and its last
    window is the batch left, its loss over its own micro-batches (``loss / 1``)."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(12, 3)).astype("f4")
    y = (x[:, 0] + x[:, 1] > 0).astype("i8")
    skiff.seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    start = {k: np.array(v, copy=True) for k, v in model.state_dict().items()}
    result = skiff.Trainer(model, optimizer="sgd", lr=0.5, schedule="constant", clip=None,
                           weight_decay=0.0, batch_size=4, grad_accum=2, shuffle=False,
                           verbose=False).train((x, y), epochs=2)
    twin = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    twin.load_state_dict({k: torch.tensor(v) for k, v in start.items()})
    opt = torch.optim.SGD(twin.parameters(), lr=0.5, momentum=0.9)
    losses = []
    for window in [[0, 4], [8]] * 2:  # transformers: loss / current_gradient_accumulation_steps
        opt.zero_grad()
        total = 0.0
        for i in window:
            loss = torch.nn.functional.cross_entropy(twin(torch.tensor(x[i:i + 4])),
                                                     torch.tensor(y[i:i + 4])) / len(window)
            loss.backward()
            total += loss.item()
        opt.step()
        losses.append(total)
    np.testing.assert_allclose(result.losses, losses, rtol=1e-5)
    for k, v in twin.state_dict().items():
        np.testing.assert_allclose(model.state_dict()[k], v.numpy(), rtol=1e-4, atol=2e-6)
