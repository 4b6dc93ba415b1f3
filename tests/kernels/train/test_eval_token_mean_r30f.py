"""Round 30: the held-out loss of a token loss is the mean over every scored target of the
set (targets of -100 left out), as training's token loss now is (``trainer_accum``): the
next-token loss of skiff's language models on ``(x, y)`` blocks, a model's loss on packed
chat batches, transformers' items with ``labels``, cross-entropy on per-token targets.
``evaluate`` averaged the batch means by rows, so the value depended on the batch size
(GPT blocks: 3.6657 at batch 1, 3.6906 at batch 3, torch's token mean 3.6700). A loss of one
value per sample stays the mean over rows. Oracles: torch 2.13's cross-entropy over the
whole set (on a torch twin where the model is small), transformers' own loss.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff
from skiff import nn
from skiff.kernels.train.data import PackedBatch
from skiff.nn import functional as F

V, D, T = 13, 8, 6


def chat_rows(rows=7, seed=0, vocab=V, t=T):
    """Tokens and next-token targets scored on a few positions per row (chat data): one row
    has no scored target at all, the others from 1 to ``t``."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, vocab, (rows, t))
    y = rng.integers(0, vocab, (rows, t))
    scored = rng.integers(1, t + 1, rows)
    scored[1] = 0
    scored[2] = 1
    for i, k in enumerate(scored):
        y[i, :t - k] = -100
    return x.astype("i8"), y.astype("i8")


def by_rows(per_row_sum, per_row_count, batch):
    """The old value: batch token means averaged by rows (to show the data tells them apart)."""
    means, weights = [], []
    for s in range(0, len(per_row_sum), batch):
        n = per_row_count[s:s + batch].sum()
        if n:
            means.append(per_row_sum[s:s + batch].sum() / n)
            weights.append(len(per_row_sum[s:s + batch]))
    return float(np.average(means, weights=weights))


def test_gpt_blocks_val_loss_is_the_token_mean_for_any_batch_size():
    from skiff.kernels.train.core.tensor import no_grad
    from skiff.kernels.train.models.gpt import GPT

    skiff.seed(0)
    model = GPT("gpt-mini", n_layer=1, n_embd=16, n_head=2, block_size=T, vocab_size=V)
    x, y = chat_rows()
    model.eval()
    with no_grad():
        logits = torch.tensor(np.asarray(model(x).numpy(), dtype=np.float64))
    yt = torch.tensor(y)
    want = torch.nn.functional.cross_entropy(logits.reshape(-1, V), yt.reshape(-1)).item()
    per = torch.nn.functional.cross_entropy(logits.reshape(-1, V), yt.reshape(-1),
                                            reduction="none").reshape(len(y), T)
    rows_sum, rows_n = per.sum(1).numpy(), (y != -100).sum(1)
    for batch in (1, 3):  # by rows would fail
        assert abs(by_rows(rows_sum, rows_n, batch) - want) > 2e-3
    trainer = skiff.Trainer(model, batch_size=3, shuffle=False, verbose=False)
    for batch in (1, 3, len(x)):
        got = trainer.evaluate((x, y), batch_size=batch)
        np.testing.assert_allclose(got["val_loss"], want, rtol=2e-5, err_msg=str(batch))


class TokenModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, D)
        self.out = nn.Linear(D, V)

    def forward(self, x):
        return self.out(self.emb(x).tanh())


class PackedModel(TokenModel):
    def loss(self, batch):  # a model's own token loss on packed batches
        return F.cross_entropy(self.forward(batch.tokens), batch.targets)


class TorchTwin(torch.nn.Module):
    def __init__(self, state):
        super().__init__()
        self.emb = torch.nn.Embedding(V, D)
        self.out = torch.nn.Linear(D, V)
        self.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in state.items()})

    def forward(self, x):
        return self.out(self.emb(x).tanh())


def torch_token_mean(model, x, y):
    """torch's loss and accuracy over every scored target of the whole set."""
    with torch.no_grad():
        logits = TorchTwin(model.state_dict())(torch.tensor(x))
        yt = torch.tensor(y)
        keep = yt != -100
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, V), yt.reshape(-1))
        acc = (logits.argmax(-1) == yt)[keep].double().mean()
    return loss.item(), acc.item()


def test_cross_entropy_with_ignored_targets_loss_and_accuracy_are_the_token_means():
    x, y = chat_rows(rows=8, seed=1)
    skiff.seed(1)
    model = TokenModel()
    want_loss, want_acc = torch_token_mean(model, x, y)
    trainer = skiff.Trainer(model, loss="cross_entropy", batch_size=3, verbose=False)
    for batch in (1, 3, len(x)):
        got = trainer.evaluate((x, y), batch_size=batch)
        np.testing.assert_allclose(got["val_loss"], want_loss, rtol=2e-5, err_msg=str(batch))
        np.testing.assert_allclose(got["val_accuracy"], want_acc, rtol=1e-9, err_msg=str(batch))


class PackedRows:
    """Rows of (tokens, targets) that collate into one PackedBatch (packed chat)."""

    def __init__(self, x, y):
        self.x, self.y = x, y

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]

    def collate(self, items):
        cu = np.arange(len(items) + 1, dtype="i8") * T
        return PackedBatch(np.concatenate([a for a, _ in items]),
                           np.concatenate([b for _, b in items]), cu,
                           np.tile(np.arange(T, dtype="i8"), len(items)))


def test_packed_chat_with_a_model_loss_is_the_token_mean():
    x, y = chat_rows(rows=7, seed=2)
    skiff.seed(2)
    model = PackedModel()
    want, _ = torch_token_mean(model, x, y)
    trainer = skiff.Trainer(model, batch_size=2, verbose=False)
    for batch in (1, 3, len(x)):
        got = trainer.evaluate(PackedRows(x, y), batch_size=batch)
        np.testing.assert_allclose(got["val_loss"], want, rtol=2e-5, err_msg=str(batch))


def test_items_with_labels_are_transformers_loss_over_the_whole_set(tmp_path):
    """An open checkpoint on transformers' items (``input_ids``, ``attention_mask``,
    ``labels``, right padding): transformers' own loss of the whole set in one batch."""
    pytest.importorskip("transformers")
    from skiff.kernels.train.models import from_pretrained

    from .models.ernie_reference import make_checkpoint

    _, ref = make_checkpoint(tmp_path / "dense", "dense-gqa-tied")
    vocab = ref.config.vocab_size
    rng = np.random.default_rng(3)
    x = rng.integers(3, vocab, (5, 8))
    labels = x.copy()
    labels[0, :7] = labels[1, :3] = labels[3, :6] = -100  # 1, 5, 7, 2, 7 scored
    mask = np.ones_like(x)
    mask[2, 6:] = 0  # right padding, not scored
    labels[2, 6:] = -100
    with torch.no_grad():
        want = ref(input_ids=torch.tensor(x), attention_mask=torch.tensor(mask),
                   labels=torch.tensor(labels)).loss.item()
    items = [{"input_ids": x[i], "attention_mask": mask[i], "labels": labels[i]}
             for i in range(len(x))]
    trainer = skiff.Trainer(from_pretrained(tmp_path / "dense"), batch_size=2, verbose=False)
    for batch in (1, 3, len(x)):
        got = trainer.evaluate(items, batch_size=batch)
        np.testing.assert_allclose(got["val_loss"], want, rtol=1e-4, err_msg=str(batch))


def test_per_sample_losses_stay_the_mean_over_rows():
    """One class per row, and a regression: torch's mean over the rows (a short last batch
    weighs by its rows)."""
    rng = np.random.default_rng(4)
    x = rng.normal(size=(7, 3)).astype("f4")
    y = rng.integers(0, 3, 7).astype("i8")
    r = rng.normal(size=(7, 2)).astype("f4")
    for target, loss, crit in ((y, "cross_entropy", torch.nn.functional.cross_entropy),
                               (r, "mse", torch.nn.functional.mse_loss)):
        skiff.seed(4)
        model = nn.Linear(3, 3 if target is y else 2)
        w, b = (torch.tensor(np.asarray(v)) for v in (model.weight, model.bias))
        with torch.no_grad():
            want = crit(torch.tensor(x) @ w.T + b, torch.tensor(target)).item()
        trainer = skiff.Trainer(model, loss=loss, batch_size=3, verbose=False)
        for batch in (1, 3, len(x)):
            got = trainer.evaluate((x, target), batch_size=batch)
            np.testing.assert_allclose(got["val_loss"], want, rtol=2e-5,
                                       err_msg=f"{loss} {batch}")


class ClassesOnAxis1(TokenModel):
    def forward(self, x):
        return super().forward(x).permute(0, 2, 1)  # (B, C, T): torch's layout for the loss


def test_a_cross_entropy_module_with_padding_ignored_is_torch_over_the_whole_set():
    """``loss=nn.CrossEntropyLoss(ignore_index=pad)`` (no weight) on padded sequences: torch's
    criterion of the whole set divides by the tokens that are not padding (by rows: 2.1833
    at batch 1, 2.1809 at batch 3, torch 2.1645)."""
    rng = np.random.default_rng(5)
    x = rng.integers(1, V, (7, T))
    y = rng.integers(1, V, (7, T))
    for i, k in enumerate([0, 3, 5, 1, 0, 2, 4]):  # padding (id 0) at the end of a row
        y[i, T - k:] = 0 if k else y[i, T - k:]
    skiff.seed(5)
    model = ClassesOnAxis1()
    with torch.no_grad():
        logits = TorchTwin(model.state_dict())(torch.tensor(x)).permute(0, 2, 1)
        want = torch.nn.CrossEntropyLoss(ignore_index=0)(logits, torch.tensor(y)).item()
        yt = torch.tensor(y)  # accuracy: argmax over the classes (axis 1), padding left out
        acc = (logits.argmax(1) == yt)[yt != 0].double().mean().item()
    trainer = skiff.Trainer(model, loss=nn.CrossEntropyLoss(ignore_index=0), batch_size=3,
                            verbose=False)
    for batch in (1, 3, len(x)):
        got = trainer.evaluate((x, y), batch_size=batch)
        np.testing.assert_allclose(got["val_loss"], want, rtol=2e-5, err_msg=str(batch))
        np.testing.assert_allclose(got["val_accuracy"], acc, rtol=1e-9, err_msg=str(batch))


def test_rows_with_a_modules_ignore_index_are_left_out_of_loss_and_accuracy():
    """One class per row with ``nn.CrossEntropyLoss(ignore_index=2)``: torch's loss and
    accuracy over the rows whose target is not 2 (accuracy counted them as misses)."""
    rng = np.random.default_rng(7)
    x = rng.normal(size=(9, 3)).astype("f4")
    y = np.array([0, 2, 1, 2, 3, 0, 2, 1, 3], "i8")
    skiff.seed(7)
    model = nn.Linear(3, 4)
    w, b = (torch.tensor(np.asarray(v)) for v in (model.weight, model.bias))
    with torch.no_grad():
        logits = torch.tensor(x) @ w.T + b
        yt = torch.tensor(y)
        want = torch.nn.CrossEntropyLoss(ignore_index=2)(logits, yt).item()
        acc = (logits.argmax(1) == yt)[yt != 2].double().mean().item()
    trainer = skiff.Trainer(model, loss=nn.CrossEntropyLoss(ignore_index=2), batch_size=4,
                            verbose=False)
    for batch in (1, 4, len(x)):
        got = trainer.evaluate((x, y), batch_size=batch)
        np.testing.assert_allclose(got["val_loss"], want, rtol=2e-5, err_msg=str(batch))
        np.testing.assert_allclose(got["val_accuracy"], acc, rtol=1e-9, err_msg=str(batch))


def test_training_validation_and_early_stopping_watch_the_token_mean():
    """The validation rows a run records (and early stopping watches) are the token mean of
    the held-out set at the weights of that step: the last one, after the last step, equals
    torch's over the model the run ends with; the best loss is the smallest of them."""
    from skiff.kernels.train.core.tensor import no_grad
    from skiff.kernels.train.models.gpt import GPT

    skiff.seed(6)
    model = GPT("gpt-mini", n_layer=1, n_embd=16, n_head=2, block_size=T, vocab_size=V)
    x, y = chat_rows(rows=7, seed=6)
    trainer = skiff.Trainer(model, batch_size=3, shuffle=False, verbose=False, lr=1e-2,
                            early_stopping=5)
    result = trainer.train((x, y), steps=3, val_dataset=(x, y))
    model.eval()
    with no_grad():
        logits = torch.tensor(np.asarray(model(x).numpy(), dtype=np.float64))
    want = torch.nn.functional.cross_entropy(logits.reshape(-1, V),
                                             torch.tensor(y).reshape(-1)).item()
    losses = [r["val_loss"] for r in result.val_history]
    assert result.val_history[-1]["step"] == 3
    np.testing.assert_allclose(losses[-1], want, rtol=2e-5)
    np.testing.assert_allclose(result.best_val_loss, min(losses), rtol=1e-12)
