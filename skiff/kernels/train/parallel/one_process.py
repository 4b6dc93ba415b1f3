"""A checkpoint written on several ranks, read by one process (``--resume`` on one rank of a
run that was stopped on two): a one-rank data-parallel group reads it, which joins ZeRO's
flat slices and puts a split model's pieces together."""

from __future__ import annotations

from .comm import SelfComm
from .data_parallel import DataParallel

__all__ = ["read_sharded"]


def read_sharded(model, directory, *, device=None, reporter=None) -> tuple[dict | None, bool]:
    """``(state, fresh)``: the newest sharded checkpoint in ``directory`` for ``model`` in
    one process (None: none), and whether its optimizer state could not be kept (a split
    model's checkpoint without moments: they start afresh)."""
    dp = DataParallel(SelfComm()).bind(device=device)
    dp.reporter = reporter
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    dp.model, dp.names, dp.params = model, [n for n, _ in named], [p for _, p in named]
    state = dp.load_checkpoint(directory)
    if state is not None and reporter is not None:
        plan = state.get("plan") or {}
        reporter.log(f"checkpoint of step {state.get('step')} was written on "
                     f"{plan.get('world_size', 'several')} ranks "
                     f"({plan.get('strategy', '?')}): read in one process")
    return state, dp._fresh_optimizer
