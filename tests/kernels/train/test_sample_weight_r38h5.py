"""Round 38 (h5): a dataset of ``(x, y, weight)`` items (Keras' ``(x, y, sample_weight)``; a
torch user's loop writes ``(F.cross_entropy(model(x), y, reduction="none") * w).mean()``).
The Trainer read such a batch as two inputs and a target, ``model(x, y)`` against ``w``:
"Sequential.forward() takes 2 positional arguments but 3 were given". Now a loss of three
arguments, ``loss=fn(output, target, weight)``, gets the weights (the model gets ``x``), in
training and in ``evaluate``; without one, the error says how a batch is read and what to
give. The oracle: a torch 2.13 loop of the same weighted loss from the same weights."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff
from skiff import nn

LR, BATCH, EPOCHS = 0.1, 8, 3
rng = np.random.default_rng(0)
X = rng.normal(size=(32, 5)).astype("f4")
Y = (X[:, 0] + X[:, 1] > 0).astype("i8") + (X[:, 2] > 0.5)
W = rng.random(32).astype("f4") * 2


class _Weighted:
    def __len__(self):
        return len(X)

    def __getitem__(self, i):
        return X[i], Y[i], W[i]


def _loss(out, y, w):
    return (nn.functional.cross_entropy(out, y, reduction="none") * w).mean()


def _model():
    skiff.seed(0)
    return nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 3))


def test_a_loss_of_three_arguments_takes_each_samples_weight():
    model = _model()
    twin = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    twin.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in model.state_dict().items()})
    trainer = skiff.Trainer(model, optimizer="sgd", lr=LR, batch_size=BATCH, loss=_loss,
                            schedule="constant", clip=None, shuffle=False)
    result = trainer.train(_Weighted(), epochs=EPOCHS)
    opt = torch.optim.SGD(twin.parameters(), lr=LR, momentum=0.9)
    x, y, w = torch.tensor(X), torch.tensor(Y), torch.tensor(W)
    losses = []
    for _ in range(EPOCHS):
        for i in range(0, len(X), BATCH):
            loss = (torch.nn.functional.cross_entropy(twin(x[i:i + BATCH]), y[i:i + BATCH],
                                                      reduction="none") * w[i:i + BATCH]).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    np.testing.assert_allclose(result.losses, losses, rtol=1e-5)
    with torch.no_grad():
        want = (torch.nn.functional.cross_entropy(twin(x), y, reduction="none") * w).mean()
    got = trainer.evaluate(_Weighted(), batch_size=len(X))
    np.testing.assert_allclose(got["val_loss"], want.item(), rtol=1e-5)
    np.testing.assert_allclose(trainer.predict(_Weighted()), twin(x).detach().numpy(),
                               rtol=1e-4, atol=1e-6)


def test_three_arrays_for_a_model_of_one_input_say_how_to_weigh_samples():
    with pytest.raises(TypeError, match=r"batches of 3 arrays go to the model as model\(x1, "
                                        r"x2\), the last array the target, but Sequential"
                                        r"\.forward takes 1 input; .*loss=fn\(output, target, "
                                        r"weight\)"):
        skiff.Trainer(_model(), batch_size=BATCH).train(_Weighted(), epochs=1)


def test_other_libraries_names_for_weights_smoothing_and_schedulers_say_skiffs():
    """Keras' ``fit(..., sample_weight=w)``, transformers' ``label_smoothing_factor`` and
    Lightning's ``scheduler`` were bare "unexpected keyword argument"s."""
    with pytest.raises(TypeError, match=r"'sample_weight' \(did you mean 'loss'\? .*"
                                        r"loss=fn\(output, target, weight\) on \(x, y, "
                                        r"weight\) items"):
        skiff.Trainer(_model()).train((X, Y), sample_weight=W)
    with pytest.raises(TypeError, match=r"'label_smoothing_factor' .*loss=skiff\.nn\."
                                        r"CrossEntropyLoss\(label_smoothing=\.\.\.\)"):
        skiff.Trainer(_model(), label_smoothing_factor=0.1)
    with pytest.raises(TypeError, match=r"'scheduler' \(did you mean 'schedule'\?"):
        skiff.Trainer(_model(), scheduler=None)
