"""Round 36 (h5): a DataLoader's own ``collate_fn`` (torch's or ``skiff.utils.data``'s).

``Trainer.train(DataLoader(ds, batch_size=8, collate_fn=pad))`` was refused, pointing at
``loader.dataset``, which cannot be batched without the padding (its items have different
lengths). Now the loader's ``collate_fn`` makes the Trainer's batches (tensors in what it
returns become arrays), for training, validation, ``evaluate`` and ``predict``; a sampler of
its own is followed when it is a WeightedRandomSampler (``test_weighted_sampler_r36h5.py``),
else refused.

The oracle: the same loader in a torch 2.13 training loop (``shuffle=False``, SGD) on a twin
of the model: losses, weights, the validation loss and the predictions."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff
from skiff import nn
from skiff.utils.data import DataLoader as SkiffLoader

V = 12


class Sentences(torch.utils.data.Dataset):
    """Token ids of 1 to 6 words and a label: items of different lengths."""

    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        self.items = [rng.integers(1, V, rng.integers(1, 7)) for _ in range(n)]
        self.labels = [int(x.sum() % 2) for x in self.items]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return {"ids": self.items[i], "label": self.labels[i]}


def pad(items):
    """Pad to the batch's longest with 0 (as users write it for torch)."""
    width = max(len(it["ids"]) for it in items)
    ids = np.zeros((len(items), width), np.int64)
    for r, it in enumerate(items):
        ids[r, :len(it["ids"])] = it["ids"]
    return torch.tensor(ids), torch.tensor([it["label"] for it in items])


class Bag(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb, self.out = nn.Embedding(V, 8), nn.Linear(8, 2)

    def forward(self, ids):
        return self.out(self.emb(ids).mean(axis=1))


class TorchBag(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb, self.out = torch.nn.Embedding(V, 8), torch.nn.Linear(8, 2)

    def forward(self, ids):
        return self.out(self.emb(ids).mean(dim=1))


def _torch_run(start, train, val, epochs):
    twin = TorchBag().double()
    twin.load_state_dict({k: torch.tensor(np.asarray(v), dtype=torch.float64)
                          for k, v in start.items()})
    opt = torch.optim.SGD(twin.parameters(), lr=0.3, momentum=0.9)
    losses = []
    for _ in range(epochs):
        for ids, y in train:
            loss = torch.nn.functional.cross_entropy(twin(ids), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    with torch.no_grad():
        outs = [(twin(ids), y) for ids, y in val]
        val_loss = sum(torch.nn.functional.cross_entropy(o, y, reduction="sum").item()
                       for o, y in outs) / sum(len(y) for _, y in outs)
        logits = torch.cat([o for o, _ in outs]).numpy()
    return losses, val_loss, logits


@pytest.mark.parametrize("loader", [torch.utils.data.DataLoader, SkiffLoader])
def test_a_loaders_collate_fn_batches_as_in_a_torch_loop(loader):
    train_ds, val_ds = Sentences(40, 0), Sentences(12, 1)
    skiff.seed(0)
    model = Bag()
    start = {k: np.array(v, copy=True) for k, v in model.state_dict().items()}
    trainer = skiff.Trainer(model, optimizer="sgd", lr=0.3, schedule="constant", clip=None,
                            shuffle=False)
    result = trainer.train(loader(train_ds, batch_size=8, collate_fn=pad), epochs=2,
                           val_dataset=loader(val_ds, batch_size=5, collate_fn=pad))
    t_train = torch.utils.data.DataLoader(train_ds, batch_size=8, collate_fn=pad)
    t_val = torch.utils.data.DataLoader(val_ds, batch_size=5, collate_fn=pad)
    losses, val_loss, logits = _torch_run(start, t_train, t_val, 2)
    np.testing.assert_allclose(result.losses, losses, rtol=2e-5, atol=2e-6)
    assert result.val_history[-1]["val_loss"] == pytest.approx(val_loss, rel=2e-5)
    got = trainer.predict(loader(val_ds, batch_size=5, collate_fn=pad))
    np.testing.assert_allclose(got, logits, atol=5e-5)
    ev = trainer.evaluate(loader(val_ds, batch_size=5, collate_fn=pad))
    assert ev["val_loss"] == pytest.approx(val_loss, rel=2e-5)


def test_a_weighted_sampler_and_a_collate_fn_together_and_another_sampler_refused():
    ds = Sentences(16, 0)
    sampler = torch.utils.data.WeightedRandomSampler(np.ones(16), 24)
    result = skiff.Trainer(Bag(), batch_size=4).train(
        torch.utils.data.DataLoader(ds, batch_size=4, sampler=sampler, collate_fn=pad))
    assert result.steps == 24 // 4  # the sampler's 24 draws, padded batches of 4
    other = list(range(8))[::-1]  # an order of one's own (SubsetRandomSampler: followed,
    # round 45 h5)
    with pytest.raises(TypeError, match="own sampler.*WeightedRandomSampler and a "
                                        "SubsetRandomSampler are followed"):
        skiff.Trainer(Bag()).train(torch.utils.data.DataLoader(ds, batch_size=4,
                                                               sampler=other,
                                                               collate_fn=pad))


def test_a_collate_of_named_arrays_as_a_data_collator_returns_them():
    """A collate_fn that returns a mapping (transformers' data collators return a
    BatchEncoding, a UserDict) of ``input_ids`` and ``labels``: the same run as the tuple."""
    import collections

    def named(items):
        ids, y = pad(items)
        return collections.UserDict({"input_ids": ids, "labels": y})

    runs = []
    for collate in (pad, named):
        skiff.seed(0)
        trainer = skiff.Trainer(Bag(), optimizer="sgd", lr=0.3, schedule="constant",
                                clip=None, shuffle=False)
        runs.append(trainer.train(torch.utils.data.DataLoader(Sentences(40, 0), batch_size=8,
                                                              collate_fn=collate)).losses)
    assert runs[1] == runs[0]
