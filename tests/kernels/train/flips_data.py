"""A tiny two-class image set whose ``__getitem__`` draws its augmentations (a random flip,
noise, and optionally a brightness from torch's generator, torchvision's habit) from the
global generators, each process (rank) its own: round 42 (h13)'s one-process test
(``test_resume_rngs_r42h13.py``), its 2-rank script (``optimizer_split_r41h9_check.py``) and
round 43 (h5)'s world-size changes (``parallel/scripts/world_change_r43h5_check.py``) share
this one definition. torch is imported only where ``torch_scale`` asks for it (a rank that
does not use it does not pay its import)."""

from __future__ import annotations

import random
import sys

import numpy as np


class Flips:
    """``n`` images of 1 x 6 x 6: class 1 has its top half raised by 1."""

    def __init__(self, n, seed, augment=True, torch_scale=False):
        r = np.random.default_rng(seed)
        self.y = r.integers(0, 2, n)
        self.x = r.normal(size=(n, 1, 6, 6)).astype("f4") * 0.5
        self.x[self.y == 1, :, :3] += 1.0
        self.augment = augment
        self.torch_scale = torch_scale

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        x = self.x[i]
        if self.augment:
            if random.random() < 0.5:
                x = x[..., ::-1]
            x = x + np.random.normal(scale=0.1, size=x.shape).astype("f4")
            if self.torch_scale:  # torchvision's habit: torch's generator
                x = x * (1.0 + 0.2 * float(sys.modules["torch"].rand(())))
        return np.ascontiguousarray(x), self.y[i]


def quiet_data():
    """``(name, data)`` that draw nothing from the global generators (round 43 h10's
    world-size changes): 32 rows of 4 features as arrays, and as ``skiff.utils.data``'s
    loader of a ``TensorDataset`` with a ``WeightedRandomSampler``."""
    import skiff
    from skiff.utils import data as sud

    x = np.random.default_rng(1).standard_normal((32, 4)).astype("f4")
    y = (x[:, 0] > 0).astype("i8")
    loader = sud.DataLoader(sud.TensorDataset(skiff.tensor(x), skiff.tensor(y)), batch_size=8,
                            sampler=sud.WeightedRandomSampler(np.where(y == 1, 2.0, 1.0), 32))
    return [("arrays", (x, y)), ("sampled", loader)]
