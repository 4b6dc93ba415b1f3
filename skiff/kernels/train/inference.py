"""A trained model used without gradients: :meth:`Inference.evaluate` (mean loss, and
accuracy for classification) and :meth:`Inference.predict` (the outputs as one host array).
A mixin of :class:`.trainer.Trainer`: it uses the trainer's ``model``, ``strategy``,
``device``, ``reporter``, ``batch_size``, ``mixed``, ``loss_spec`` and ``_loss_fn``."""

from __future__ import annotations

import numpy as np

from .class_metrics import class_report, confusion_matrix, label_report
from .data import PackedBatch, as_dataset, batch_size_of
from .losses import (
    INPUT_KEYS,
    accuracy,
    class_ids,
    ignored_id,
    is_bce,
    keyword_inputs,
    label_counts,
    outputs_of,
    r_squared,
    regression_sums,
)
from .precision import MixedTraining
from .strategy import SingleDevice
from .trainer_accum import scored_targets
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
        # a DataFrame in another column order than training's: its columns by name (it was
        # scored on the wrong columns, silently: 1.196 against 1.222 on a probe)
        dataset = by_feature_names(dataset, getattr(self, "feature_names", None),
                                   "to evaluate")
        dataset = as_dataset(dataset, what="validation dataset")
        if len(dataset) == 0:
            raise ValueError("the validation dataset is empty")
        loader = DataLoader(dataset, batch_size or self.batch_size, shuffle=False)
        dtype = param_dtype(self.model)
        if getattr(self, "class_weights_", None) is None and \
                getattr(self, "class_weight", None) is not None and \
                not isinstance(self.class_weight, str):  # given weights: before train() too
            self.class_weights_ = self.class_weight
        loss_fn = self._loss_fn()
        if self.mixed is not None:
            loss_fn = MixedTraining.float32_loss(loss_fn)
        if hasattr(loss_fn, "keep"):
            loss_fn.keep = True
        total = count = correct = scored = 0.0
        weighed = _target_weights(self.loss_spec, getattr(self, "class_weights_", None),
                                  self.model)
        total_w = count_w = 0.0  # a cross-entropy's mean over the whole set
        # a token loss (the one training weighs by its scored targets): its mean over every
        # scored target of the set; None once a batch's count is not known (then by rows)
        class_weighted = getattr(self, "class_weights_", None) is not None
        tokens = not class_weighted
        total_t = count_t = 0.0
        # an MoE whose loss adds the router's balancing term (val_loss, as transformers'
        # eval_loss): the NLL alone too (val_nll), summed by the same weights as val_loss
        nll = getattr(getattr(self.model, "config", None), "output_router_logits", False) \
            and getattr(self.model.config, "is_moe", False)
        aux = None if nll else _gpt_moe_term(self.model)  # gpt-moe's term (round 44)
        nll = nll or aux is not None
        nll_sums = [0.0, 0.0, 0.0]  # by rows, by scored targets, by class weights
        classify = None
        sums = None  # a regression's sums for R^2
        matrix = None  # one class per row: the confusion matrix (None: not counted)
        labels = None  # several binary labels per row: their (tp, fp, fn) counts
        counted = per_class
        self.model.eval()
        with no_grad():
            for host_batch in loader:
                batch = self.strategy.to_device(host_batch, dtype, targets=True)
                n = batch_size_of(host_batch)
                if nll and aux is None:
                    self.model.last_nll = None  # set by this batch's loss (the model's)
                loss = float(loss_fn(self.model, batch).item())
                part = getattr(self.model, "last_nll", None) if nll and aux is None else \
                    (loss - aux() if nll else None)
                if nll and part is None:
                    nll = False  # a loss of the user's own: its NLL is not known
                part = float(part if aux is not None else part.item()) if nll else 0.0
                nll_sums[0] += part * n
                total += loss * n
                count += n
                if tokens:
                    k = scored_targets(self.model, self.loss_spec, class_weighted, host_batch)
                    if k is None:
                        tokens = False
                    elif k > 0:  # a batch of ignored targets only adds nothing (its mean: nan)
                        total_t += loss * k
                        count_t += k
                        nll_sums[1] += part * k
                last = getattr(loss_fn, "last", None)
                if weighed is not None and last is not None:
                    w = weighed(*last)
                    if w is None:
                        weighed = None
                    elif w > 0:  # a batch of ignored targets only adds nothing
                        total_w += loss * w
                        count_w += w
                        nll_sums[2] += part * w
                # accuracy reads a loss module's layout (N, C, ...) and its ignore_index
                acc = None if last is None else accuracy(*last, self.loss_spec)
                if acc is not None:
                    classify = True
                    k = _scored(last[1], self.loss_spec)  # targets that count (not -100)
                    correct += acc * k
                    scored += k
                    both = label_counts(*last, self.loss_spec) if counted else None
                    if both is not None and matrix is None and (
                            labels is None or labels.shape == both.shape):
                        labels = both if labels is None else labels + both
                        continue
                    labels = None
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
        # torch's CrossEntropyLoss(weight=...) over the whole set divides by the sum of the
        # targets' weights (unweighted: their number, -100 left out): batch means summed by
        # those (by rows they depended on the batch size); a token loss of a model's own
        # (an LM's (x, y) blocks, packed chat, items with labels) by its scored targets
        if weighed is not None and count_w > 0:
            val_loss, self._eval_weight, by = total_w / count_w, count_w, 2
        elif tokens and count_t > 0:  # as training's token loss (transformers: by rows)
            val_loss, self._eval_weight, by = total_t / count_t, count_t, 1
        else:
            val_loss, self._eval_weight, by = total / count, count, 0
        # (_eval_weight: what val_loss divides by, for a mean over ranks of other rows)
        out = {"val_loss": val_loss}
        if nll:  # dense models: val_loss is the NLL (one name for one figure)
            out["val_nll"] = nll_sums[by] / self._eval_weight
        if classify:
            out["val_accuracy"] = correct / scored
            if matrix is not None:  # macro F1, and per class with the matrix (few classes)
                report = class_report(matrix)
                out["val_f1"] = report["f1"]
                out.update({k: report[k] for k in ("per_class", "confusion") if k in report})
            elif labels is not None:  # multi-label: per label, macro F1 over every label
                report = label_report(labels)
                out["val_f1"] = report["f1"]
                out.update({k: report[k] for k in ("per_class",) if k in report})
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
                        outs.append(self.strategy.whole_outputs(self.model,
                                                                np.asarray(out.numpy())))
                        continue
                    if isinstance(host_batch, dict):
                        host_batch = next((host_batch[k] for k in INPUT_KEYS
                                           if k in host_batch), None)
                        if host_batch is None:
                            raise TypeError("predict on dict items needs an input key "
                                            f"({', '.join(INPUT_KEYS)})")
                    xs = tuple(host_batch[:inputs]) if isinstance(host_batch, (tuple, list)) \
                        else (host_batch,)
                    out = outputs_of(self.model(*self.strategy.to_device(xs, dtype)))
                    if isinstance(out, (tuple, list)):  # several outputs: one array each
                        outs.append(tuple(self.strategy.whole_outputs(self.model, _host(o))
                                          for o in out))
                        continue
                    # a head split over ranks (tp): the ranks' slices joined
                    outs.append(self.strategy.whole_outputs(self.model, _host(out)))
        finally:
            if was_training:
                self.model.train()
        if outs and isinstance(outs[0], tuple):  # several outputs: a tuple, as Keras' predict
            return tuple(np.concatenate(parts, axis=0) for parts in zip(*outs))
        return np.concatenate(outs, axis=0)


def _host(out) -> np.ndarray:
    return np.asarray(out.numpy()) if hasattr(out, "numpy") else np.asarray(out)


def _scored(y, spec) -> int:
    """How many of the targets ``y`` an accuracy counts: all of a binary label's, else those
    the loss does not ignore (-100 or a loss module's ``ignore_index``: prompt tokens,
    padding)."""
    yv = np.asarray(y.numpy() if hasattr(y, "numpy") else y)
    return int(yv.size) if is_bce(spec) else int(np.count_nonzero(yv != ignored_id(spec)))


def _target_weights(loss_spec, class_weights, model=None):
    """``fn(output, targets) -> the sum of the targets' class weights`` (targets equal to the
    ignored id left out) for a cross-entropy whose mean divides by that sum: the Trainer's
    ``class_weight``, a loss module with a ``weight`` (``nn.CrossEntropyLoss(weight=...)``,
    reduction ``mean``), or, each target weighing 1 (the number of targets that are not
    ignored), the Trainer's own cross-entropy and a loss module with an ``ignore_index``
    and no weight (``nn.CrossEntropyLoss(ignore_index=pad)``); None for any other loss.
    ``fn`` returns None for targets that are no class ids of the weights (float targets:
    ``"auto"``'s MSE)."""
    own = isinstance(loss_spec, str) and loss_spec in ("auto", "cross_entropy") and not (
        loss_spec == "auto" and callable(getattr(model, "loss", None)))
    if class_weights is None and own:

        def vector(n_cls):
            return np.ones(n_cls)

        ignore = -100
    elif class_weights is not None:
        from .trainer_class_weight import WeightedCE, ce_module

        own_ce = ce_module(loss_spec)  # class_weight in the user's nn.CrossEntropyLoss
        if own_ce and loss_spec.reduction != "mean":
            return None  # a sum per batch: by rows, as that module without class_weight
        vector = WeightedCE(class_weights).vector
        ignore = int(loss_spec.ignore_index) if own_ce else -100
    else:
        weight = getattr(loss_spec, "weight", None)
        if not callable(loss_spec) or getattr(loss_spec, "reduction", "mean") != "mean" or \
                weight is None and not hasattr(loss_spec, "ignore_index"):
            return None
        ignore = int(getattr(loss_spec, "ignore_index", -100))
        if weight is None:  # nn.CrossEntropyLoss(ignore_index=...): a mean over the others

            def vector(n_cls):
                return None
        else:
            weight = np.asarray(weight.numpy() if hasattr(weight, "numpy") else weight,
                                np.float64)
            if weight.ndim != 1:
                return None

            def vector(n_cls):
                return weight

    def weigh(out, y) -> float | None:
        y = np.asarray(y.numpy() if hasattr(y, "numpy") else y)
        if y.dtype == np.bool_:
            y = y.astype(np.int64)
        if y.dtype.kind not in "iu" or not getattr(out, "shape", None):
            return None
        y = y.reshape(-1)
        y = y[y != ignore]
        try:
            vec = vector(int(out.shape[-1]))
        except ValueError:
            return None  # the loss said what is wrong already
        if vec is None:
            return float(y.size)
        if y.size and (int(y.min()) < 0 or int(y.max()) >= len(vec)):
            return None
        return float(vec[y].sum())

    return weigh


def _is_frame(a) -> bool:
    return type(a).__module__.startswith("pandas") and hasattr(a, "columns")


def frame_columns(data) -> list[str] | None:
    """The column names of the inputs when they are a pandas DataFrame (``df`` or
    ``(df, y)``), else None."""
    x = data[0] if isinstance(data, (tuple, list)) and data else data
    return [str(c) for c in x.columns] if _is_frame(x) else None


def by_feature_names(data, names, what: str = "to predict on"):
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
        raise ValueError(f"the DataFrame {what} {' and '.join(parts) or 'repeats a column'}"
                         f": the model was trained on the columns {names}; select them, "
                         f"e.g. df[{names!r}]")
    x = x[[c for n in names for c in x.columns if str(c) == n]]
    return type(data)([x, *data[1:]]) if pair else x


def gives_val_nll(model) -> bool:
    """Whether validating ``model`` with its own loss gives ``val_nll`` beside ``val_loss``:
    an ERNIE-4.5 MoE that adds the router's balancing loss (``output_router_logits``) or a
    ``gpt-moe`` with ``aux_coef`` > 0. Any other model's ``val_loss`` is its NLL."""
    cfg = getattr(model, "config", None)
    return bool(getattr(cfg, "output_router_logits", False) and getattr(cfg, "is_moe", False)
                ) or _gpt_moe_term(model) is not None


def _gpt_moe_term(model):
    """For a GPT with MoE layers (``gpt-moe``: ``parallel/moe.py``'s loss, the NLL plus
    ``aux_coef`` x its layers' balancing losses), a function giving the term the last loss
    added (the NLL is the loss less it: ``val_nll``); None for any other model or a
    coefficient of 0 (its loss is the NLL)."""
    fn = getattr(getattr(model, "loss", None), "__func__", None)
    coef = float(getattr(model, "aux_coef", 0) or 0)
    if getattr(fn, "__name__", "") != "_moe_loss" or not coef:
        return None
    return lambda: coef * sum(float(m.aux_loss.item()) for m in model.moe_layers
                              if m.aux_loss is not None)

