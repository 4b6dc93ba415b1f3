"""Round 38 (h5): an EMA of the weights (``torch.optim.swa_utils.AveragedModel`` with
``get_ema_multi_avg_fn``, skiff's ``skiff.optim.swa_utils`` of the same names) kept by a
callback's ``on_step_end``, as a torch loop calls ``ema.update_parameters(model)`` after each
``opt.step()``: equal to torch's EMA. A callback with ``state_dict``/``load_state_dict``
(Lightning's stateful callback) now has its state in each checkpoint: a run cut at step 5
and resumed ends with the uninterrupted run's EMA; before, the resumed run's EMA started
again from the resumed weights (its ``n_averaged`` 7, not 12). The many-optimizer refusal
(a GAN) is checked here too."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.optim.swa_utils as tsw

import skiff
from skiff import nn
from skiff.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

LR, BATCH, STEPS, DECAY = 0.1, 8, 12, 0.8
rng = np.random.default_rng(0)
X = rng.normal(size=(32, 5)).astype("f4")
Y = (X[:, 0] - X[:, 3] > 0).astype("i8") + (X[:, 1] > 0.5)


class EMA:
    """What a user writes: the EMA updated after each optimizer step, and kept across a
    resume (``state_dict``: the averaged weights and ``n_averaged``)."""

    def __init__(self, model):
        self.ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(DECAY))

    def on_step_end(self, trainer, metrics):
        self.ema.update_parameters(trainer.model)

    def state_dict(self):
        return self.ema.state_dict()

    def load_state_dict(self, state):
        self.ema.load_state_dict(state)


def _model():
    skiff.seed(0)
    return nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 3))


def _trainer(model, ema, tmp_path, **kw):
    return skiff.Trainer(model, optimizer="sgd", lr=LR, batch_size=BATCH, clip=None,
                         schedule="constant", callbacks=[ema], checkpoint_dir=tmp_path, **kw)


def _torch_ema(start):
    twin = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    twin.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in start.items()})
    ema = tsw.AveragedModel(twin, multi_avg_fn=tsw.get_ema_multi_avg_fn(DECAY))
    opt = torch.optim.SGD(twin.parameters(), lr=LR, momentum=0.9)
    x, y = torch.tensor(X), torch.tensor(Y)
    step = 0
    for epoch in range(STEPS):
        order = np.random.default_rng([0, epoch]).permutation(len(X))  # the Trainer's seed 0
        for i in range(0, len(X), BATCH):
            rows = torch.tensor(order[i:i + BATCH])
            loss = torch.nn.functional.cross_entropy(twin(x[rows]), y[rows])
            opt.zero_grad()
            loss.backward()
            opt.step()
            ema.update_parameters(twin)
            step += 1
            if step == STEPS:
                return {k: v.detach().numpy() for k, v in ema.module.state_dict().items()}, \
                    int(ema.n_averaged)


def test_an_ema_callback_equals_torchs_and_survives_a_resume(tmp_path):
    model = _model()
    start = {k: np.array(v) for k, v in model.state_dict().items()}
    whole = EMA(model)
    _trainer(model, whole, tmp_path / "whole").train((X, Y), steps=STEPS)
    want, n = _torch_ema(start)
    assert int(np.asarray(whole.ema.n_averaged)) == n == STEPS
    for k, v in want.items():
        np.testing.assert_allclose(np.asarray(whole.ema.module.state_dict()[k]), v,
                                   rtol=1e-5, atol=1e-6)

    cut = tmp_path / "cut"
    model = _model()
    _trainer(model, EMA(model), cut).train((X, Y), steps=5)
    model = _model()  # a fresh process's objects: the weights and the EMA from the checkpoint
    resumed = EMA(model)
    _trainer(model, resumed, cut, resume=True).train((X, Y), steps=STEPS)
    assert int(np.asarray(resumed.ema.n_averaged)) == STEPS
    for k, v in whole.ema.module.state_dict().items():
        np.testing.assert_array_equal(np.asarray(resumed.ema.module.state_dict()[k]),
                                      np.asarray(v))


def test_several_optimizers_are_refused_saying_what_to_do():
    model = _model()
    with pytest.raises(TypeError, match=r"optimizer is 2 optimizers \(list\); the Trainer "
                                        r"makes one optimizer step of one loss: a GAN's .*"
                                        r"parameter groups"):
        skiff.Trainer(model, optimizer=[skiff.optim.Adam(model[0].parameters()),
                                        skiff.optim.Adam(model[2].parameters())])


class _Counter:
    """A state of skiff Tensors (what a user's own EMA of ``p.detach()`` copies holds)."""

    def __init__(self):
        self.seen = skiff.tensor(np.zeros(2, "f4"))

    def on_step_end(self, trainer, metrics):
        self.seen = self.seen + 1

    def state_dict(self):
        return {"seen": [self.seen]}

    def load_state_dict(self, state):
        self.seen = skiff.tensor(state["seen"][0])


def test_a_callback_state_of_tensors_is_kept_as_arrays(tmp_path):
    """It failed the run at its first checkpoint ("cannot store Tensor at
    /callbacks/0:_Counter/seen/0 in a checkpoint")."""
    counter = _Counter()
    skiff.Trainer(_model(), batch_size=BATCH, callbacks=[counter],
                  checkpoint_dir=tmp_path).train((X, Y), steps=3)
    again = _Counter()
    skiff.Trainer(_model(), batch_size=BATCH, callbacks=[again], checkpoint_dir=tmp_path,
                  resume=True).train((X, Y), steps=5)
    np.testing.assert_array_equal(again.seen.numpy(), [5.0, 5.0])
