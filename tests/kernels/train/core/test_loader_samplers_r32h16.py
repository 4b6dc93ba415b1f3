"""Round 32 (h16): ``skiff.utils.data.DataLoader``'s ``sampler`` / ``batch_sampler`` are
torch's objects (a SequentialSampler or RandomSampler, a BatchSampler over it) when not given,
as in torch 2.13 (they were None), and a Trainer handed such a plain loader still trains on
its dataset and batch size, with torch's losses; a loader with a sampler of the user's own is
still refused."""

from __future__ import annotations

import numpy as np
import pytest

import skiff
from tests.kernels.train.test_torch_habits_r30 import _data, _model, _torch_losses

torch = pytest.importorskip("torch")
sud, tud = skiff.utils.data, torch.utils.data


@pytest.mark.parametrize("kw", [dict(batch_size=3), dict(batch_size=3, shuffle=True),
                                dict(batch_size=4, drop_last=True), dict(batch_size=None),
                                dict(sampler=list(range(9, -1, -1)), batch_size=2),
                                dict(batch_sampler=[[0, 1], [5], [2, 3, 4]])])
def test_sampler_objects_as_torch(kw):
    ours, theirs = sud.DataLoader(range(10), **kw), tud.DataLoader(range(10), **kw)
    for name in ("sampler", "batch_sampler"):
        a, b = getattr(ours, name), getattr(theirs, name)
        assert type(a).__name__ == type(b).__name__, name
        if b is not None:
            assert len(a) == len(b)
    if theirs.batch_sampler is not None and not kw.get("shuffle"):
        assert [list(map(int, x)) for x in ours.batch_sampler] == \
            [list(map(int, x)) for x in theirs.batch_sampler]
    if not kw.get("shuffle"):
        assert [np.asarray(b).tolist() for b in ours] == [np.asarray(b).tolist() for b in theirs]
    assert len(ours) == len(theirs)


def test_the_brief_case():
    assert type(sud.DataLoader(range(10), batch_size=3).sampler).__name__ == "SequentialSampler"
    assert isinstance(sud.DataLoader(range(10), shuffle=True).sampler, sud.RandomSampler)


def test_a_plain_skiff_loader_trains_as_torch():
    x, y = _data()
    loader = sud.DataLoader(sud.TensorDataset(skiff.tensor(x), skiff.tensor(y)), batch_size=8)
    model, start = _model()
    trainer = skiff.Trainer(model, optimizer="sgd", lr=0.05, schedule="constant", clip=None,
                            shuffle=False)
    result = trainer.train(loader, epochs=2)
    batches = [(torch.tensor(x[i:i + 8]), torch.tensor(y[i:i + 8]))
               for _ in range(2) for i in range(0, 40, 8)]
    want = _torch_losses(start, batches, torch.nn.CrossEntropyLoss(),
                         lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9))
    np.testing.assert_allclose(result.losses, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kw", [dict(sampler=sud.SequentialSampler(range(40)), batch_size=8),
                                dict(batch_sampler=sud.BatchSampler(range(40), 8, False)),
                                dict(batch_size=8, collate_fn=lambda b: b)])
def test_a_loader_with_its_own_sampler_is_refused(kw):
    x, y = _data()
    loader = sud.DataLoader(sud.TensorDataset(skiff.tensor(x), skiff.tensor(y)), **kw)
    with pytest.raises(TypeError, match="its own"):
        skiff.Trainer(_model()[0]).train(loader, epochs=1)
