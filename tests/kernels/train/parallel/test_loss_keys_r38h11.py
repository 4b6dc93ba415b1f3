"""Round 38 (h11) on 2 real ranks: a loss function's dict whose keys differ between ranks.

``Trainer(loss=fn)`` with ``fn -> {"loss", "mae", ...}`` averages the dict's other values
over the data-parallel ranks in one all-reduce (round 38, h5), which needs the same names on
every rank; a name only some ranks' batches give (a per-class score of a class a rank's rows
lack) made the ranks all-reduce arrays of different lengths. The ranks now agree on the
names (one checksum all-reduce) and, where they differ, join them: a name's value is the
mean over the ranks that gave it, each weighed by its share of the batch's rows, as one
process averages a name over the micro-batches that gave it.

Oracle: the loss and MAE of a torch 2.13 loop over the whole batches (h5's), and the value
only rank 0 gives (2.5) unchanged by the ranks' weights (a plain mean over the two ranks
would say 1.25, the rows' weights 1.67 on the 2 / 1 last batch)."""

from __future__ import annotations

import pytest

from .mpi_util import run_mpi
from .test_ranks_user_r38h5 import _torch_steps


def _check(got, grad_accum):
    import numpy as np

    want = _torch_steps(grad_accum)
    np.testing.assert_allclose(got["losses"], want[:, 0], rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(got["mae"], want[:, 1], rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose([s[0] for s in got["seen"]], want[:, 1], rtol=2e-5, atol=1e-6)
    assert got["only0"] == [2.5] * len(want)
    assert [s[1] for s in got["seen"]] == [2.5] * len(want)


@pytest.fixture(scope="module")
def launched():
    """Both cases in one launch (round 42 h17: a launch each paid two interpreters)."""
    return run_mpi(2, "loss_keys_r38h11_check.py", "dp:1,zero2:2", timeout=150)


@pytest.mark.mpi
@pytest.mark.parametrize("strategy,grad_accum", [("dp", "1"), ("zero2", "2")])
def test_a_name_one_rank_lacks_is_the_mean_of_the_ranks_that_give_it(strategy, grad_accum,
                                                                      launched):
    assert sorted(r["rank"] for r in launched) == [0, 1]
    for got in launched:
        _check(got[f"{strategy}:{grad_accum}"], int(grad_accum))
