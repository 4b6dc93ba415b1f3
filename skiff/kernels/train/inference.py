"""A trained model used without gradients: :meth:`Inference.evaluate` (mean loss, and
accuracy for classification) and :meth:`Inference.predict` (the outputs as one host array).
A mixin of :class:`.trainer.Trainer`: it uses the trainer's ``model``, ``strategy``,
``device``, ``reporter``, ``batch_size``, ``mixed``, ``loss_spec`` and ``_loss_fn``."""

from __future__ import annotations

import numpy as np

from .class_metrics import class_report, confusion_matrix
from .data import PackedBatch, as_dataset, batch_size_of
from .losses import (
    INPUT_KEYS,
    accuracy,
    class_ids,
    keyword_inputs,
    outputs_of,
    r_squared,
    regression_sums,
)
from .precision import MixedTraining
from .strategy import SingleDevice
from .trainer_run import param_dtype

__all__ = ["Inference"]


class Inference:
    """``evaluate`` and ``predict`` of a :class:`.trainer.Trainer`."""

    def evaluate(self, dataset, batch_size: int | None = None, *,
                 per_class: bool = False) -> dict:
        """Mean loss over ``dataset`` without gradients, with accuracy for classification
        (``val_accuracy``) or R^2 for a regression on float targets (``val_r2``). With
        ``per_class=True`` a classifier of one class per row (up to 1024 classes) also gets
        the macro F1 (``val_f1``) and, up to 50 classes, ``per_class`` (``class``,
        ``precision``, ``recall``, ``f1``, ``support`` lists) and ``confusion``
        (``[true][predicted]`` counts): :mod:`.class_metrics`."""
        from .core.tensor import no_grad
        from .data import DataLoader

        if self.strategy is None:
            self.strategy = SingleDevice().bind(device=self.device, reporter=self.reporter)
        dataset = as_dataset(dataset, what="validation dataset")
        if len(dataset) == 0:
            raise ValueError("the validation dataset is empty")
        loader = DataLoader(dataset, batch_size or self.batch_size, shuffle=False)
        dtype = param_dtype(self.model)
        loss_fn = self._loss_fn()
        if self.mixed is not None:
            loss_fn = MixedTraining.float32_loss(loss_fn)
        if hasattr(loss_fn, "keep"):
            loss_fn.keep = True
        total = count = correct = 0.0
        classify = None
        sums = None  # a regression's sums for R^2
        matrix = None  # one class per row: the confusion matrix (None: not counted)
        counted = per_class
        self.model.eval()
        with no_grad():
            for host_batch in loader:
                batch = self.strategy.to_device(host_batch, dtype, targets=True)
                n = batch_size_of(host_batch)
                total += float(loss_fn(self.model, batch).item()) * n
                count += n
                last = getattr(loss_fn, "last", None)
                acc = None if last is None else accuracy(*last, self.loss_spec)
                if acc is not None:
                    classify = True
                    correct += acc * n
                    ids = class_ids(*last, self.loss_spec) if counted else None
                    if ids is None or (matrix is not None and len(matrix) != ids[2]):
                        counted, matrix = False, None
                    else:
                        part = confusion_matrix(ids[0], ids[1], ids[2])
                        matrix = part if matrix is None else matrix + part
                elif last is not None and not callable(self.loss_spec):
                    part = regression_sums(*last, self.loss_spec)
                    if part is not None and (sums is None or len(part[1]) == len(sums[1])):
                        sums = part if sums is None else tuple(a + b for a, b in
                                                               zip(sums, part))
        out = {"val_loss": total / count}
        if classify:
            out["val_accuracy"] = correct / count
            if matrix is not None:  # macro F1, and per class with the matrix (few classes)
                report = class_report(matrix)
                out["val_f1"] = report["f1"]
                out.update({k: report[k] for k in ("per_class", "confusion") if k in report})
        elif sums is not None and r_squared(sums) is not None:
            out["val_r2"] = r_squared(sums)  # the share of the targets' variance explained
        return out

    def predict(self, data, batch_size: int | None = None, *, inputs: int = 1) -> np.ndarray:
        """The model's outputs on ``data`` as one host numpy array, in eval mode, no gradients.

        ``data`` is an input array ``X`` (N, ...), a tuple ``(X, y)`` (``y`` is ignored) or a
        dataset whose items are inputs or ``(x, y)`` pairs; for a model of several inputs
        pass ``(X1, ..., Xk, y)`` with ``inputs=k``. Outputs of the batches are joined along
        the first axis.
        """
        from .core.tensor import no_grad
        from .data import DataLoader

        if self.strategy is None:
            self.strategy = SingleDevice().bind(device=self.device, reporter=self.reporter)
        data = by_feature_names(data, getattr(self, "feature_names", None))
        dataset = as_dataset(data, what="data to predict on")
        if len(dataset) == 0:
            raise ValueError("the data to predict on is empty")
        loader = DataLoader(dataset, batch_size or max(self.batch_size, 256), shuffle=False)
        dtype = param_dtype(self.model)
        was_training = getattr(self.model, "training", False)
        outs = []
        self.model.eval()
        try:
            with no_grad():
                for host_batch in loader:
                    if isinstance(host_batch, PackedBatch):
                        raise TypeError("predict takes arrays of inputs, got packed sequences")
                    named = isinstance(host_batch, dict) and keyword_inputs(self.model,
                                                                            host_batch)
                    if named:  # HF items: model(input_ids=..., attention_mask=...)
                        out = outputs_of(self.model(**self.strategy.to_device(named, dtype)))
                        outs.append(np.asarray(out.numpy()))
                        continue
                    if isinstance(host_batch, dict):
                        host_batch = next((host_batch[k] for k in INPUT_KEYS
                                           if k in host_batch), None)
                        if host_batch is None:
                            raise TypeError("predict on dict items needs an input key "
                                            f"({', '.join(INPUT_KEYS)})")
                    xs = tuple(host_batch[:inputs]) if isinstance(host_batch, (tuple, list)) \
                        else (host_batch,)
                    out = self.model(*self.strategy.to_device(xs, dtype))
                    outs.append(np.asarray(out.numpy()) if hasattr(out, "numpy")
                                else np.asarray(out))
        finally:
            if was_training:
                self.model.train()
        return np.concatenate(outs, axis=0)


def _is_frame(a) -> bool:
    return type(a).__module__.startswith("pandas") and hasattr(a, "columns")


def frame_columns(data) -> list[str] | None:
    """The column names of the inputs when they are a pandas DataFrame (``df`` or
    ``(df, y)``), else None."""
    x = data[0] if isinstance(data, (tuple, list)) and data else data
    return [str(c) for c in x.columns] if _is_frame(x) else None


def by_feature_names(data, names):
    """``data`` to predict on with its DataFrame's columns in the order the model was trained
    on (``names``, from the training DataFrame): a frame whose columns come in another order
    is reordered by name; one that lacks some or has others is refused naming them (as
    scikit-learn refuses feature names that do not match)."""
    if not names:
        return data
    pair = isinstance(data, (tuple, list)) and data
    x = data[0] if pair else data
    if not _is_frame(x):
        return data
    have = [str(c) for c in x.columns]
    if have == names:
        return data
    missing = [n for n in names if n not in have]
    extra = [n for n in have if n not in names]
    if missing or extra or len(set(have)) != len(have):
        parts = ([f"lacks {missing}"] if missing else []) + (
            [f"has {extra} it was not trained on"] if extra else [])
        raise ValueError(f"the DataFrame to predict on {' and '.join(parts) or 'repeats a column'}"
                         f": the model was trained on the columns {names}; select them, "
                         f"e.g. df[{names!r}]")
    x = x[[c for n in names for c in x.columns if str(c) == n]]
    return type(data)([x, *data[1:]]) if pair else x
