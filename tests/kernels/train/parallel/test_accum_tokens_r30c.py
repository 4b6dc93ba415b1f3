"""Round 30: a token loss (targets of -100 left out) accumulated over micro-batches on 2
ranks (dp) is the mean over every scored target of the window on both ranks, as
transformers' Trainer with its default ``average_tokens_across_devices=True`` (the count
gathered over the processes, the loss times the processes for DDP's average): one torch
2.13 batch of the window's rows, whatever the rows per rank (an uneven batch of 3), for
packed chat batches with a model loss, and for an epoch's short last window. Before, each
rank's micro-batch means were averaged."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from tests.kernels.train.test_grad_accum_tokens_r30c import torch_run
from tests.kernels.train.token_rows import token_data

from .mpi_util import HERE, run_mpi

sys.path.insert(0, str(HERE / "scripts"))
import accum_tokens_r30c_check as check  # noqa: E402


@pytest.mark.mpi
def test_token_loss_accumulated_on_two_ranks_is_one_big_batch():
    got = run_mpi(2, "accum_tokens_r30c_check.py", timeout=150)
    for name, (rows, batch, accum, steps, _) in check.RUNS.items():
        x, y = token_data(rows=rows, seed=4)
        starts = list(range(0, rows, batch * accum))  # an epoch's windows (one epoch here)
        windows = [[slice(a, min(a + batch * accum, rows))] for a in starts][:steps]
        assert len(windows) == steps
        for r in got:
            want, losses = torch_run(r[name]["start"], windows, x, y)
            np.testing.assert_allclose(r[name]["losses"], losses, rtol=1e-5, err_msg=name)
            for k, v in want.items():
                np.testing.assert_allclose(np.asarray(r[name]["end"][k]), v, rtol=1e-4,
                                           atol=2e-6, err_msg=f"{name} {k}")
