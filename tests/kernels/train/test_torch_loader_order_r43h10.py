"""Round 43 (h10): a torch DataLoader that shuffles from the user's generator
(``DataLoader(ds, shuffle=True, generator=torch.Generator().manual_seed(7))``, a
``WeightedRandomSampler(..., generator=g)`` balancing classes) is read in torch's own order:
the Trainer trained on its own seeded order before, so a script's losses left torch's at the
first step and a seed sweep over ``g`` changed nothing. A run cut mid-epoch and resumed with
the loader built again from the same seed reads what the uninterrupted run reads.

Oracle: torch 2.13's own loaders iterated over the same dataset (the items each reads, in
order) and a torch loop in float64 from the same first weights (its losses).
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import skiff  # noqa: E402
from skiff import nn  # noqa: E402

N, D, C, B = 10, 3, 2, 4
X = np.random.default_rng(0).standard_normal((N, D))
Y = np.array([0, 0, 0, 0, 0, 0, 0, 1, 1, 0])  # imbalanced: the sampler balances them


class Logged(torch.utils.data.Dataset):
    """The items, each read noted (the order the loader drew)."""

    def __init__(self):
        self.read = []

    def __len__(self):
        return N

    def __getitem__(self, i):
        self.read.append(int(i))
        return torch.tensor(X[i]), int(Y[i])


def _loader(ds, kind, seed=7):
    g = torch.Generator().manual_seed(seed)
    if kind == "shuffle":
        return torch.utils.data.DataLoader(ds, batch_size=B, shuffle=True, generator=g)
    w = 1.0 / np.bincount(Y)[Y]
    sampler = torch.utils.data.WeightedRandomSampler(w, 12, replacement=True, generator=g)
    return torch.utils.data.DataLoader(ds, batch_size=B, sampler=sampler)


def _torch_run(kind, steps, w0):
    ds = Logged()
    lin = torch.nn.Linear(D, C).double()
    lin.load_state_dict({k: torch.tensor(v) for k, v in w0.items()})
    opt = torch.optim.SGD(lin.parameters(), lr=0.5)
    losses, loader = [], _loader(ds, kind)
    while len(losses) < steps:
        for xb, yb in loader:
            loss = torch.nn.functional.cross_entropy(lin(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
            if len(losses) == steps:
                break
    return ds.read, losses


def _skiff_run(kind, steps, ck=None, stop=None, resume=False):
    skiff.manual_seed(0)
    lin = nn.Linear(D, C).double()
    ds = Logged()
    trainer = skiff.Trainer(lin, optimizer=lambda p: skiff.optim.SGD(p, lr=0.5), clip=None,
                            schedule="constant", checkpoint_dir=ck,
                            checkpoint_every=1 if ck else None, resume=resume,
                            callbacks=[lambda m: m["step"] >= stop] if stop else None)
    result = trainer.train(_loader(ds, kind), steps=steps)
    return ds.read, [h["loss"] for h in result.history], lin


@pytest.mark.parametrize("kind", ["shuffle", "weighted"])
def test_torch_order_from_the_generator_and_a_resume_mid_epoch(tmp_path, kind):
    steps = 7  # epochs of 3 batches: the cut at step 4 is in the second epoch
    read, losses, lin = _skiff_run(kind, steps)
    skiff.manual_seed(0)  # the first weights of the skiff runs
    w0 = {k: np.asarray(v) for k, v in nn.Linear(D, C).double().state_dict().items()}
    t_read, t_losses = _torch_run(kind, steps, w0)
    assert read == t_read  # the items, in torch's order (skiff's own order before)
    np.testing.assert_allclose(losses, t_losses, rtol=0, atol=1e-12)
    cut, _, _ = _skiff_run(kind, steps, tmp_path, stop=4)
    rest, rest_losses, _ = _skiff_run(kind, steps, tmp_path, resume=True)
    assert cut + rest == t_read  # mid-epoch resume: the samples the whole run reads
    np.testing.assert_allclose(rest_losses[-3:], t_losses[-3:], rtol=0, atol=1e-12)


def test_a_sampler_with_replacement_and_num_samples_keeps_its_epoch(tmp_path):
    """``RandomSampler(ds, replacement=True, num_samples=6)`` without a generator: epochs of
    6 draws with replacement, as torch's loader gives (``len(loader)`` batches); it was read
    as a shuffle of all 10 items (3 batches an epoch). Cut and resumed: the same items."""

    def loader(ds):
        return torch.utils.data.DataLoader(ds, batch_size=B, sampler=torch.utils.data.
                                           RandomSampler(ds, replacement=True, num_samples=6))

    def run(ck, stop=None, resume=False):
        skiff.manual_seed(0)
        ds = Logged()
        trainer = skiff.Trainer(nn.Linear(D, C).double(), checkpoint_dir=ck, resume=resume,
                                checkpoint_every=1,
                                callbacks=[lambda m: m["step"] >= stop] if stop else None)
        return ds.read, trainer.train(loader(ds), epochs=3)

    read, result = run(tmp_path / "a")
    assert result.steps == 3 * len(loader(Logged())) == 6  # torch's 2 batches an epoch
    assert len(read) == 18  # 6 draws an epoch (10 items an epoch before)
    cut, _ = run(tmp_path / "b", stop=3)
    rest, _ = run(tmp_path / "b", resume=True)
    assert cut + rest == read


def test_val_split_still_refuses_a_weighted_sampler_drawn_from_a_generator():
    """Its weights are for every item (as without a generator: round 36's refusal)."""
    with pytest.raises(ValueError, match="WeightedRandomSampler"):
        skiff.Trainer(nn.Linear(D, C).double()).train(_loader(Logged(), "weighted"),
                                                      epochs=1, val_split=0.2)
