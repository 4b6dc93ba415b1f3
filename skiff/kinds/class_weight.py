"""``--class-weight`` of ``train``: cross-entropy that counts rare classes more, as
scikit-learn's ``class_weight``: ``balanced`` weighs class c by ``n_rows / (n_classes *
count_c)`` over the training labels; ``cat=3,dog=1`` names weights (a class left out weighs
1). It applies to a classifier trained on class ids (a table file's classes, a folder of class
folders of images, ``(X, y)`` arrays of integer y, a ``%%train`` cell that sets no ``loss``).
The weights, by class id, go to ``Trainer(class_weight=...)``, whose loss (training and
held-out) is torch's ``CrossEntropyLoss(weight=...)``: its mean divides by the targets'
weights, over the whole held-out set."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["parse_class_weight", "class_weight_text", "class_weights", "weigh_classes"]

MAX_WEIGHT = 1e6


def parse_class_weight(text: str):
    """``balanced`` or ``NAME=W[,NAME=W...]`` (W a finite number > 0) as the config holds it:
    ``"balanced"`` or ``{"NAME": W}`` (a dict: a config's, checked the same way). Raises
    ValueError naming the accepted forms."""
    if isinstance(text, dict):
        pairs = [(str(k), str(v)) for k, v in text.items()]
        if not pairs:
            raise ValueError("--class-weight names no class: give balanced or CLASS=W pairs")
        parsed = {}
        for name, value in pairs:
            parsed.update(parse_class_weight(f"{name.replace(',', '')}={value}"))
        return {name: parsed[name.replace(",", "")] for name, _ in pairs}
    text = str(text).strip()
    if text.lower() == "balanced":
        return "balanced"
    form = ("give balanced (each class weighs n_rows / (n_classes * its rows)) or CLASS=W "
            "pairs, e.g. --class-weight cat=3,dog=1")
    weights: dict[str, float] = {}
    for pair in (p.strip() for p in text.split(",")):
        name, eq, value = pair.rpartition("=")
        name = name.strip()
        if not eq or not name:
            raise ValueError(f"--class-weight {text!r}: {pair!r} is not CLASS=W; {form}")
        try:
            weight = float(value)
        except ValueError:
            raise ValueError(f"--class-weight {text!r}: the weight of {name!r} is "
                             f"{value.strip()!r}, not a number; {form}") from None
        if not (math.isfinite(weight) and 0 < weight <= MAX_WEIGHT):
            raise ValueError(f"--class-weight {text!r}: the weight of {name!r} must be a number "
                             f"> 0 (up to {MAX_WEIGHT:g}), got {value.strip()}")
        if name in weights:
            raise ValueError(f"--class-weight {text!r}: class {name!r} given twice")
        weights[name] = weight
    return weights


def class_weight_text(spec) -> str:
    """``spec`` checked and written as the option is typed (``balanced``, ``cat=3.0,dog=1.0``):
    what the grammar hands on and a config keeps, so that a line rendered from it (a
    panel's, ``jobs show``'s) parses to the same weights."""
    spec = parse_class_weight(spec)
    if spec == "balanced":
        return spec
    return ",".join(f"{name}={weight!r}" for name, weight in spec.items())


def class_weights(spec, labels, classes: list[str]) -> np.ndarray:
    """Each class's weight (float32, one per class of ``classes``) for the training
    ``labels`` (class ids) under ``spec`` (:func:`parse_class_weight`'s value). ``balanced``
    is scikit-learn's ``compute_class_weight("balanced", classes=np.unique(y), y=y)``: the
    classes the labels hold count (a class no training row has adds nothing to the loss:
    its weight is moot, 1)."""
    k = len(classes)
    if spec == "balanced":
        counts = np.bincount(np.asarray(labels, np.int64).ravel(), minlength=k)[:k]
        present = int((counts > 0).sum())
        n = int(counts.sum())
        return np.where(counts > 0, n / (max(present, 1) * np.maximum(counts, 1)),
                        1.0).astype(np.float32)
    unknown = [name for name in spec if name not in classes]
    if unknown:
        from skiff.grammar.common import did_you_mean

        shown = ", ".join(classes[:20]) + (" ..." if len(classes) > 20 else "")
        raise ValueError(f"--class-weight names {unknown[0]!r}, not a class of the data"
                         f"{did_you_mean(unknown[0], classes)}; its classes: {shown}")
    return np.asarray([spec.get(name, 1.0) for name in classes], np.float32)


def _targets(data):
    """The class ids of a data set's items, read at once where it holds them (an array data
    set's last array, a subset of one, an image folder or a view of it); None otherwise."""
    from skiff.kernels.train.data import ArrayDataset, Subset

    if isinstance(data, ArrayDataset):
        return np.asarray(data.arrays[-1]) if len(data.arrays) >= 2 else None
    inner = getattr(data, "dataset", None) if isinstance(data, Subset) else \
        getattr(data, "folder", None)  # an augmented view of an image folder
    if inner is not None and getattr(data, "index", None) is not None:
        got = _targets(inner)
        return None if got is None else got[np.asarray(data.index)]
    labels = getattr(data, "labels", None)
    return None if labels is None else np.asarray(labels)


def _training_set(parts: dict, config: dict):
    """The rows the Trainer trains on: ``--val-split``'s last fraction is held out in the
    Trainer (as :func:`skiff.kernels.train.data.split_off`)."""
    from skiff.kernels.train.data import as_dataset, split_off

    data = parts.get("dataset")
    split = config.get("val_split")
    try:
        data = as_dataset(data)
        if split is not None and not parts.get("split_done") and \
                parts.get("val_dataset") is None:
            data = split_off(data, split)[0]
    except Exception:  # noqa: BLE001  (the Trainer says what is wrong with it)
        return None
    return data


def _labels_and_classes(parts: dict, config: dict):
    """The training class ids and the class names (or numbers) of ``parts``, or None."""
    table, images = parts.get("table"), parts.get("images")
    if table is not None and table.classes is None:
        raise ValueError(f"--class-weight weighs classes, and the target {table.target!r} "
                         "is a column of numbers (a regression): drop it")
    data = _training_set(parts, config)
    y = None if data is None else _targets(data)
    if y is None and images is not None:
        y = images.labels
    if y is None:
        return None
    if y.dtype.kind == "b":
        y = y.astype(np.int64)
    if y.dtype.kind not in "iu" or not (y.ndim == 1 or (y.ndim == 2 and y.shape[1] == 1)) \
            or not y.size or int(y.min()) < 0:
        return None
    y = y.reshape(-1).astype(np.int64)
    named = table if table is not None else images
    if named is not None:
        return y, [str(c) for c in named.classes]
    classes = int(y.max()) + 1
    width = _outputs(parts.get("model"), data)
    if width is not None and width > classes:
        classes = width  # classes the model knows that these rows never name
    return y, [str(c) for c in range(classes)]


def _outputs(model, data) -> int | None:
    """The model's outputs per row (its classes), from one row (None: not known)."""
    if model is None or not callable(model) or not hasattr(data, "arrays"):
        return None
    try:
        from skiff.kernels.train.core.autograd import no_grad

        with no_grad():
            out = model(*[np.asarray(a[:1]) for a in data.arrays[:-1]])
        return int(out.shape[-1])
    except Exception:  # noqa: BLE001  (the training's first step says what fails)
        return None


def check_data(data, name: str) -> None:
    """``--class-weight`` on notebook data whose targets are at hand: refused before the job
    when they are no class ids (floats: a regression), as the job would refuse them."""
    from skiff.kernels.train.data import ArrayDataset

    if not isinstance(data, ArrayDataset) or len(data.arrays) < 2:
        return  # a data set of the user's: its items are read in the job
    y = np.asarray(data.arrays[-1])
    if y.dtype.kind in "iub" and (not y.size or int(y.min()) >= 0):
        return
    what = f"targets of dtype {y.dtype}" if y.dtype.kind not in "iub" else \
        f"negative targets ({int(y.min())})"
    raise ValueError(f"--class-weight weighs the classes of a classifier trained on class ids "
                     f"(integers >= 0); DATA {name!r} has {what}: drop it (a float y is a "
                     "regression) or pass y.astype('int64')")


def weigh_classes(parts: dict, config: dict, reporter=None) -> dict:
    """``parts`` with ``class_weight``, the weights of ``config["class_weight"]`` by class id
    (``{id: weight}``), for :func:`skiff.kernels.train.entry.train_parts` to hand to
    ``Trainer(class_weight=...)``, whose cross-entropy is torch's
    ``CrossEntropyLoss(weight=...)`` in training and validation (the same parts without it).
    Raises ValueError where it cannot apply."""
    spec = config.get("class_weight")
    if not spec:
        return parts
    spec = parse_class_weight(spec)  # the config keeps the text
    if parts.get("loss") is not None and parts.get("loss") not in ("cross_entropy", "ce"):
        raise ValueError("--class-weight and a loss of the cell's own: weigh the classes in "
                         "it (skiff.nn.CrossEntropyLoss(weight=...)) and drop --class-weight")
    model = parts.get("model")
    if parts.get("loss") is None and callable(getattr(model, "loss", None)):
        raise ValueError(f"--class-weight weighs the Trainer's cross-entropy, but the model "
                         f"({type(model).__name__}) computes its own loss (model.loss): set "
                         "loss = 'cross_entropy' in the cell to use the Trainer's, or weigh "
                         "the classes in model.loss and drop --class-weight")
    found = _labels_and_classes(parts, config)
    if found is None:
        raise ValueError("--class-weight weighs the classes of a classifier trained on class "
                         "ids (a table's classes, a folder of class folders, (X, y) with "
                         "integer y >= 0); this data has none: drop it")
    labels, classes = found
    weights = class_weights(spec, labels, classes)
    parts = {**parts, "class_weight": {k: float(w) for k, w in enumerate(weights.tolist())}}
    note = "classes weighed in the loss (--class-weight): " + ", ".join(
        f"{c} {w:.3g}" for c, w in list(zip(classes, weights.tolist()))[:12]) + (
        " ..." if len(classes) > 12 else "")
    parts["notes"] = [*(parts.get("notes") or []), note]
    return parts
