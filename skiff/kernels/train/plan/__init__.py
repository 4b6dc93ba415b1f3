"""The ``strategy="auto"`` planner: an explicit cost model and a search over layouts.

``plan(model, devices=8, device_memory="80GB")`` answers how to train a model on a cluster
(real or hypothetical) and why; ``resolve(strategy, model, world_size=...)`` is what the
Trainer calls: it plans for ``"auto"`` and checks, never changes, an explicit strategy.
"""

from .cost import GB, PRESETS, Choice, ClusterSpec, Estimate, ModelSpec, estimate, model_spec
from .planner import (
    NAMED_STRATEGIES,
    Plan,
    cluster_for,
    measure_flops,
    parse_strategy,
    plan,
    resolve,
)

__all__ = ["GB", "NAMED_STRATEGIES", "PRESETS", "Choice", "ClusterSpec", "Estimate",
           "ModelSpec", "Plan", "cluster_for", "estimate", "measure_flops", "model_spec",
           "parse_strategy", "plan", "resolve"]
