"""What a classifier's user reads beside the accuracy: the confusion matrix, each class's
precision, recall, F1 and support, and the macro F1 (the mean F1 over the classes that occur
among the targets or the predictions, as scikit-learn's ``f1_score(average="macro")``; a
class never predicted has precision 0). :func:`class_report` turns true and predicted class
ids into them; :func:`report_lines` writes them for a log or a prediction's notes.

Used by ``Trainer.evaluate`` (``val_f1``, ``per_class``, ``confusion`` in each validation
row, so in ``result.val_history`` and ``result.json``), by ``predict`` of a table or image
run when the new rows carry their class, and by a job, which writes ``metrics.json``.
:func:`confusion_png` draws the matrix as scikit-learn's ``ConfusionMatrixDisplay`` does
(true classes down, predicted across, each cell's count written), for a notebook or a file.
"""

from __future__ import annotations

import numpy as np

__all__ = ["MAX_REPORTED", "MAX_F1", "confusion_matrix", "class_report", "report_lines",
           "score_classes", "label_report", "confusion_figure", "confusion_png"]

MAX_REPORTED = 50  # classes up to which the matrix and per-class lists are kept
MAX_F1 = 1024  # classes up to which the macro F1 is computed (a vocabulary is no classifier)


def confusion_matrix(true, pred, classes: int) -> np.ndarray:
    """``m[t, p]``: how many rows of class ``t`` were predicted ``p`` (int64, classes^2)."""
    t = np.asarray(true, np.int64).ravel()
    p = np.asarray(pred, np.int64).ravel()
    return np.bincount(t * classes + p, minlength=classes * classes).reshape(classes, classes)


def class_report(matrix, names=None) -> dict:
    """``{"f1": macro F1, "per_class": {"class", "precision", "recall", "f1", "support"}
    lists, "confusion": rows of the matrix}`` (the lists only up to ``MAX_REPORTED``
    classes)."""
    m = np.asarray(matrix, np.int64)
    hits = np.diag(m).astype(np.float64)
    support, predicted = m.sum(1), m.sum(0)
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(predicted > 0, hits / np.maximum(predicted, 1), 0.0)
        recall = np.where(support > 0, hits / np.maximum(support, 1), 0.0)
        f1 = np.where(precision + recall > 0,
                      2 * precision * recall / np.where(precision + recall > 0,
                                                        precision + recall, 1), 0.0)
    seen = (support > 0) | (predicted > 0)
    out = {"f1": float(f1[seen].mean()) if seen.any() else 0.0}
    if len(m) <= MAX_REPORTED:
        names = [str(n) for n in names] if names is not None else [str(k) for k in
                                                                   range(len(m))]
        out["per_class"] = {"class": names, "precision": [round(float(v), 6) for v in precision],
                            "recall": [round(float(v), 6) for v in recall],
                            "f1": [round(float(v), 6) for v in f1],
                            "support": [int(v) for v in support]}
        out["confusion"] = [[int(v) for v in row] for row in m]
    return out


def label_report(counts) -> dict:
    """``{"f1": macro F1, "per_class": {"class", "precision", "recall", "f1", "support"}}``
    of several binary labels per row (multi-label, ``bce``), from ``counts``: rows ``(true
    positives, false positives, false negatives)`` per label. The macro F1 is the mean over
    every label (scikit-learn's ``f1_score(average="macro")`` of an indicator matrix, a
    label with no positive and none predicted scoring 0, its ``zero_division`` default);
    ``support`` counts each label's positive rows. No confusion matrix (a label's is its
    2 x 2 counts)."""
    tp, fp, fn = (np.asarray(c, np.float64) for c in counts)
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(tp + fp > 0, tp / np.maximum(tp + fp, 1), 0.0)
        recall = np.where(tp + fn > 0, tp / np.maximum(tp + fn, 1), 0.0)
        f1 = np.where(precision + recall > 0, 2 * precision * recall /
                      np.where(precision + recall > 0, precision + recall, 1), 0.0)
    out = {"f1": float(f1.mean()) if f1.size else 0.0}
    if len(f1) <= MAX_REPORTED:
        out["per_class"] = {"class": [str(k) for k in range(len(f1))],
                            "precision": [round(float(v), 6) for v in precision],
                            "recall": [round(float(v), 6) for v in recall],
                            "f1": [round(float(v), 6) for v in f1],
                            "support": [int(v) for v in tp + fn]}
    return out


def score_classes(truth, predictions, classes) -> dict:
    """``{"f1", "per_class", "confusion"}`` (:func:`.class_metrics.class_report`) of the rows
    whose true class is one of ``classes`` (names)."""
    index = {c: k for k, c in enumerate(classes)}
    pairs = [(index[t], index[p]) for t, p in zip(truth, predictions)
             if t in index and p in index]
    if not pairs:
        return {}
    t, p = zip(*pairs)
    return class_report(confusion_matrix(t, p, len(classes)), classes)


def report_lines(report: dict) -> list[str]:
    """Lines for a log or notes: each class's precision, recall, F1 and rows, and the
    confusion matrix (rows: the true class, columns: the predicted one)."""
    per = report.get("per_class")
    if not per:
        return [f"macro F1 {report['f1']:.4f}"]
    lines = [f"macro F1 {report['f1']:.4f}; per class (precision, recall, F1, rows): "
             + "; ".join(f"{c} {p:.3f} {r:.3f} {f:.3f} {s}" for c, p, r, f, s in
                         zip(per["class"], per["precision"], per["recall"], per["f1"],
                             per["support"]))]
    if len(per["class"]) <= 12 and report.get("confusion"):
        lines.append("confusion (rows true, columns predicted, in the order "
                     f"{', '.join(per['class'])}): "
                     + " | ".join(" ".join(str(v) for v in row) for row in report["confusion"]))
    return lines


def confusion_figure(classes, matrix, title: str | None = None):
    """A matplotlib Figure of the confusion ``matrix`` (``m[t, p]``, rows true, columns
    predicted, as :func:`confusion_matrix`) with the ``classes`` named on both axes, each
    cell's count written (up to 30 classes; white on the darker half of the colour scale),
    as scikit-learn's ``ConfusionMatrixDisplay.from_predictions(...).plot()`` draws it."""
    from skiff.kernels.backend.figures import new_figure

    m = np.asarray(matrix)
    k = len(m)
    if m.shape != (k, k) or len(classes) != k:
        raise ValueError(f"a confusion matrix of shape {m.shape} for {len(classes)} classes")
    side = min(9.0, 2.6 + 0.42 * k)
    fig = new_figure(figsize=(side + 1.0, side), dpi=90)
    ax = fig.add_subplot(1, 1, 1)
    image = ax.imshow(m, cmap="Blues", interpolation="nearest", vmin=0)
    fig.colorbar(image, ax=ax)
    if k <= 30:
        middle = (m.max() + m.min()) / 2.0
        for t in range(k):
            for p in range(k):
                ax.text(p, t, f"{m[t, p]:g}", ha="center", va="center", fontsize=8,
                        color="white" if m[t, p] > middle else "black")
    names = [str(c) for c in classes]
    long = max((len(n) for n in names), default=0) > 4
    ax.set_xticks(range(k), labels=names, rotation=45 if long else 0,
                  ha="right" if long else "center")
    ax.set_yticks(range(k), labels=names)
    ax.set_xlabel("predicted class")
    ax.set_ylabel("true class")
    if title:
        ax.set_title(title, fontsize=10)
    return fig


def confusion_png(classes, matrix, path=None, title: str | None = None) -> bytes:
    """The PNG bytes of :func:`confusion_figure` (also written to ``path`` when given);
    ``report``'s ``per_class["class"]`` and ``confusion`` (``metrics.json``, a result's
    ``class_metrics``) are its arguments."""
    from skiff.kernels.backend.figures import render_png

    return render_png(confusion_figure(classes, matrix, title), path)
