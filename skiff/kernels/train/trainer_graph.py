"""When the Trainer replays its step as a CUDA graph (:mod:`.core.graph`).

``Trainer(cuda_graph=None)`` (the default) captures the step when the run can be captured:
one GPU (``SingleDevice``), AdamW, no gradient accumulation, no mixed precision, parameters
of one float type, and a model built only of skiff's own modules (their forward passes keep
no Python state between steps; a replay repeats the recorded kernels with the recorded
scalars, so a model of one's own that, say, anneals a constant from a Python step counter
would be replayed with the first value: ``cuda_graph=True`` says it does not); ``True``
captures any model and says in the log why a run cannot be; ``False`` never captures.
"""

from __future__ import annotations

from .core.graph import StepGraph
from .strategy import SingleDevice

__all__ = ["make_step_graph"]


def make_step_graph(spec, strategy, model, optimizer, loss_fn, *, clip, grad_accum, mixed,
                    log, clip_value=None) -> StepGraph | None:
    """A :class:`StepGraph` for this run, or None (``log`` hears why when ``spec`` is True)."""
    if spec is False:
        return None
    foreign = sorted({type(m).__qualname__ for m in model.modules()
                      if not type(m).__module__.startswith("skiff.")})
    if type(strategy) is not SingleDevice:
        reason = f"the strategy is {type(strategy).__name__} (one device is captured)"
    elif clip_value is not None:
        reason = "clip_by='value' (the captured step clips by the norm only)"
    elif foreign and spec is None:
        return None  # a module of the user's own: captured only when asked (cuda_graph=True)
    else:
        reason = StepGraph.unsupported(model, optimizer, strategy.device,
                                       grad_accum=grad_accum, mixed=mixed)
    if reason is not None:
        if spec is True:
            log(f"cuda_graph=True: the step runs eagerly: {reason}")
        return None
    return StepGraph(model, optimizer, loss_fn, clip=clip, log=log)
