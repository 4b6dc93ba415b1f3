"""``Trainer(class_weight=...)``: cross-entropy with a weight per class, as torch's
``nn.CrossEntropyLoss(weight=...)`` (the mean divides by the targets' weights).

``"balanced"`` is scikit-learn's meaning: ``n_samples / (n_classes * bincount(y))`` over the
classes the training targets hold (an output class they lack weighs 1); a dict
``{class id: weight}`` (Keras' form) leaves the classes it does not name at 1; an array gives
one weight per output class.
"""

from __future__ import annotations

import numpy as np

__all__ = ["check_class_weight", "training_targets", "balanced_weights", "WeightedCE",
           "ce_module"]


def check_class_weight(spec, loss_spec, model):
    """``spec`` checked when the Trainer is made: None, ``"balanced"``, a dict of class ids or
    a 1-D array of finite weights >= 0 (returned as float64)."""
    if spec is None:
        return None
    if ce_module(loss_spec):  # nn.CrossEntropyLoss(label_smoothing=0.1): weighed as torch's
        if getattr(loss_spec, "weight", None) is not None:  # CrossEntropyLoss(weight=w)
            raise ValueError("class_weight and loss=nn.CrossEntropyLoss(weight=...) both weigh "
                             "the classes: give the weights in one of them")
    elif loss_spec == "bce" or type(loss_spec).__name__ == "BCEWithLogitsLoss":
        raise ValueError("class_weight weighs cross-entropy's classes; a binary cross-entropy "
                         "weighs its positives by pos_weight: loss=nn.BCEWithLogitsLoss("
                         "pos_weight=skiff.tensor([n_negatives / n_positives])), and leave "
                         "class_weight out")
    elif isinstance(loss_spec, str) and loss_spec not in ("auto", "cross_entropy") or \
            callable(loss_spec):
        raise ValueError(f"class_weight weighs cross-entropy's classes; loss={loss_spec!r} is "
                         "not cross-entropy: put the weights in your own loss (e.g. "
                         "nn.CrossEntropyLoss(weight=...)) and leave class_weight out")
    if loss_spec == "auto" and callable(getattr(model, "loss", None)):
        raise ValueError(f"class_weight weighs the Trainer's cross-entropy, but "
                         f"{type(model).__name__} computes its own loss (model.loss): pass "
                         "loss='cross_entropy' to use the Trainer's, or weigh the classes "
                         "in model.loss")
    if isinstance(spec, str):
        if spec != "balanced":
            raise ValueError(f"class_weight must be 'balanced', a dict {{class id: weight}} "
                             f"or one weight per class, got {spec!r}")
        return spec
    if isinstance(spec, dict):
        out = {}
        for k, v in spec.items():
            if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
                raise ValueError(f"class_weight's keys are class ids (integers >= 0), got "
                                 f"{k!r}; map class names to ids first")
            out[int(k)] = _weight(v, f"class_weight[{k!r}]")
        return out
    arr = np.asarray(spec, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"class_weight as an array needs one weight per class (1-D), got "
                         f"shape {arr.shape}")
    if not (np.isfinite(arr).all() and (arr >= 0).all()):
        raise ValueError("class_weight's weights must be finite and >= 0")
    return arr


def ce_module(loss_spec) -> bool:
    """Whether ``loss_spec`` is skiff's ``nn.CrossEntropyLoss`` (its own ``ignore_index``,
    ``reduction`` and ``label_smoothing``, which ``class_weight`` keeps; round 48 h3: it was
    refused as "not cross-entropy")."""
    from .core.nn.loss import CrossEntropyLoss

    return isinstance(loss_spec, CrossEntropyLoss)


def _weight(v, what) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a number, got {v!r}") from None
    if not (np.isfinite(f) and f >= 0):
        raise ValueError(f"{what} must be finite and >= 0, got {v!r}")
    return f


def training_targets(dataset, ignore: int = -100) -> np.ndarray:
    """Every integer target of ``dataset`` as one flat int64 array (ignored ids, -100, left
    out): an array dataset's last array (or a subset of it) read at once, a dataset with a
    ``targets`` list (torchvision's ImageFolder) from it, any other by reading each item."""
    from .data import ArrayDataset, Subset

    def last_array(ds):
        if isinstance(ds, ArrayDataset) and len(ds.arrays) >= 2:
            return ds.arrays[-1]
        if isinstance(ds, Subset):
            inner = last_array(ds.dataset)
            return None if inner is None else inner[ds.index]
        got = getattr(ds, "targets", None)
        if got is not None and not callable(got):
            arr = np.asarray(got)
            return arr if len(arr) == len(ds) else None
        return None

    y = last_array(dataset)
    if y is None:
        items = [dataset[i] for i in range(len(dataset))]
        if not all(isinstance(it, (tuple, list)) and len(it) >= 2 for it in items):
            raise TypeError("class_weight='balanced' counts the training targets, but the "
                            "dataset's items are not (x, y) pairs: give the weights "
                            "(class_weight={0: w0, 1: w1, ...})")
        y = np.asarray([np.asarray(it[-1]) for it in items])
    y = np.asarray(y)
    if y.dtype == np.bool_:
        y = y.astype(np.int64)
    if y.dtype.kind not in "iu":
        raise TypeError(f"class_weight is for classification (integer class ids); the "
                        f"targets are {y.dtype}")
    y = y.reshape(-1).astype(np.int64)
    return y[(y != -100) & (y != ignore)]  # a loss module's ignore_index too


def balanced_weights(y: np.ndarray) -> dict[int, float]:
    """scikit-learn's ``compute_class_weight("balanced")``: ``n / (k * count)`` for each of
    the ``k`` classes present in ``y``."""
    if y.size == 0:
        raise ValueError("class_weight='balanced' found no targets to count")
    if (y < 0).any():
        raise ValueError(f"class ids must be >= 0 (or -100, ignored), got {int(y[y < 0][0])}")
    counts = np.bincount(y)
    present = np.flatnonzero(counts)
    return {int(c): y.size / (present.size * float(counts[c])) for c in present}


class WeightedCE:
    """``loss(output, target)``: cross-entropy weighted per class (classes last in the
    output; a target column (N, 1) and sequence outputs (B, T, C) as the Trainer's own
    cross-entropy takes them). ``weights`` is a dict (unnamed classes weigh 1) or one weight
    per class; the weight vector is made once per number of classes and array module."""

    def __init__(self, weights, module=None):
        self.weights = weights
        self._made: dict = {}
        # the user's nn.CrossEntropyLoss: its ignore_index, reduction and label smoothing
        self.options = {} if module is None else {
            "ignore_index": module.ignore_index, "reduction": module.reduction,
            "label_smoothing": module.label_smoothing}

    def vector(self, n_cls: int) -> np.ndarray:
        w = self.weights
        if isinstance(w, dict):
            big = [k for k in w if k >= n_cls]
            if big:
                raise ValueError(f"class_weight names class {big[0]}, but the model has "
                                 f"{n_cls} outputs (classes 0..{n_cls - 1})")
            vec = np.ones(n_cls, np.float64)
            for k, v in w.items():
                vec[k] = v
            return vec
        if len(w) != n_cls:
            raise ValueError(f"class_weight has {len(w)} weights, but the model has {n_cls} "
                             "outputs: give one weight per class")
        return np.asarray(w, np.float64)

    def __call__(self, out, y):
        from .core.nn import functional as F
        from .losses import supervised_loss
        from .precision import is_16_bit

        ydt = np.dtype(str(y.dtype))
        if ydt == np.bool_:
            y, ydt = y.astype(np.int64), np.dtype(np.int64)
        n_cls = out.shape[-1]
        if y.ndim >= 2 and y.shape[-1] == 1 and tuple(out.shape[:-1]) == tuple(y.shape[:-1]) \
                and n_cls > 1:
            y = y.reshape(*y.shape[:-1])
        if ydt.kind not in "iu" or tuple(out.shape[:-1]) != tuple(y.shape):
            return supervised_loss(out, y, "cross_entropy")  # raises its own message
        if is_16_bit(out.dtype):  # as torch.autocast: cross-entropy in float32
            out = out.astype(np.float32)
        key = (n_cls, str(out.dtype), id(out.xp))
        if key not in self._made:
            self._made[key] = out.xp.asarray(self.vector(n_cls).astype(str(out.dtype)))
        if out.ndim > 2:
            out, y = out.reshape(-1, n_cls), y.reshape(-1)
        return F.cross_entropy(out, y, weight=self._made[key], **self.options)
