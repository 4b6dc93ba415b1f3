"""A dataset class whose ``__len__`` counts more items than its ``__getitem__`` can give (its
arrays of different lengths) is refused before the first step, naming the cause; torch 2.13's
DataLoader over the same class is the oracle that the class is broken (it raises IndexError
too, mid-epoch). Found by a user: a bare "index 93 is out of bounds for axis 0 with size 90"
at whichever step drew the row, after training on the rest.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff
from skiff.nn import Linear

X = np.random.default_rng(0).standard_normal((90, 8)).astype(np.float32)


class LongLen:
    def __len__(self):
        return 100

    def __getitem__(self, i):
        return X[i], np.int64(i % 2)


class ShortTargets:
    def __init__(self):
        self.x, self.y = X, np.zeros(80, np.int64)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


@pytest.mark.parametrize("make", [LongLen, ShortTargets])
def test_a_dataset_longer_than_its_items_is_refused_before_training(make):
    with pytest.raises(IndexError):  # torch's loader fails on it too
        for _ in torch.utils.data.DataLoader(make(), batch_size=16, shuffle=False):
            pass
    steps = []
    trainer = skiff.Trainer(Linear(8, 2), batch_size=16, callbacks=[steps.append])
    with pytest.raises(IndexError, match=r"says it has \d+ items \(__len__\).*different "
                                         r"lengths"):
        trainer.train(make(), epochs=1)
    assert steps == []  # refused before the first step
    with pytest.raises(IndexError, match="__len__"):
        trainer.evaluate(make())
