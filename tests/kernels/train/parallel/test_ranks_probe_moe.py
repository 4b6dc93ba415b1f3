"""gpt-moe on 2 ranks trains as one process: dp and ep through the Trainer.

Found by a user moving ``train gpt-moe`` to ``--np 2``: the first loss was 0.5% off one
process (each rank's MoE layers took the expert capacity and the Switch balancing loss over
its own tokens) and the second step further off (the plan check's micro-run deep-copied the
model, whose loss was a closure over the original: it ran the original and left gradients in
it before the first step). Now the layers route over the whole batch of the data-parallel
ranks (``moe.route_over``) and the loss is a method of the model. The oracle is the same
Trainer on one device; the last batch of each epoch has one row (a stand-in row on rank 1).
"""

from __future__ import annotations

from .mpi_util import run_mpi


def test_gpt_moe_on_two_ranks_equals_one_device():
    results = run_mpi(2, "moe_trainer_check.py", "dp", "ep", timeout=200)
    for res in results:
        for kind in ("dp", "ep"):
            got = res[kind]
            assert got["steps"][0] == got["steps"][1], (kind, got)
            assert got["loss"] < 2e-6, (kind, got)
            assert got["weights"] < 1e-5, (kind, got)
