"""How a Trainer turns a batch into a loss: the model's own ``loss(batch)``, a criterion
``loss(output, target)``, or cross-entropy / MSE / BCE chosen from the targets; dict batches;
and the accuracy reported beside the validation loss.
"""

from __future__ import annotations

import numpy as np

from .data import PackedBatch
from .precision import is_16_bit

__all__ = ["loss_function", "supervised_loss", "accuracy", "pair_of", "INPUT_KEYS",
           "TARGET_KEYS", "loss_of", "takes_batch_keywords", "keyword_inputs", "outputs_of",
           "calls_with_labels", "takes_blocks",
           "ignored_id", "classes_last"]

INPUT_KEYS = ("x", "input", "inputs", "features", "image", "images", "input_ids",
              "pixel_values")  # transformers' image processors' key
TARGET_KEYS = ("y", "target", "targets", "label", "labels")


def pair_of(batch: dict) -> tuple:
    """``(x, y)`` from a dict batch with an input key and a target key (``{"x", "y"}``,
    ``{"image", "label"}``, ...)."""
    x = next((batch[k] for k in INPUT_KEYS if k in batch), None)
    y = next((batch[k] for k in TARGET_KEYS if k in batch), None)
    if x is None or y is None:
        # inputs alone (an autoencoder's items, {"x": x}): the way to a loss of the input
        # itself named (round 44 h5: the line named keys only, and a torch port's loop
        # computes mse(model(b["x"]), b["x"]), which the Trainer does via model.loss)
        key = next((k for k in INPUT_KEYS if k in batch), None)
        alone = "" if x is None else (
            f"; items of inputs alone (an autoencoder's: the input is the target) train with "
            f"a loss(batch) method on the model, def loss(self, batch): return "
            f"F.mse_loss(self(batch[{key!r}]), batch[{key!r}]), which the Trainer calls")
        raise TypeError(f"a dict batch needs an input key ({', '.join(INPUT_KEYS)}) and a "
                        f"target key ({', '.join(TARGET_KEYS)}); got keys {sorted(batch)}"
                        + alone)
    return x, y


def loss_function(model, spec):
    """``fn(model, batch) -> scalar Tensor`` for the loss ``spec`` (a name or a callable
    ``loss(output, target)``); ``"auto"`` prefers the model's own ``loss(batch)``.

    ``fn.keep = True`` makes it keep ``(output, target)`` of the last batch in ``fn.last``
    (evaluation reads it for accuracy; training never keeps it).
    """
    model_loss = getattr(model, "loss", None)
    if spec == "auto" and callable(model_loss):
        if positional_arity(model_loss) != 2:
            def own(model, batch):
                if isinstance(batch, dict) and calls_with_labels(model, batch):
                    return loss_of(model(**batch))  # transformers' items: input_ids, labels
                if isinstance(batch, dict) and takes_blocks(model):
                    batch = pair_of(batch)  # {"x": ..., "y": ...} items of skiff's LMs
                return loss_of(model.loss(batch))

            return own
        spec = model_loss  # loss(output, target): a criterion written as a method

    checked = []  # class ids are range-checked on the first batch only (a host sync)
    # loss(output, target, weight): (x, y, w) items carry a weight per sample (Keras'
    # (x, y, sample_weight)), which the loss takes, not the model
    weighs = callable(spec) and positional_arity(spec) == 3

    def fn(model, batch):
        out = None
        if isinstance(batch, dict):
            if spec == "auto" and takes_batch_keywords(model, batch):
                out = model(**batch)  # HF's contract: model(**batch) returns the loss
                if not hasattr(out, "_data") or int(np.prod(out.shape)) == 1:
                    return loss_of(out)
                # a forward that named the targets but returned its outputs: loss on them
            elif (inputs := keyword_inputs(model, batch)) is not None:
                out = model(**inputs)  # input_ids with attention_mask: every input, by name
            batch = pair_of(batch)
        if isinstance(batch, PackedBatch) or not isinstance(batch, (tuple, list)) or \
                len(batch) < 2:
            what = type(batch).__name__
            if isinstance(batch, (tuple, list)):
                what += f" of {len(batch)}"
            raise TypeError("without a model.loss(batch), the data must be (x, y) pairs, "
                            "e.g. trainer.train((X, y)) or trainer.evaluate((X, y)); "
                            f"trainer.predict(X) takes the inputs alone; got batches of a "
                            f"{what}")
        *xs, y = batch  # (x1, ..., xk, y): a model of k inputs
        weight = ()
        if weighs and len(batch) == 3:
            xs, y, weight = batch[:1], batch[1], batch[2:]
        if out is None:
            out = _call_inputs(model, xs)
        if not callable(spec):  # a model of HF-style outputs ({"logits": ...}, .logits)
            out = outputs_of(out)
            if isinstance(out, (tuple, list, dict)):  # (logits, aux): "'tuple' object has no
                raise TypeError(several_outputs(out, spec))  # attribute 'shape'" (round 48)
        if fn.keep:  # evaluate reads the output for accuracy (never kept in training)
            fn.last = (out, y)
        if callable(spec):  # a dict {"loss": ..., ...} (Lightning's step) too (round 37)
            got = spec(out, y, *weight)
            if fn.extras is not None and isinstance(got, dict):
                fn.extras.append(scalar_values(got))  # its other values: training's metrics
            return loss_of(got, "the loss function")
        loss = supervised_loss(out, y, spec, check_ids=not checked)
        checked.append(True)
        return loss

    # a list (the Trainer's, in training) gathers each call's other scalar values of a
    # dict a loss function returned, {"mae": ...}; None: not gathered (evaluation)
    fn.keep, fn.last, fn.extras = False, None, None
    return fn


def scalar_values(got: dict) -> dict:
    """The scalar values of a loss function's dict besides its ``"loss"`` (a one-element
    Tensor or a number), as floats: what Lightning's ``self.log`` would record each step."""
    values = {}
    for name, value in got.items():
        if name == "loss" or isinstance(value, bool):
            continue
        if hasattr(value, "_data") and int(np.prod(value.shape)) == 1:
            values[str(name)] = float(value.item())
        elif isinstance(value, (int, float, np.number)):
            values[str(name)] = float(value)
    return values


def takes_batch_keywords(model, batch: dict) -> bool:
    """Whether ``model`` takes the dict ``batch`` as HF models do: its ``forward`` names every
    key (or takes ``**kwargs``) and a target key among them (``labels``, ...), so
    ``model(**batch)`` returns the loss (a causal LM shifts its labels itself: a loss taken
    outside on ``(input_ids, labels)`` would not)."""
    import inspect

    forward = getattr(model, "forward", None)
    if forward is None or not any(k in batch for k in TARGET_KEYS):
        return False
    try:
        params = inspect.signature(forward).parameters
    except (TypeError, ValueError):
        return False
    named = {n for n, p in params.items()
             if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    if not any(k in named for k in TARGET_KEYS if k in batch):
        return False
    return all(k in named for k in batch) or any(p.kind == p.VAR_KEYWORD
                                                 for p in params.values())


def takes_blocks(model) -> bool:
    """Whether ``model.loss(batch)`` is a skiff language model's, which takes ``(x, y)``
    blocks (or a PackedBatch): a dict item's ``x`` and ``y`` are passed as the pair (its
    ``x, y = batch`` took the dict's keys, "invalid literal for int(): 'x'")."""
    loss = getattr(type(model), "loss", None)
    return callable(loss) and getattr(loss, "__module__", "").startswith(
        "skiff.kernels.train.models")


def calls_with_labels(model, batch: dict) -> bool:
    """Whether ``model(**batch)`` gives the loss of a dict ``batch`` with ``labels`` because
    the model's call names ``labels`` (skiff's open models, as transformers' causal LMs: the
    labels shifted inside); their ``loss(batch)`` takes ``(x, y)`` blocks (a dict of
    ``input_ids``, ``attention_mask``, ``labels`` failed "too many values to unpack")."""
    import inspect

    if "labels" not in batch:
        return False
    try:
        params = inspect.signature(type(model).__call__).parameters
    except (TypeError, ValueError):
        return False
    return "labels" in params


def keyword_inputs(model, batch: dict) -> dict | None:
    """The inputs of a dict ``batch`` (its targets left out) as keywords for
    ``model(**inputs)``, when the model's ``forward`` names them all and they are more than
    one input key (HF items for ``predict``: ``input_ids`` with ``attention_mask``, whose
    mask was dropped, the ids passed alone); None otherwise (a lone input key, ``x``, goes
    in positionally)."""
    import inspect

    inputs = {k: v for k, v in batch.items() if k not in TARGET_KEYS}
    if getattr(model, "forward", None) is None or \
            (len(inputs) == 1 and any(k in inputs for k in INPUT_KEYS)):
        return None
    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return None
    named = {n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return inputs if inputs and all(k in named for k in inputs) else None


def several_outputs(out, spec) -> str:
    """What to do when a model's forward returns several outputs to a loss by name."""
    if isinstance(out, dict):
        what, pick = f"a dict of keys {sorted(map(str, out))} (none 'logits')", \
            f"out[{next(iter(out))!r}]"
    else:
        kinds = ", ".join(type(o).__name__ for o in out[:4]) + (", ..." if len(out) > 4 else "")
        what, pick = f"a {type(out).__name__} of {len(out)} ({kinds})", "out[0]"
    fn = "mse_loss" if spec == "mse" else "cross_entropy"
    return (f"the model's forward returns {what}; loss={spec!r} takes one output: return the "
            f"predictions alone, or pass your own loss, e.g. loss=lambda out, y: "
            f"skiff.nn.functional.{fn}({pick}, y)")


def outputs_of(out):
    """The model's outputs in HF-style ones: ``out["logits"]``, ``out.logits``, or ``out``."""
    if isinstance(out, dict) and "logits" in out:
        return out["logits"]
    logits = getattr(out, "logits", None)
    return logits if hasattr(logits, "_data") else out


def loss_of(out, what: str = "model.loss(batch)"):
    """The loss in what a model's ``loss(batch)`` (or a loss function, ``what``) returned:
    the scalar Tensor itself, or, as HF's Trainer reads a model's outputs, ``out["loss"]`` of
    a dict, ``out.loss`` of a ModelOutput-like object, ``out[0]`` of a tuple
    ``(loss, logits, ...)``."""
    if hasattr(out, "_data"):
        return out
    if isinstance(out, dict) and "loss" in out:
        found = out["loss"]
    elif hasattr(getattr(out, "loss", None), "_data"):
        found = out.loss
    elif isinstance(out, (tuple, list)) and out:
        found = out[0]
    else:
        found = None
    if not hasattr(found, "_data"):
        raise TypeError(f"{what} must return the loss as a scalar Tensor (or a "
                        f"dict with 'loss', an object with .loss, a tuple (loss, ...)); got "
                        f"{type(out).__name__}" + (f" of keys {sorted(out)}"
                                                    if isinstance(out, dict) else ""))
    return found


def supervised_loss(out, y, spec: str, *, check_ids: bool = True):
    """The loss of outputs ``out`` against targets ``y`` for the loss named ``spec``
    (``"auto"``: cross-entropy for integer targets, MSE for float targets), with messages that
    say how shapes and dtypes fail to match."""
    from .core.nn import functional as F

    ydt = np.dtype(str(y.dtype))
    if is_16_bit(ydt):  # bfloat16 is no numpy floating kind: a float all the same
        y = y.astype(np.float32)
        ydt = np.dtype(np.float32)
    if ydt == np.bool_:  # True/False labels are class ids 1/0 (or 1.0/0.0 for MSE and BCE)
        y = y.astype(np.int64)
        ydt = np.dtype(np.int64)
    if spec == "auto":
        if np.issubdtype(ydt, np.integer):
            spec = "cross_entropy"
        elif np.issubdtype(ydt, np.floating):
            spec = "mse"
        else:
            words = ydt.kind in "USO"  # labels as words ("cat", "dog"): name the mapping
            raise TypeError(f"targets must be integer class ids (cross-entropy) or floats "
                            f"(MSE), got dtype {ydt}" + (
                                "; map words to class ids first: classes, y = "
                                "np.unique(y, return_inverse=True)" if words else ""))
    if spec == "cross_entropy":
        if y.ndim >= 2 and y.shape[-1] == 1 and tuple(out.shape[:-1]) == tuple(y.shape[:-1]) \
                and out.shape[-1] > 1:
            y = y.reshape(*y.shape[:-1])  # class ids as a column (N, 1)
        if not np.issubdtype(ydt, np.integer):
            raise TypeError(f"cross-entropy needs integer class-id targets, got dtype {ydt}")
        if tuple(out.shape) == tuple(y.shape) + (1,) or tuple(out.shape) == tuple(y.shape):
            raise ValueError(f"model output shape {tuple(out.shape)} with integer targets of "
                             f"shape {tuple(y.shape)}: cross-entropy wants one output per class"
                             f"; for regression pass float targets (y.astype('float32')) or "
                             f"loss='mse'")
        if tuple(out.shape[:-1]) != tuple(y.shape):
            raise ValueError(f"model output shape {tuple(out.shape)} does not match targets "
                             f"shape {tuple(y.shape)}: cross-entropy wants output "
                             f"(..., classes) and targets (...)")
        n_cls = out.shape[-1]
        yv = y.numpy() if check_ids and hasattr(y, "numpy") else np.asarray(y if check_ids else 0)
        bad = (yv < 0) & (yv != -100) | (yv >= n_cls)
        if bad.any():
            raise ValueError(f"class ids must be in [0, {n_cls}) for an output of {n_cls} "
                             f"classes, got {int(yv[bad].flat[0])}")
        if out.ndim > 2:
            out = out.reshape(-1, n_cls)
            y = y.reshape(-1)
        return F.cross_entropy(out, y)
    if not np.issubdtype(ydt, np.floating) and not np.issubdtype(ydt, np.integer):
        raise TypeError(f"{'MSE' if spec == 'mse' else 'binary cross-entropy'} needs numeric "
                        f"targets, got dtype {ydt}")
    if tuple(out.shape) != tuple(y.shape) and (tuple(out.shape) == tuple(y.shape) + (1,) or
                                               tuple(y.shape) == tuple(out.shape) + (1,)):
        y = y.reshape(*out.shape)  # targets (N,) against outputs (N, 1), or the reverse
    if tuple(out.shape) != tuple(y.shape):
        hint = "MSE compares them element by element" if spec == "mse" else \
            "binary cross-entropy wants one score per 0/1 target"
        if spec == "mse" and tuple(out.shape[:-1]) == tuple(y.shape) and out.shape[-1] > 1:
            hint = ("float targets mean regression (MSE); for classification pass integer "
                    "class ids, e.g. y.astype('int64')")
        raise ValueError(f"model output shape {tuple(out.shape)} does not match targets shape "
                         f"{tuple(y.shape)} ({hint})")
    if is_16_bit(out.dtype):  # as torch.autocast: MSE and BCE in float32, the targets unrounded
        out = out.astype(np.float32)
    if y.dtype != out.dtype:
        y = y.astype(out.dtype)
    if spec == "bce":
        from .core.nn.loss import binary_cross_entropy_with_logits

        return binary_cross_entropy_with_logits(out, y)
    return F.mse_loss(out, y)


def ignored_id(spec) -> int:
    """The target id a loss leaves out: a loss module's ``ignore_index``
    (``nn.CrossEntropyLoss(ignore_index=pad)``), else -100 (torch's default)."""
    ignore = getattr(spec, "ignore_index", None) if not isinstance(spec, str) else None
    return int(ignore) if isinstance(ignore, (int, np.integer)) else -100


def classes_last(out, y, spec):
    """``(outputs, targets)`` with the classes on the last axis: a loss module of torch's
    layout (one with an ``ignore_index``: ``nn.CrossEntropyLoss``) takes ``(N, C, d1, ...)``
    outputs against ``(N, d1, ...)`` targets, whose classes are moved last; others as given."""
    if isinstance(spec, str) or not hasattr(spec, "ignore_index"):
        return out, y
    shape, ys = tuple(getattr(out, "shape", ())), tuple(getattr(y, "shape", ()))
    if len(shape) >= 3 and ys == shape[:1] + shape[2:]:
        out = out.permute(0, *range(2, len(shape)), 1)
    return out, y


def is_bce(spec) -> bool:
    """Binary cross-entropy on raw scores: ``"bce"``, or ``nn.BCEWithLogitsLoss()`` (a
    module of the user's: its accuracy and labels are read as ``"bce"``'s)."""
    return (isinstance(spec, str) and spec == "bce") or \
        type(spec).__name__ == "BCEWithLogitsLoss"


def label_counts(out, y, spec):
    """``(true positives, false positives, false negatives)`` per label of a batch of
    several binary labels per row (``bce`` with targets ``(N, L)``, L >= 2, as many scores;
    positive score: predicted 1); None for anything else."""
    if not is_bce(spec) or not hasattr(out, "shape") or not hasattr(y, "shape"):
        return None
    yv, o = np.asarray(y.numpy()), np.asarray(out.numpy())
    if yv.ndim != 2 or yv.shape[1] < 2 or o.size != yv.size:
        return None
    truth, pred = yv > 0.5, o.reshape(yv.shape) > 0
    return np.stack([(truth & pred).sum(0), (~truth & pred).sum(0), (truth & ~pred).sum(0)])


def accuracy(out, y, spec) -> float | None:
    """Accuracy of the outputs ``out`` against targets ``y`` over the targets the loss does
    not ignore (-100, or a loss module's ``ignore_index``; classes on axis 1 for a module of
    torch's layout); None where it has no meaning: regression, shapes that do not line up,
    every target ignored."""
    if not hasattr(y, "dtype") or not hasattr(out, "shape"):
        return None  # outputs or targets of several arrays, (y1, y2) (round 44 h5)
    if is_bce(spec):  # one score per binary label: positive means class 1
        o, yv = out.numpy(), y.numpy()
        if o.size != yv.size:
            return None
        return float(((o.reshape(yv.shape) > 0) == (yv > 0.5)).mean())
    if not np.issubdtype(np.dtype(str(y.dtype)), np.integer) and str(y.dtype) != "bool":
        return None
    if not hasattr(out, "shape") or out.ndim < 1:
        return None
    out, y = classes_last(out, y, spec)
    if y.ndim >= 2 and y.shape[-1] == 1 and tuple(out.shape[:-1]) == tuple(y.shape[:-1]):
        y = y.reshape(*y.shape[:-1])
    if tuple(out.shape[:-1]) != tuple(y.shape) or out.shape[-1] < 2:
        return None
    pred = out.numpy().argmax(axis=-1)
    yv = y.numpy()
    keep = yv != ignored_id(spec)  # ignored targets (prompt tokens, padding) count neither way
    if not keep.any():
        return None
    return float((pred == yv)[keep].mean())


def class_ids(out, y, spec):
    """``(true ids, predicted ids, classes)`` of a batch of one class per row, or per token
    of a token classification (targets ``(N, T)``, outputs ``(N, T, C)`` of at most
    ``class_metrics.MAX_REPORTED`` classes: tags, not a vocabulary), for the confusion
    matrix and F1; None where they have no meaning (a regression, a language model's
    tokens, several binary labels per row, shapes that do not line up, or more than
    ``class_metrics.MAX_F1`` classes). Targets the loss ignores (negative ones, and a loss
    module's ``ignore_index``: padding, sub-word pieces) are dropped."""
    from .class_metrics import MAX_F1, MAX_REPORTED

    if not hasattr(out, "shape") or not hasattr(y, "shape"):
        return None
    if len(y.shape) == 2 and y.shape[1] > 1 and not is_bce(spec):  # a tag per token
        out, y = classes_last(out, y, spec)
        o, yv = np.asarray(out.numpy()), np.asarray(y.numpy())
        if o.ndim != 3 or o.shape[:2] != yv.shape or yv.dtype.kind not in "iu" or \
                not 2 <= o.shape[2] <= MAX_REPORTED:
            return None
        keep = (yv >= 0) & (yv != ignored_id(spec))
        return yv[keep].astype(np.int64), o.argmax(axis=-1)[keep], o.shape[2]
    yv = np.asarray(y.numpy())
    if yv.ndim == 2 and yv.shape[1] == 1:
        yv = yv[:, 0]
    if yv.ndim != 1:
        return None
    o = np.asarray(out.numpy())
    if is_bce(spec):  # one score per row: positive means class 1
        if o.size != yv.size:
            return None
        return (yv > 0.5).astype(np.int64), (o.reshape(-1) > 0).astype(np.int64), 2
    if yv.dtype.kind not in "iub" or o.ndim != 2 or len(o) != len(yv):
        return None
    k = o.shape[1]
    if not 2 <= k <= MAX_F1:
        return None
    keep = (yv >= 0) & (yv != ignored_id(spec))
    return yv[keep].astype(np.int64), o[keep].argmax(axis=1), k


def regression_sums(out, y, spec):
    """``(n, sse, sum_y, sum_y2)`` per output column of a regression batch (MSE on float
    targets), for R^2 over a whole set; None where it has no meaning (classes, other
    losses, shapes that do not line up)."""
    if spec not in ("auto", "mse") or not hasattr(out, "shape"):
        return None
    if not np.issubdtype(np.dtype(str(y.dtype)), np.floating):
        return None
    o = np.asarray(out.numpy(), np.float64)
    t = np.asarray(y.numpy() if hasattr(y, "numpy") else y, np.float64)
    if o.shape != t.shape:
        if o.size != t.size or o.ndim > 2 or t.ndim > 2:
            return None
        t = t.reshape(o.shape)  # (N,) targets for (N, 1) outputs
    o, t = o.reshape(len(o), -1), t.reshape(len(t), -1)
    return len(t), ((o - t) ** 2).sum(0), t.sum(0), (t * t).sum(0)


def r_squared(sums) -> float | None:
    """R^2 from accumulated :func:`regression_sums` (the mean over output columns whose
    targets vary, as scikit-learn's r2_score averages them)."""
    n, sse, sy, sy2 = sums
    sst = sy2 - sy * sy / n
    keep = sst > 1e-12 * np.maximum(sy2, 1e-300)
    if n < 2 or not keep.any():
        return None
    return float(np.mean(1.0 - sse[keep] / sst[keep]))


def _call_inputs(model, xs):
    """``model(*xs)``; a batch of more arrays than the model's ``forward`` takes (Keras'
    ``(x, y, sample_weight)`` items, read as ``model(x, y)`` with ``w`` the target) is
    refused saying how a batch is read and how to pass a weight per sample."""
    import inspect

    try:
        return model(*xs)
    except TypeError as exc:
        forward = getattr(model, "forward", None)
        try:
            params = inspect.signature(forward).parameters.values()
        except (TypeError, ValueError):
            raise exc from None
        if len(xs) < 2 or any(p.kind == p.VAR_POSITIONAL for p in params):
            raise
        takes = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
        if takes >= len(xs):
            raise
        raise TypeError(
            f"batches of {len(xs) + 1} arrays go to the model as "
            f"model({', '.join(f'x{i + 1}' for i in range(len(xs)))}), "
            f"the last array the target, but {type(model).__name__}.forward takes "
            f"{takes} input{'s' if takes != 1 else ''}; for (x, y, sample_weight) items give "
            f"a loss of three arguments, loss=fn(output, target, weight), e.g. "
            f"(F.cross_entropy(output, target, reduction='none') * weight).mean()") from exc


def positional_arity(fn) -> int | None:
    """How many positional arguments ``fn`` requires (None: any number, or unknown)."""
    import inspect

    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    kinds = [p.kind for p in params]
    if inspect.Parameter.VAR_POSITIONAL in kinds:
        return None
    return sum(p.kind in (inspect.Parameter.POSITIONAL_ONLY,
                          inspect.Parameter.POSITIONAL_OR_KEYWORD)
               and p.default is inspect.Parameter.empty for p in params)
