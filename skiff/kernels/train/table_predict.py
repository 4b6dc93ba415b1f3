"""Predictions of a model trained on a table file (``train mlp data.csv``) for the rows of
another file: ``python -m skiff predict JOB new.csv``.

The run folder holds what is needed: ``config.json`` (the model, ``mlp``), ``model.npz`` (its
weights) and ``table.json`` (the feature columns by name, their means and deviations, the
target and its classes, or the target's mean and deviation for a regression). The new file's
features are found by their column names (in any order; other columns, a row index among them,
are left alone), scaled as the training rows were, and the built-in ``mlp`` is rebuilt and
loaded. A class comes back by its name with its probability; a quantity in the target's units.
When the new file also holds the target column, the score is given (accuracy, or R^2 and
RMSE). Kernel code: no Jupyter, no job; :mod:`skiff.grammar.predict` is the command.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .class_metrics import report_lines, score_classes
from .tables import TableError, _number, apply_encoding, is_missing, read_rows

__all__ = ["TablePrediction", "predict_table"]


class TablePrediction:
    """The rows of the file, their predictions and (when the target was in it) the score."""

    def __init__(self, header, rows, column, predictions, probabilities, score, target,
                 notes=(), classes=None, class_probabilities=None):
        self.header = header            # the file's columns (or "column N" without a header)
        self.rows = rows                # the file's rows, as text cells
        self.column = column            # the name of the added column ("<target> predicted")
        self.predictions = predictions  # class names, or numbers for a regression
        self.probabilities = probabilities  # the predicted class's probability, or None
        self.score = score              # {"accuracy": ...} or {"r2": ..., "rmse": ...} or {}
        self.target = target
        self.notes = list(notes)        # how the rows were read (filled cells, unseen words)
        # every class's probability per row (scikit-learn's predict_proba), in the order of
        # ``classes``: the CSV's "P(<class>)" columns (only the predicted one's was written)
        self.classes = list(classes) if classes else None
        self.class_probabilities = class_probabilities

    def to_json(self) -> dict:
        return {"target": self.target, "predictions": self.predictions,
                "probabilities": self.probabilities, "score": self.score,
                "rows": len(self.rows), "notes": self.notes,
                **({"classes": self.classes, "class_probabilities": self.class_probabilities}
                   if self.class_probabilities is not None else {})}

    def write_csv(self, fh) -> None:
        import csv

        w = csv.writer(fh, lineterminator="\n")
        extra = [self.column] + (["probability"] if self.probabilities is not None else [])
        every = self.class_probabilities is not None
        extra += [f"P({c})" for c in self.classes] if every else []
        w.writerow([*self.header, *extra])
        for k, cells in enumerate(self.rows):
            got = [self.predictions[k]]
            if self.probabilities is not None:
                got.append(f"{self.probabilities[k]:.4f}")
            got += [f"{v:.4f}" for v in self.class_probabilities[k]] if every else []
            w.writerow([*cells, *[f"{v:.6g}" if isinstance(v, float) else v for v in got]])


def _load(run_dir: Path):
    scaling_path, weights = run_dir / "table.json", run_dir / "model.npz"
    meta = {}
    try:
        meta = json.loads((run_dir / "config.json").read_text())
    except (OSError, ValueError):
        pass
    model_name = (meta.get("config") or {}).get("model")
    if not scaling_path.is_file():
        raise TableError(f"{run_dir.name} has no table.json: predict needs a job that trained "
                         f"mlp on a table file (python -m skiff train mlp data.csv)")
    if model_name not in (None, "mlp"):
        raise TableError(f"{run_dir.name} trained the notebook model {model_name!r}: predict "
                         f"rebuilds the built-in mlp only; in the notebook scale the rows with "
                         f"table.json (x_mean, x_std) and call the model")
    if not weights.is_file():
        raise TableError(f"{run_dir.name} has no model.npz (the job did not finish?)")
    return json.loads(scaling_path.read_text()), weights


def _features(header, rows, columns, name, means=None, notes=None) -> np.ndarray:
    """The training columns, by name, as floats (a bad cell: its line and column); a
    missing cell takes the training mean ``means[j]`` (said in ``notes``), as a table with
    gaps in training fills them."""
    index = {c: i for i, c in enumerate(header)}
    missing = [c for c in columns if c not in index]
    if missing:
        raise TableError(f"{name}: no column {', '.join(map(repr, missing))}; the model was "
                         f"trained on {', '.join(map(repr, columns))} (the file has "
                         f"{', '.join(map(repr, header))})")
    x = np.empty((len(rows), len(columns)), np.float64)
    filled = [0] * len(columns)
    for r, (line, cells) in enumerate(rows):
        for j, c in enumerate(columns):
            cell = cells[index[c]] if index[c] < len(cells) else ""
            value = _number(cell)   # as training read its cells
            if value is None and means is not None and is_missing(cell):
                value = float(means[j])
                filled[j] += 1
            if value is None:
                what = "an empty cell" if not cell else f"{cell!r} is not a number"
                raise TableError(f"{name}, line {line}, column {c!r}: {what}")
            x[r, j] = value
    if notes is not None:
        notes += [f"column {c!r}: {n} empty cell{'s' if n > 1 else ''} filled with the "
                  f"training mean {float(means[j]):.6g}" for j, (c, n) in
                  enumerate(zip(columns, filled)) if n]
    return x


def _npz_rows(path: Path, width: int) -> list:
    """The rows of an .npz file's features (``x``/``X``/``features``, or its one 2-D array)
    and, when it holds them, targets (``y``/``Y``/``target``/``labels``) as text cells (the
    floats written exactly), numbered from 1."""
    if not path.is_file():
        raise TableError(f"no table file {str(path)!r}")
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    x = next((arrays[k] for k in ("x", "X", "features") if k in arrays), None)
    if x is None:
        two = [a for a in arrays.values() if np.ndim(a) == 2]
        x = two[0] if len(two) == 1 else None
    if x is None or x.ndim != 2 or x.dtype.kind not in "fiub":
        raise TableError(f"{path.name}: arrays {sorted(arrays)}; name the features x (a 2-D "
                         "array of numbers)")
    if x.shape[1] != width:
        raise TableError(f"{path.name}: x has {x.shape[1]} columns; the model takes {width}")
    y = next((arrays[k] for k in ("y", "Y", "target", "labels") if k in arrays), None)
    if y is not None and (y.reshape(len(y), -1).shape != (len(x), 1)):
        y = None  # not one value per row: predicted, not scored
    cells = [[format(float(v), ".17g") for v in row] for row in x]
    if y is not None:
        y = y.reshape(-1)
        for row, v in zip(cells, y.tolist()):
            row.append(str(v))
    return [(k + 1, row) for k, row in enumerate(cells)]


def predict_table(run_dir, path) -> TablePrediction:
    """Predict the target of the rows in ``path`` with the table model of the run folder
    ``run_dir`` (the command finds it from a job id)."""
    from skiff.kernels.train import models
    from skiff.kernels.train.core.tensor import Tensor, no_grad

    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise TableError(f"no run folder {str(run_dir)!r}")
    scaling, weights = _load(run_dir)
    path = Path(path)
    columns = list(scaling["columns"])
    read_notes: list[str] = []
    if path.suffix.lower() == ".npz":  # arrays x (and y) as a model trained on an npz took
        if scaling.get("encoding"):
            raise TableError(f"{path.name}: this model was trained on a table of words, "
                             "dates or gaps; predict reads such rows from a .csv or .tsv")
        header, rows = None, _npz_rows(path, len(columns))
    else:  # a column trained on decimal commas reads "1,304" as 1.304 (table.json's mark)
        header, rows = read_rows(path, scaling.get("decimal"), read_notes,
                                 order=columns + [scaling["target"]])
    if header is None:  # no header: the training order, the target (if any) last
        if len(rows[0][1]) not in (len(columns), len(columns) + 1):
            raise TableError(f"{path.name}: no header and {len(rows[0][1])} columns; the model "
                             f"takes {len(columns)} ({', '.join(columns)}): add the header")
        header = columns + ([scaling["target"]] if len(rows[0][1]) > len(columns) else [])
        shown = [f"column {i + 1}" for i in range(len(header))]
    else:
        shown = header
    notes = read_notes
    if scaling.get("encoding"):  # words one-hot, missing numbers filled: as in training
        sources = [e["name"] for e in scaling["encoding"]]
        missing = [c for c in sources if c not in header]
        if missing:
            raise TableError(f"{path.name}: no column {', '.join(map(repr, missing))}; the "
                             f"model was trained on {', '.join(map(repr, sources))} (the file "
                             f"has {', '.join(map(repr, header))})")
        where = {c: i for i, c in enumerate(header)}
        x, encoded = apply_encoding(
            path.name, scaling["encoding"],
            lambda c: [cells[where[c]] if where[c] < len(cells) else "" for _, cells in rows],
            [line for line, _ in rows])
        notes += encoded
    else:
        x = _features(header, rows, columns, path.name, scaling.get("x_mean"), notes)
    xs = (x - np.asarray(scaling["x_mean"])) / np.asarray(scaling["x_std"])
    classes = scaling.get("classes")
    model = models.get("mlp", in_features=len(columns),
                       out_features=len(classes) if classes else 1)
    model.load_state_dict(str(weights))
    model.eval()
    with no_grad():
        out = model(Tensor(xs.astype(np.float32))).numpy().astype(np.float64)
    target = scaling["target"]
    truth, known = None, None
    if target in header:
        t = header.index(target)
        truth = [cells[t] if t < len(cells) else "" for _, cells in rows]
        # the rows whose truth is given: a new file often has the target for some rows only
        known = [r for r, v in enumerate(truth) if not is_missing(v)]
        if not known:
            truth = None
        elif len(known) < len(truth):
            gaps = len(truth) - len(known)
            notes.append(f"scored on the {len(known)} rows that give {target!r} ({gaps} "
                         f"empty: predicted, not scored)")
    if classes:
        z = out - out.max(1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(1, keepdims=True)
        best = p.argmax(1)
        preds, probs = [str(classes[k]) for k in best], [float(v) for v in p.max(1)]
        score = {}
        if truth is not None:
            norm = {_label(c): c for c in classes}
            # a true class training never saw is a class of its own in the report (as in
            # scikit-learn's classification_report over both label sets): its rows were
            # counted wrong in the accuracy but left out of the F1 and confusion, silently
            pairs = [(norm.get(_label(truth[r]), _label(truth[r])), preds[r]) for r in known]
            unseen = sorted({a for a, _ in pairs} - set(classes))
            score = {"accuracy": float(np.mean([a == b for a, b in pairs])),
                     "rows": len(pairs),
                     **score_classes([a for a, _ in pairs], [b for _, b in pairs],
                                     [*classes, *unseen])}
            if unseen:
                count = sum(a in unseen for a, _ in pairs)
                notes.append(f"{count} of {len(pairs)} rows are of a class training never "
                             f"saw ({', '.join(map(repr, unseen[:5]))}"
                             f"{' ...' if len(unseen) > 5 else ''}): the model cannot answer "
                             "it, so they count as wrong, and the class is in the per-class "
                             "figures with recall 0")
            notes += report_lines(score) if "f1" in score else []
    else:
        y = out[:, 0] * float(scaling["y_std"]) + float(scaling["y_mean"])
        preds, probs, score = [float(v) for v in y], None, {}
        if truth is not None:
            try:
                yt = np.array([float(truth[r]) for r in known])
            except ValueError:
                yt = None
            yk = y[known]
            if yt is not None and len(yt) > 1 and np.isfinite(yt).all():
                ss = float(((yt - yt.mean()) ** 2).sum()) or 1.0
                score = {"r2": 1.0 - float(((yt - yk) ** 2).sum()) / ss,
                         "rmse": float(np.sqrt(((yt - yk) ** 2).mean())), "rows": len(yt)}
    return TablePrediction(shown, [cells for _, cells in rows], f"{target} predicted", preds,
                           probs, score, target, notes, classes=[str(c) for c in classes]
                           if classes else None,
                           class_probabilities=p.tolist() if classes else None)


def _label(text) -> str:
    """A class name as training kept it: whole numbers by value ("1.0" is "1")."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        return str(text).strip()
    return str(int(value)) if value == int(value) else str(value)
