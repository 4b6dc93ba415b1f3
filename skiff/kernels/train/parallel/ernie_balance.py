"""The MoE load-balancing loss of ERNIE-4.5 over data-parallel ranks, as one process computes
it on their whole batch (the reference adds it when ``output_router_logits``)."""

from __future__ import annotations

import numpy as np

from .comm import Comm

__all__ = ["balance_over", "balance_over_ranks"]


def balance_over_ranks(model, comm: Comm, weight=None) -> None:
    """:func:`balance_over` for an ERNIE-4.5 MoE model; any other model is left alone (the
    strategies call it on whatever model they get)."""
    from .ernie_tensor import is_ernie

    if is_ernie(model) and model.config.is_moe:
        balance_over(model, comm, weight)


def balance_over(model, comm: Comm, weight=None) -> None:
    """Make an ERNIE MoE model's load-balancing loss (added when ``output_router_logits``)
    that of the whole batch of the data-parallel group ``comm``, as one process computes it
    on that batch: the top-k counts and the token count are summed over the ranks, and each
    rank's term is its own tokens' router probabilities times ``comm.size``, so that the
    ranks' mean (of the values and of the gradients, as data parallel averages them) is the
    whole batch's loss. ``weight()``: the factor the strategy scales this rank's whole loss
    by (its share of the learned tokens of packed data), which this term is divided by, so
    that it stays the whole batch's. A dense model, or one rank: nothing to do."""
    cfg = getattr(model, "config", None)
    if not (getattr(cfg, "is_moe", False) and cfg.output_router_logits and comm.size > 1):
        return
    E = cfg.moe_num_experts

    def load_balancing_loss():
        counts, prob_sum, rows = model.balancing_parts()
        total = comm.allreduce(np.concatenate([counts, [rows]]).astype(np.float64))
        share = total[:E] / total[E]
        share = prob_sum.xp.asarray(share).astype(prob_sum.dtype)
        w = weight() if weight is not None else 1.0
        # a rank running a stand-in row (weight 0, no rows of the batch) adds nothing
        scale = E * comm.size / float(total[E]) / w if w else 0.0
        return (prob_sum * share).sum() * scale

    model.load_balancing_loss = load_balancing_loss
