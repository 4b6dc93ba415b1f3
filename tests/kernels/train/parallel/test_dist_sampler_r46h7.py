"""Round 46 (h7) on 2 MPI ranks (one launch): a DDP script's ``DistributedSampler`` loader
(refused before) trains as torch 2.13's DDP loop (its replicas' loaders, ``set_epoch`` each
epoch, the mean of the replicas' mean losses); a stream whose passes differ over the ranks
(it hung: each rank planned its own end) trains every rank on the shortest pass, equal to
torch's loop over passes of those lengths. Round 30's early stopping on ranks validating
4 and 28 rows (``test_early_stop_weighted_r30g.py``'s own launch before) runs in the same
launch, checked as it was. The launch has a hard timeout (a hang fails).
The cases and oracles live in ``scripts/dist_sampler_r46h7_check.py`` (``cases(rank)``,
``check_results``), so another launch can run them too."""

from __future__ import annotations

import importlib.util

import pytest

from .mpi_util import HERE, run_mpi

pytest.importorskip("torch")


def _check_results(results):
    """The script's own ``check_results``, the script loaded by its path (no folder put on
    sys.path)."""
    path = HERE / "scripts" / "dist_sampler_r46h7_check.py"
    spec = importlib.util.spec_from_file_location("dist_sampler_r46h7_check", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.check_results(results)


@pytest.mark.mpi
def test_a_distributed_sampler_and_ranks_passes_of_other_lengths_on_2_ranks():
    _check_results(run_mpi(2, "dist_sampler_r46h7_check.py", timeout=150))
