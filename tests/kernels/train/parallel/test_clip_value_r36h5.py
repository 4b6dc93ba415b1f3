"""Round 36 (h5): gradient clipping by value (``Trainer(clip=C, clip_by="value")``).

The Trainer clipped the global norm only; torch's ``clip_grad_value_`` (Lightning's
``gradient_clip_algorithm="value"``, Keras' ``clipvalue``) had no way in
(``gradient_clip_algorithm`` was a bare unknown keyword). Now each element of the gradients
the optimizer applies is bounded to ``[-C, C]``: the ranks' averaged gradient under dp, a
ZeRO rank's slice of it, the unscaled float32 masters in mixed precision.

The oracle: a torch 2.13 float64 loop (SGD with momentum) that averages the ranks' halves'
gradients as DDP does and calls ``clip_grad_value_`` before each step; the clip binds (the
bound is far below the gradients' size: without it the run is another)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch

import skiff

from .mpi_util import HERE, run_mpi

sys.path.insert(0, str(HERE / "scripts"))
import clip_value_r36h5_check as check  # noqa: E402

SCRIPT = "clip_value_r36h5_check.py"


def _torch_loop(ranks: int, clip: float | None = check.CLIP):
    x, y = check.data()
    start = check.model().state_dict()
    twin = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(),
                               torch.nn.Linear(16, 1)).double()
    twin.load_state_dict({k: torch.tensor(np.asarray(v), dtype=torch.float64)
                          for k, v in start.items()})
    opt = torch.optim.SGD(twin.parameters(), lr=check.LR, momentum=0.9)
    losses = []
    for epoch in range(check.EPOCHS):
        order = np.random.default_rng([check.SEED, epoch]).permutation(len(x))
        for i in range(0, len(x), check.BATCH):
            glob = order[i:i + check.BATCH]
            loss = sum(torch.nn.functional.mse_loss(
                twin(torch.tensor(x[glob[r::ranks]], dtype=torch.float64)),
                torch.tensor(y[glob[r::ranks]], dtype=torch.float64))
                for r in range(ranks)) / ranks
            opt.zero_grad()
            loss.backward()
            if clip is not None:
                torch.nn.utils.clip_grad_value_(twin.parameters(), clip)
            opt.step()
            losses.append(loss.item())
    return losses, {k: v.detach().numpy() for k, v in twin.state_dict().items()}


def _check(got, ranks, rtol=2e-5, atol=2e-5):
    losses, w = _torch_loop(ranks)
    np.testing.assert_allclose(got["losses"], losses, rtol=rtol, atol=atol)
    for k, v in w.items():
        np.testing.assert_allclose(np.asarray(got["w"][k]), v, atol=atol)


def test_one_process_equals_torchs_clip_grad_value():
    got = check.main("single")
    _check(got, 1)
    _, free = _torch_loop(1, clip=None)  # the bound binds: unclipped is another run
    assert not all(np.allclose(got["w"][k], v, atol=1e-2) for k, v in free.items())
    with pytest.raises(TypeError, match="did you mean 'clip_by'"):
        skiff.Trainer(check.model(), gradient_clip_algorithm="value")
    with pytest.raises(ValueError, match="clip_by is 'norm'"):
        skiff.Trainer(check.model(), clip_by="max")


def test_bf16_mixed_clips_the_masters():
    """bf16-mixed steps the float32 masters: clipped there (unclipped, the run diverges);
    the losses within bf16's rounding of torch's float64 ones."""
    got = check.main("single", "bf16-mixed")
    losses, _ = _torch_loop(1)
    np.testing.assert_allclose(got["losses"], losses, rtol=1e-2)


@pytest.fixture(scope="module")
def launched():
    """dp and zero2 in one launch (round 42 h17: a launch each paid two interpreters)."""
    return run_mpi(2, SCRIPT, "dp,zero2", timeout=150)


@pytest.mark.mpi
@pytest.mark.parametrize("strategy", ["dp", "zero2"])
def test_two_ranks_clip_the_averaged_gradient(strategy, launched):
    assert sorted(r["rank"] for r in launched) == [0, 1]
    for got in launched:
        _check(got[strategy], 2)
