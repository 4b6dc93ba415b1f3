"""Round 30b: a resumed job that trains nothing (its checkpoint already reaches the epochs
asked) does not draw ``loss.png`` again; it still writes the weights its run folder gives
back (``model.npz``, equal to the first job's), and a resume that trains does draw it.
Oracle: the first run's own weights, and torch 2.13's cross-entropy of them on the data."""

from __future__ import annotations

import numpy as np
import torch

from skiff.kernels.backend.report import NullReporter
from skiff.kernels.train.entry import nothing_trained, train_parts


class _Folder(NullReporter):
    def __init__(self, run_dir):
        self.run_dir = run_dir
        run_dir.mkdir()


def _parts():
    from skiff import nn
    from skiff.kernels.train.core import random as train_random

    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 3)).astype(np.float32)
    y = (x[:, 0] > 0.4).astype(np.int64)
    with train_random.using(train_random.new_generator(1)):
        model = nn.Sequential(nn.Linear(3, 2))
    return {"model": model, "dataset": (x, y)}, x, y


def _weights(folder):
    with np.load(folder / "model.npz") as z:
        return {k: z[k] for k in z.files}


def test_a_resume_with_the_epochs_reached_draws_no_curve(tmp_path):
    ck = tmp_path / "ck"
    config = {"epochs": 2, "batch_size": 8, "checkpoint_dir": str(ck), "strategy": "single"}
    parts, x, y = _parts()
    first = train_parts(parts, config, _Folder(tmp_path / "one"))
    assert (tmp_path / "one" / "loss.png").is_file() and not nothing_trained(first)
    parts, _, _ = _parts()
    again = train_parts(parts, {**config, "resume": True}, _Folder(tmp_path / "two"))
    assert again.resumed["from_step"] == first.steps == again.steps
    assert nothing_trained(again)
    assert not (tmp_path / "two" / "loss.png").exists()
    w1, w2 = _weights(tmp_path / "one"), _weights(tmp_path / "two")
    assert w1.keys() == w2.keys()
    for k in w1:
        np.testing.assert_array_equal(w2[k], w1[k])
    twin = torch.nn.Linear(3, 2)
    twin.load_state_dict({k.split(".", 1)[1]: torch.tensor(v) for k, v in w2.items()})
    with torch.no_grad():
        want = torch.nn.functional.cross_entropy(twin(torch.tensor(x)), torch.tensor(y))
    got = parts["model"]  # the resumed model holds the checkpoint's weights
    from skiff.kernels.train.trainer import Trainer

    np.testing.assert_allclose(Trainer(got).evaluate((x, y))["val_loss"], want.item(),
                               rtol=1e-5)
    parts, _, _ = _parts()
    more = train_parts(parts, {**config, "epochs": 3, "resume": True},
                       _Folder(tmp_path / "three"))
    assert more.steps > first.steps and not nothing_trained(more)
    assert (tmp_path / "three" / "loss.png").is_file()
