"""Round 29: ranks given different data sets are refused on every rank before the first step.

Found as a user: a torch habit is one file per rank (``data_rank{r}.npz``) without a sampler.
Passed to ``Trainer.train`` under ``mpiexec -n 2``, files of 64 and 40 rows hung after rank
1's 5 steps (rank 0 waited in the all-reduce of step 6 until the kill); files of the same
length trained without a word on the even rows of rank 0's file and the odd rows of rank
1's. The Trainer shards every batch of the dataset it is given (as DistributedSampler
does), so every rank must pass the whole, same data; ``parallel/same_data.py`` checks the
lengths and, for arrays, a hash of 16 rows, and fails on every rank at once, naming each
rank's size and what to do. The oracle for the runs that must still train (the same data as
arrays and as a list of samples; validation sets of each rank's own, which round 28 allows)
is one process.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from .mpi_util import HERE, run_mpi

sys.path.insert(0, str(HERE / "scripts"))
from same_data_r29_check import arrays  # noqa: E402


def _one_process():
    import skiff
    from skiff.nn import Linear, ReLU, Sequential

    skiff.seed(0)
    tr = skiff.Trainer(Sequential(Linear(3, 16), ReLU(), Linear(16, 1)), lr=0.01,
                       batch_size=8, seed=0)
    return [h["loss"] for h in tr.train(arrays(64), epochs=1).history]


@pytest.mark.mpi
def test_ranks_with_different_data_are_refused_on_every_rank():
    results = run_mpi(2, "same_data_r29_check.py", timeout=90)
    for case in ("lengths", "rows"):
        errors = [r[case].get("error") for r in results]
        assert errors[0] is not None and errors[0] == errors[1], (case, results)
    lengths = results[0]["lengths"]["error"]
    assert "training sets of different sizes (rank 0: 64, rank 1: 40 items)" in lengths
    assert "whole data set" in lengths
    assert "different training sets of the same size (64 items each" in \
        results[0]["rows"]["error"]
    assert all("losses" in r["val"] for r in results), results  # each rank's own val set
    want = _one_process()
    for r in results:
        for case in ("samples", "clean"):
            np.testing.assert_allclose(r[case]["losses"], want, rtol=1e-5, err_msg=case)
