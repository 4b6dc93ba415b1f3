"""How the micro-batches of one optimizer step are weighted (gradient accumulation, and the
data-parallel ranks), as transformers' Trainer weighs them.

A token loss (a mean over the scored targets, those that are not ``-100``: next-token
cross-entropy of skiff's language models, cross-entropy on per-token integer targets,
``nn.CrossEntropyLoss(ignore_index=pad)`` on per-token targets, its ``ignore_index`` left
out) is weighted by the scored targets: each micro-batch's mean counts ``n_i / N``, where
``N`` is the window's scored targets over its micro-batches and the data-parallel ranks
(transformers' ``num_items_in_batch`` with ``average_tokens_across_devices=True``). The
step's gradient and loss are then those of one batch of all the window's rows, however the
scored tokens fall on the micro-batches: a micro-batch of 4 assistant tokens no longer weighs
as much as one of 23.

Other losses (one value per sample: classification of rows, regression, a loss function of
one's own, class weights) keep the rule of ``loss / grad_accum`` per micro-batch, as torch's
accumulation loop writes it (a short last micro-batch counts as a full one). With class
weights that is the mean of each micro-batch's weighted mean, and dp's ranks are weighed by
the same rule (DDP: each rank's weighted mean, the gradients averaged), so ``--np 2`` with
``grad_accum=2`` is a step of 4 parts' weighted means, as DDP with ``no_sync`` accumulation
(``test_class_weight_accum_r36h5.py``).
"""

from __future__ import annotations

import numpy as np

from .data import PackedBatch

__all__ = ["IGNORE_INDEX", "scored_targets", "window_scales"]

IGNORE_INDEX = -100  # the targets cross-entropy leaves out (torch's and transformers' default)


def _array(x):
    return np.asarray(getattr(x, "_data", x))


def _own_token_loss(model) -> bool:
    """Whether ``model.loss(batch)`` is a skiff language model's: the mean next-token
    cross-entropy over the targets that are not -100."""
    loss = getattr(type(model), "loss", None)
    return callable(loss) and getattr(loss, "__module__", "").startswith(
        "skiff.kernels.train.models")


def scored_targets(model, loss_spec, class_weighted: bool, batch) -> int | float | None:
    """How many targets of the host ``batch`` the loss averages over, for a token loss (the
    sum of their class weights for ``nn.CrossEntropyLoss(weight=w)``); None for a loss of
    one value per sample (or one whose normaliser is not known)."""
    if class_weighted:
        return None
    own = _own_token_loss(model) and loss_spec == "auto"
    if isinstance(batch, PackedBatch):
        if own or (loss_spec == "auto" and callable(getattr(model, "loss", None))):
            return int((_array(batch.targets) != IGNORE_INDEX).sum())
        return None
    if isinstance(batch, dict):
        from .losses import TARGET_KEYS, calls_with_labels, takes_batch_keywords

        if own and calls_with_labels(model, batch):
            return _shifted_labels(batch)
        if not own and loss_spec == "auto" and takes_batch_keywords(model, batch):
            return None  # model(**batch) of one's own: its normaliser is not known
        y = next((batch[k] for k in TARGET_KEYS if k in batch), None)
    elif isinstance(batch, (tuple, list)) and len(batch) >= 2:
        y = batch[-1]
    else:
        return None
    if y is None:
        return None
    ignore = IGNORE_INDEX
    if own:
        pass  # (x, y) blocks: y holds the next tokens already
    elif _ce_module(loss_spec):
        ignore = int(loss_spec.ignore_index)  # nn.CrossEntropyLoss(ignore_index=pad)
    elif loss_spec not in ("auto", "cross_entropy") or (
            loss_spec == "auto" and callable(getattr(model, "loss", None))):
        return None  # a criterion of one's own, or a model.loss of one's own
    y = _array(y)
    if y.dtype.kind not in "iu":
        return None
    if y.ndim >= 2 and y.shape[-1] == 1:
        y = y.reshape(y.shape[:-1])  # class ids as a column
    if y.ndim < 2:
        return None  # one class per row: a per-sample loss
    keep = y != ignore
    weight = getattr(loss_spec, "weight", None) if not own else None
    if weight is not None:  # CrossEntropyLoss(weight=w): its mean divides by sum(w[y])
        weight = np.asarray(_array(weight), np.float64).reshape(-1)
        ids = y[keep]
        if ids.size and (ids.min() < 0 or ids.max() >= len(weight)):
            return None  # not class ids of the weights: the loss itself says why
        return float(weight[ids].sum())
    return int(keep.sum())


def _ce_module(loss_spec) -> bool:
    """Whether ``loss_spec`` is a cross-entropy module whose mean divides by the targets
    that are not its ``ignore_index`` (``nn.CrossEntropyLoss(ignore_index=pad)``, reduction
    ``mean``; with a class ``weight`` by the sum of their weights): a token loss, as torch's
    criterion over one big batch."""
    return callable(loss_spec) and not isinstance(loss_spec, str) and \
        isinstance(getattr(loss_spec, "ignore_index", None), (int, np.integer)) and \
        getattr(loss_spec, "reduction", "mean") == "mean"


def _shifted_labels(batch: dict) -> int:
    """The labels a skiff open model's ``model(**batch)`` averages over: ``labels[:, 1:]``
    (each position predicts the next, as transformers' causal LM loss) that are not -100 and
    not predicted from a padded position (``attention_mask`` 0)."""
    y = _array(batch["labels"])
    y = y[None] if y.ndim == 1 else y.reshape(len(y), -1)
    scored = y[:, 1:] != IGNORE_INDEX
    mask = batch.get("attention_mask")
    if mask is not None:
        scored &= _array(mask).reshape(y.shape)[:, :-1] != 0
    return int(scored.sum())


def window_scales(strategy, loader, micro: list, counts: list,
                  balance: list | None = None) -> list[float] | None:
    """The factor each micro-batch's loss is multiplied by before backward (on top of what
    the strategy itself applies), so that the step is the mean over every scored target of
    the window on every rank; None for today's ``1 / grad_accum`` (a per-sample loss, no
    scored target at all, or a strategy whose own weighting is not this one's).

    ``micro`` holds ``(host batch, row_weight)`` per micro-batch, ``counts`` their scored
    targets (:func:`scored_targets`). ``balance`` (a list, on several ranks) gets each
    micro-batch's share of its scored targets on this rank times the ranks: the weight an
    MoE balancing term, which one device weighs by the micro-batch's scored targets, is
    divided by (``DataParallel.loss_weight``; it was each rank's own: 2e-6 of the loss at
    ``aux_coef=0.01``, 1.3e-4 at 1)."""
    if any(c is None for c in counts):
        return None
    ranks = int(getattr(loader, "world_size", 1) or 1)
    if ranks == 1:
        total = float(sum(counts))
        return [c / total for c in counts] if total > 0 else None
    from .parallel.data_parallel import DataParallel

    kind = type(strategy)
    if not isinstance(strategy, DataParallel) or \
            kind.forward_backward is not DataParallel.forward_backward or \
            kind._token_weight is not DataParallel._token_weight:
        return None  # a pipeline weighs its micro-batches itself
    comm = strategy._comm()
    if comm.size != ranks:
        return None
    mine = np.array([0.0 if rw == 0 else float(c) for (_, rw), c in zip(micro, counts)])
    per_batch = comm.allreduce(mine, "sum")  # each micro-batch's scored targets, all ranks
    total = float(per_batch.sum())
    if total <= 0:
        return None
    scales = []
    for (batch, rw), n, n_all in zip(micro, mine, per_batch):
        wanted = n * ranks / total  # the reducer averages over the ranks: times ranks
        # what DataParallel.forward_backward multiplies by itself
        if isinstance(batch, PackedBatch) and n_all > 0:
            applied = n * ranks / n_all
        elif rw is not None and rw != 1.0:
            applied = float(rw)
        else:
            applied = 1.0
        # a Python float: a numpy float64 made the loss and the backward float64 (NumPy 2's
        # promotion), so a rank's all-to-all of MoE gradients sent 8-byte rows where its
        # peer's expected 4 (expert parallelism broke on a stand-in row, round 30)
        scales.append(float(wanted / applied) if applied != 0 else 0.0)
        if balance is not None:
            balance.append(float(n * ranks / n_all) if n_all > 0 else 0.0)
    return scales
