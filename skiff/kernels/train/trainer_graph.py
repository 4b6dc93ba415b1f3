"""When the Trainer replays its step as a CUDA graph (:mod:`.core.graph`).

``Trainer(cuda_graph=None)`` (the default) captures the step when the run can be captured:
one GPU (``SingleDevice``), AdamW, no gradient accumulation, no mixed precision, parameters
of one float type; ``True`` says in the log why a run cannot be; ``False`` never captures.
"""

from __future__ import annotations

from .core.graph import StepGraph
from .strategy import SingleDevice

__all__ = ["make_step_graph"]


def make_step_graph(spec, strategy, model, optimizer, loss_fn, *, clip, grad_accum, mixed,
                    log) -> StepGraph | None:
    """A :class:`StepGraph` for this run, or None (``log`` hears why when ``spec`` is True)."""
    if spec is False:
        return None
    if type(strategy) is not SingleDevice:
        reason = f"the strategy is {type(strategy).__name__} (one device is captured)"
    else:
        reason = StepGraph.unsupported(model, optimizer, strategy.device,
                                       grad_accum=grad_accum, mixed=mixed)
    if reason is not None:
        if spec is True:
            log(f"cuda_graph=True: the step runs eagerly: {reason}")
        return None
    return StepGraph(model, optimizer, loss_fn, clip=clip, log=log)
