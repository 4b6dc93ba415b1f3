"""Early stopping: ``Trainer(early_stopping=N)`` ends a run once the validation loss (or the
metric ``monitor=`` names, e.g. ``"val_accuracy"``, larger better) has not improved for N
validations in a row, and gives back the weights of its best validation.

The validation set is scored at each epoch's end, or every ``eval_every`` steps when that is
given (and after the last step): those are the points counted. "Improved" means below the
best so far by more than ``min_delta`` (relative to the best's size, so the same setting
serves a loss of 3.0 and one of 0.003). The best weights are kept as a host copy of the
model's state and put back when the run ends (by stopping early or at its last step) if a
later validation was worse; the result says which step's weights it holds
(``TrainResult.best_step``).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["EarlyStopping", "check_early_stopping", "check_monitor", "default_hold_out",
           "HOLD_OUT"]

# a monitored name with one of these in it is better larger (Keras' mode "auto" says so
# of 'acc'); any other (a loss, an error, a perplexity) is better smaller
_LARGER_IS_BETTER = ("acc", "f1", "auc", "precision", "recall", "r2", "match", "score")

HOLD_OUT = 0.1  # what early stopping holds out of a text or an image folder by default
MIN_FOLDER_IMAGES = 20  # an image folder this small holds nothing out by itself


def default_hold_out(dataset, patience) -> tuple[float | None, str | None]:
    """``(val_split, note)`` for ``early_stopping=patience`` with no validation data: the
    command line's rule (round 34), so that ``Trainer(..., early_stopping=N).train(data)``
    and ``python -m skiff train ... --early-stop N`` hold out the same items. A text
    (:class:`.data.TextDataset`) keeps its last tenth apart (whole sequences of the text's
    end, as ``--val-split 0.1`` does), an image folder of 20 or more images its last tenth
    (its order is shuffled when read); arrays, tables and other data sets get a clear error
    instead, as on the line (the last rows of a table are often sorted, by date or class, so
    which rows validate is the user's to say)."""
    from .data import TextDataset

    name = type(dataset).__name__
    if isinstance(dataset, TextDataset):
        what = "text"
    elif name == "ImageFolder" and hasattr(dataset, "held_out"):
        if len(dataset) < MIN_FOLDER_IMAGES:
            raise ValueError(f"early_stopping watches the validation loss, and the image "
                             f"folder has {len(dataset)} images, too few to hold a tenth out "
                             f"by itself (20 or more): give the fraction to hold out "
                             f"(val_split=0.25 to train(), --val-split 0.25 on the line) or "
                             f"val_dataset=...")
        what = "image folder's images"
    else:
        raise ValueError("early_stopping watches the validation loss: pass val_dataset=... "
                         "or val_split=0.1 to train() (a text or an image folder holds its "
                         "last tenth out by itself; arrays, tables and other data sets do "
                         "not, as their last rows may be sorted: shuffle them first)")
    return HOLD_OUT, (f"early_stopping={patience} and no validation data: the last tenth of "
                      f"the {what} held out to validate on, as the command line's "
                      f"--early-stop does (val_split= or val_dataset= chooses)")


def check_early_stopping(value) -> int | None:
    """The patience as an int (None: off); a bool, float or value below 1 is refused."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"early_stopping is the number of validations without a better "
                         f"val_loss to wait (an integer >= 1), or None; got {value!r}")
    return int(value)


def check_monitor(monitor, mode) -> tuple[str, str]:
    """``(monitor, mode)`` as early stopping uses them: a validation row's name (``"val_"``
    added to a bare ``"accuracy"``, as Keras' and Lightning's ``monitor="val_accuracy"``)
    and ``"min"`` or ``"max"`` (``"auto"``: larger is better for an accuracy, F1, AUC,
    precision, recall, R^2, exact match or score, smaller for anything else)."""
    if not isinstance(monitor, str) or not monitor.strip():
        raise ValueError(f"monitor names the validation metric early stopping watches "
                         f"('val_loss', 'val_accuracy', 'val_f1'), got {monitor!r}")
    monitor = monitor.strip()
    if not monitor.startswith("val_"):
        monitor = "val_" + monitor
    if mode not in ("auto", "min", "max"):
        raise ValueError(f"mode is 'min' (smaller {monitor} is better), 'max' or 'auto', got "
                         f"{mode!r}")
    if mode == "auto":
        mode = "max" if any(k in monitor.lower() for k in _LARGER_IS_BETTER) else "min"
    return monitor, mode


class EarlyStopping:
    """The best value of the monitored validation metric (the loss by default), its step
    and weights, and how many validations since."""

    def __init__(self, patience: int, min_delta: float = 1e-4, monitor: str = "val_loss",
                 mode: str = "min"):
        self.patience, self.min_delta = int(patience), float(min_delta)
        self.monitor, self.sign = monitor, (-1.0 if mode == "max" else 1.0)
        self.best: float | None = None
        self.best_step: int | None = None
        self.since = 0
        self._weights: dict | None = None

    def update(self, model, step: int, val_loss) -> bool:
        """Count one validation (``val_loss``: the monitored value); True when the run
        should stop here."""
        if val_loss is None or not math.isfinite(val_loss):
            self.since += 1  # a non-finite validation loss is no improvement
        elif self.best is None or self.sign * val_loss < self.sign * self.best - \
                self.min_delta * abs(self.best):
            self.best, self.best_step, self.since = float(val_loss), int(step), 0
            self._weights = {k: np.array(v, copy=True) for k, v in model.state_dict().items()}
            return False
        else:
            self.since += 1
        return self.since >= self.patience

    def state_dict(self, step: int, whole: bool, per_rank: bool = False) -> dict:
        """What a checkpoint of ``step`` keeps: the best loss, its step, the count since, and
        the best weights when they are not the model's own at ``step`` (``whole``: this rank
        holds the whole model; ``per_rank``: a model split over the ranks (tp, pp) whose
        checkpoint keeps each rank's own part: its slice of the best weights, back when
        the same layout resumes; else a split model's are not kept, said on resume)."""
        kept = None if self.best_step == step or not (whole or per_rank) else self._weights
        if per_rank and kept is not None:
            from .parallel.checkpoint import PerRank

            kept = {k: PerRank(v) for k, v in kept.items()}
        return {"best": self.best, "best_step": self.best_step, "since": self.since,
                "weights": kept, "weights_kept": bool(whole or per_rank),
                "monitor": self.monitor, "mode": "max" if self.sign < 0 else "min"}

    def load_state_dict(self, state: dict, model, step: int) -> bool:
        """Take a checkpoint's state back (the model holds the weights of ``step`` already);
        False when the best weights, from an earlier step, were not kept. A state that
        watched another metric (or the other way) is not taken: counting starts afresh."""
        mode = "max" if self.sign < 0 else "min"
        if (state.get("monitor", "val_loss"), state.get("mode", "min")) != (self.monitor, mode):
            return True
        self.best = None if state.get("best") is None else float(state["best"])
        self.best_step = None if state.get("best_step") is None else int(state["best_step"])
        self.since = int(state.get("since", 0))
        weights = state.get("weights")
        if self.best_step == step:  # the model holds them (in any layout)
            self._weights = {k: np.array(v, copy=True) for k, v in model.state_dict().items()}
        elif weights is not None:
            self._weights = {k: np.array(v, copy=True) for k, v in weights.items()}
        else:
            self._weights = None
            return self.best_step is None
        return True

    def restore(self, model, last_step: int) -> int | None:
        """Put the best weights back when they are not the last; returns the step they are
        from (None: nothing to restore)."""
        if self._weights is None or self.best_step == last_step:
            return None
        model.load_state_dict(self._weights)
        return self.best_step
