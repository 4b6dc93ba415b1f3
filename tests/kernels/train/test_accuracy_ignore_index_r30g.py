"""Round 30 follow-ups: ``losses.accuracy`` and ``losses.class_ids`` read the loss's own
``ignore_index`` and torch's ``(N, C, d1, ...)`` layout for a loss module
(``nn.CrossEntropyLoss(ignore_index=pad)``); they hard-coded -100 and classes on the last
axis (``evaluate`` worked around it; the workaround is gone). Oracle: torch 2.13's argmax over
the class axis with the ignored targets masked out, as its criterion leaves them out."""

from __future__ import annotations

import numpy as np
import torch

from skiff import nn
from skiff.kernels.train.core.tensor import Tensor
from skiff.kernels.train.losses import accuracy, class_ids


def test_accuracy_of_classes_on_axis_1_leaves_out_the_modules_ignore_index():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(3, 5, 4)).astype("f4")  # (N, C, T) with C=5, T=4
    y = rng.integers(0, 5, (3, 4))
    y[0, 2:] = 1  # padding id 1
    loss = nn.CrossEntropyLoss(ignore_index=1)
    lt, yt = torch.tensor(logits), torch.tensor(y)
    want = (lt.argmax(1) == yt)[yt != 1].double().mean().item()
    got = accuracy(Tensor(logits), Tensor(y), loss)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_class_ids_drop_rows_of_the_modules_ignore_index():
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(12, 4)).astype("f4")
    y = np.array([0, 1, 2, 3, 2, 2, 1, 0, 3, 2, 1, 0])
    loss = nn.CrossEntropyLoss(ignore_index=2)
    lt, yt = torch.tensor(logits), torch.tensor(y)
    keep = yt != 2
    true, pred, k = class_ids(Tensor(logits), Tensor(y), loss)
    np.testing.assert_array_equal(true, yt[keep].numpy())
    np.testing.assert_array_equal(pred, lt.argmax(1)[keep].numpy())
    assert k == 4
    want = (lt.argmax(1) == yt)[keep].double().mean().item()
    np.testing.assert_allclose(accuracy(Tensor(logits), Tensor(y), loss), want, rtol=1e-12)
