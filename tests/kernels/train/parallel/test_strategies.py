"""Strategies in one process (the one-rank communicator) through the real Trainer, and the
mapping from plans to strategies."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.parallel import SelfComm, strategy_from_plan
from skiff.kernels.train.parallel.data_parallel import DataParallel, ZeRO
from skiff.kernels.train.parallel.hybrid import TensorParallel
from skiff.kernels.train.parallel.moe import ExpertParallel
from skiff.kernels.train.parallel.pipeline import PipelineParallel
from skiff.kernels.train.plan import resolve


def _train(strategy, tmp_path):
    from skiff.kernels.train.core import nn
    from skiff.kernels.train.core import random as train_random
    from skiff.kernels.train.data import ArrayDataset
    from skiff.kernels.train.trainer import Trainer

    train_random.seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 4)).astype(np.float32)
    data = ArrayDataset(x, (x[:, :2] * 2).astype(np.float32))
    trainer = Trainer(model, strategy=strategy, lr=0.01, batch_size=8, seed=0,
                      checkpoint_dir=tmp_path, checkpoint_every=2)
    result = trainer.train(data, steps=5)
    return result, model.state_dict()


# fp16 rounds each gradient (its error fed back next step): a looser, stated tolerance
@pytest.mark.parametrize("make,tol", [(lambda: DataParallel(SelfComm(), compression="fp16"),
                                       1e-4),
                                      (lambda: ZeRO(1, SelfComm()), 1e-6),
                                      (lambda: ZeRO(2, SelfComm()), 1e-6)])
def test_one_rank_strategies_train_like_a_single_device(make, tol, tmp_path):
    ref, want = _train("single", tmp_path / "ref")
    res, got = _train(make(), tmp_path / "dist")
    for k in want:
        np.testing.assert_allclose(got[k], want[k], atol=tol)
    assert res.steps == 5
    # its checkpoints are the sharded kind, committed by a manifest
    assert (tmp_path / "dist" / "latest").exists()
    assert list((tmp_path / "dist").glob("step-*/manifest.json"))


def test_plans_map_to_strategies():
    cases = [("dp", 2, DataParallel), ("zero2", 2, ZeRO), ("dp=1,tp=2", 2, TensorParallel),
             ("dp=2,pp=2", 4, PipelineParallel), ("ep", 2, ExpertParallel)]
    for spec, world, cls in cases:
        model = "gpt-moe-tiny" if spec == "ep" else "gpt-mini"
        strat = strategy_from_plan(resolve(spec, model, world_size=world, global_batch=8))
        assert type(strat) is cls, spec
    with pytest.raises(ValueError, match="is not one skiff runs"):
        strategy_from_plan(resolve("dp=2,tp=2,zero=1", "gpt-mini", world_size=4,
                                   global_batch=8))
