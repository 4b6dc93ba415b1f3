"""BatchNorm on 2 data-parallel ranks: the losses are torch ``DistributedDataParallel``'s
(each rank normalises its own rows) and the running statistics are the same on every rank.

Found by a user: after ``Trainer(cnn, strategy="auto")`` on 2 ranks the ranks held different
running means and variances (each folded in its own rows), so ``predict`` on rank 1 differed
from rank 0 (0.1157 against 0.1202 on one output). They are now averaged over the ranks
after each step (weighted by rows). The oracle is torch running each rank's rows from the
same state, its loss and gradient the ranks' mean, its running statistics the mean of the
ranks' updates.
"""

from __future__ import annotations

import pytest

from .mpi_util import run_mpi

pytest.importorskip("torch")


@pytest.mark.mpi
def test_batchnorm_statistics_agree_over_ranks_and_with_torch_ddp():
    results = run_mpi(2, "bn_check.py", timeout=120)
    for res in results:
        assert res["world"] == 2 and res["steps"] == res["torch_steps"] == 4, res
        assert res["loss"] < 1e-5, res
        assert res["running_mean"] < 1e-5, res
        assert res["running_var"] < 1e-5, res
    assert results[0]["predict"] == results[1]["predict"]
