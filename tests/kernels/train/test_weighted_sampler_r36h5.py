"""Round 36 (h5): a DataLoader's ``WeightedRandomSampler`` (torch's or ``skiff.utils.data``'s),
the usual way to oversample a rare class, is followed.

It was refused ("its own sampler ... pass loader.dataset"), which trained on the classes as
they come (1 in 10 here). Now the Trainer's loader draws each epoch's ``num_samples`` items
with the sampler's weights (with replacement, as torch's), from the Trainer's seed and the
epoch: a second run, or a resumed one, draws the same; dp's ranks share one draw.

The oracle: torch 2.13's own sampler over the same weights draws the rare class about half
the time; the Trainer's draw does too (binomial bound, 4 standard deviations), where the
plain loader draws it a tenth of the time."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff
from skiff import nn
from skiff.utils import data as sud

N, DRAWS, BATCH = 400, 1000, 50


class Rows(torch.utils.data.Dataset):
    """A tenth of class 1; remembers which rows were read."""

    def __init__(self):
        rng = np.random.default_rng(0)
        self.x = rng.normal(size=(N, 3)).astype("f4")
        self.y = (np.arange(N) % 10 == 0).astype(np.int64)
        self.read = []

    def __len__(self):
        return N

    def __getitem__(self, i):
        self.read.append(int(i))
        return self.x[i], self.y[i]


def _weights(y):
    return 1.0 / np.bincount(y)[y]


def _train(ds, make_loader, sampler):
    skiff.seed(0)
    ds.read.clear()
    trainer = skiff.Trainer(nn.Linear(3, 2), seed=4)
    result = trainer.train(make_loader(ds, batch_size=BATCH, sampler=sampler), epochs=1)
    return result, np.array(ds.read)


@pytest.mark.parametrize("lib", ["torch", "skiff"])
def test_the_rare_class_is_drawn_as_the_weights_say(lib):
    ds = Rows()
    w = _weights(ds.y)
    make, sampler = ((torch.utils.data.DataLoader,
                      torch.utils.data.WeightedRandomSampler(torch.tensor(w), DRAWS))
                     if lib == "torch" else
                     (sud.DataLoader, sud.WeightedRandomSampler(w, DRAWS)))
    result, read = _train(ds, make, sampler)
    assert result.steps == DRAWS // BATCH and len(read) == DRAWS
    bound = 4 * np.sqrt(0.25 / DRAWS)
    assert abs(ds.y[read].mean() - 0.5) < bound
    gen = torch.Generator().manual_seed(0)  # torch's own draw of these weights, the oracle
    theirs = list(torch.utils.data.WeightedRandomSampler(torch.tensor(w), DRAWS,
                                                         generator=gen))
    assert abs(ds.y[theirs].mean() - 0.5) < bound
    again, read2 = _train(ds, make, sampler)  # the Trainer's seed: the same draw
    np.testing.assert_array_equal(read, read2)
    assert again.losses == result.losses


def test_without_the_sampler_the_rare_class_stays_rare_and_val_split_is_refused():
    ds = Rows()
    _, read = _train(ds, torch.utils.data.DataLoader, None)
    assert ds.y[read].mean() == pytest.approx(0.1, abs=2e-3)  # (+ the last row, read once)
    sampler = torch.utils.data.WeightedRandomSampler(torch.tensor(_weights(ds.y)), DRAWS)
    with pytest.raises(ValueError, match="val_split.*WeightedRandomSampler.*val_dataset"):
        skiff.Trainer(nn.Linear(3, 2)).train(
            torch.utils.data.DataLoader(ds, batch_size=BATCH, sampler=sampler), val_split=0.2)
