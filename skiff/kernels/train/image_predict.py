"""Classes of new images from a ``cnn`` trained on a folder of class folders
(``python -m skiff train cnn photos/``): ``python -m skiff predict JOB new/``.

The run folder holds ``images.json`` (the classes, the image size and channels, the
training set's per-channel mean and deviation) and ``model.npz``. ``PATH`` is one image, a
folder of images, or a folder of class folders (then each image's folder is its true class
and the accuracy is given). Images are read as training read them (a centred square,
resized, standardised); a file that is no image is left out and counted in the notes.
Several paths (``predict JOB a.png b.png new/``) are one call: the model is loaded once.
Kernel code: no Jupyter, no job; :mod:`skiff.grammar.predict` is the command.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .class_metrics import report_lines, score_classes
from .image_folder import (
    IMAGE_SUFFIXES,
    ImageFolderError,
    _images_in,
    is_image_folder,
    load_image,
    standardise,
)

__all__ = ["ImagePrediction", "predict_images"]

BATCH = 256


class ImagePrediction:
    """Each image's predicted class and probability (and its true class when its folder
    names one), the accuracy then, and what was left out."""

    def __init__(self, files, predictions, probabilities, truth, notes, classes=None,
                 class_probabilities=None):
        self.files = files                  # paths relative to what was given
        self.predictions = predictions      # class names
        self.probabilities = probabilities  # of the predicted class
        self.truth = truth                  # class folder names, or None
        self.notes = notes
        # every class's probability per image (predict_proba), in the order of ``classes``:
        # the CSV's "P(<class>)" columns (only the predicted one's was written)
        self.classes = list(classes) if classes else None
        self.class_probabilities = class_probabilities
        self.score = {}
        if truth is not None and files:
            hits = [p == t for p, t in zip(predictions, truth)]
            self.score = {"accuracy": float(np.mean(hits)), "rows": len(hits)}
            if classes:  # F1, per class, confusion; a class folder training never saw is
                # a class of its own there (scikit-learn's report over both label sets): its
                # images counted wrong in the accuracy and were left out of the F1, silently
                unseen = sorted(set(truth) - set(classes))
                self.score.update(score_classes(truth, predictions, [*classes, *unseen]))
                self.notes = self.notes + report_lines(self.score)

    def to_json(self) -> dict:
        return {"files": self.files, "predictions": self.predictions,
                "probabilities": self.probabilities, "truth": self.truth,
                "score": self.score, "notes": self.notes,
                **({"classes": self.classes, "class_probabilities": self.class_probabilities}
                   if self.class_probabilities is not None else {})}

    def write_csv(self, fh) -> None:
        import csv

        w = csv.writer(fh, lineterminator="\n")
        every = self.class_probabilities is not None and self.classes is not None
        w.writerow(["file", "class predicted", "probability"]
                   + (["class"] if self.truth is not None else [])
                   + ([f"P({c})" for c in self.classes] if every else []))
        for k, f in enumerate(self.files):
            row = [f, self.predictions[k], f"{self.probabilities[k]:.4f}"]
            w.writerow(row + ([self.truth[k]] if self.truth is not None else [])
                       + ([f"{v:.4f}" for v in self.class_probabilities[k]] if every else []))


def _files(path: Path):
    """(files, their names as shown, their true classes or None)."""
    if path.is_file():
        return [path], [path.name], None
    if not path.is_dir():
        raise ImageFolderError(f"no image or folder {str(path)!r}")
    if is_image_folder(path):
        dirs = sorted(d for d in path.iterdir() if d.is_dir() and not d.name.startswith("."))
        found = [(f, d.name) for d in dirs for f in _images_in(d)]
        return ([f for f, _ in found], [f.relative_to(path).as_posix() for f, _ in found],
                [c for _, c in found])
    files = _images_in(path)
    if not files:
        raise ImageFolderError(f"{path.name}: no images ({', '.join(IMAGE_SUFFIXES)})")
    return files, [f.relative_to(path).as_posix() for f in files], None


def _read(path: Path, given: str, size: int, channels: int, several: bool):
    """The images of one ``path`` given: (their arrays, names, truth or None, notes); the
    names prefixed with the path as ``given`` where ``several`` were."""
    files, shown, truth = _files(path)
    images, keep, bad, why = [], [], [], None
    for k, f in enumerate(files):
        try:
            images.append(load_image(f, size, channels))
            keep.append(k)
        except (OSError, ValueError, SyntaxError) as exc:
            bad.append(shown[k])
            why = why or exc
    if not images:  # nothing to predict: a mistake, not an empty answer with exit status 0
        what = (f"{shown[0]} is no image skiff can read" if path.is_file() else
                f"{path.name}: none of its {len(files)} files is an image skiff can read "
                f"(the first: {shown[0]})")
        raise ImageFolderError(f"{what} ({str(why).splitlines()[0][:120]})")
    notes = []
    if bad:
        notes.append(f"{len(bad)} file{'s' if len(bad) > 1 else ''} that "
                     f"{'are' if len(bad) > 1 else 'is'} no image left out (the first: "
                     f"{bad[0]})")
    names = [shown[k] for k in keep]
    if several:  # each row named from the path as given (a.png, new/x.png)
        names = ([given] * len(names) if path.is_file() else
                 [f"{given.rstrip('/')}/{n}" for n in names])
    return (images, names, None if truth is None else [truth[k] for k in keep], notes)


def predict_images(run_dir, path) -> ImagePrediction:
    """The classes of the images at ``path`` by the image model of the run folder: one image
    or folder, or a list of them (``predict RUN a.png b.png new/``: the model is loaded
    once, their rows joined in the order given, each named from the path as given, each
    path's notes prefixed with it, the truth and the score over all of them where every
    path is a folder of class folders)."""
    from skiff.kernels.train import models
    from skiff.kernels.train.core.tensor import Tensor, no_grad

    given = list(path) if isinstance(path, (list, tuple)) else [path]
    if not given:
        raise ImageFolderError("no image or folder given")
    run_dir, several = Path(run_dir), len(given) > 1
    meta = json.loads((run_dir / "images.json").read_text())
    weights = run_dir / "model.npz"
    if not weights.is_file():
        raise ImageFolderError(f"{run_dir.name} has no model.npz (the job did not finish?)")
    classes, size, channels = meta["classes"], int(meta["size"]), int(meta["channels"])
    images, names, truth, notes = [], [], [], []
    for g in given:  # every path read (and a bad one named) before the model is loaded
        arrays, shown, classes_of, own = _read(Path(str(g)).expanduser(), str(g), size,
                                               channels, several)
        images += arrays
        names += shown
        truth = None if truth is None or classes_of is None else truth + classes_of
        if classes_of is not None:
            unknown = sorted(set(classes_of) - set(classes))
            if unknown:
                own.append(f"class folder{'s' if len(unknown) > 1 else ''} "
                           f"{', '.join(map(repr, unknown))} not among the trained classes "
                           f"({', '.join(classes)}): {'their' if len(unknown) > 1 else 'its'} "
                           f"images count as wrong, and the class is in the per-class "
                           "figures with recall 0")
        notes += [f"{g}: {n}" for n in own] if several else own
    model = models.get("cnn", in_channels=channels, num_classes=len(classes), image_size=size)
    model.load_state_dict(str(weights))
    model.eval()
    probs = []
    with no_grad():
        for i in range(0, len(images), BATCH):
            x = standardise(np.stack(images[i:i + BATCH]), meta["mean"], meta["std"])
            out = model(Tensor(x)).numpy().astype(np.float64)
            z = np.exp(out - out.max(1, keepdims=True))
            probs.append(z / z.sum(1, keepdims=True))
    p = np.concatenate(probs) if probs else np.zeros((0, len(classes)))
    best = p.argmax(1) if len(p) else np.zeros(0, int)
    return ImagePrediction(names, [classes[b] for b in best],
                           [float(v) for v in p.max(1)] if len(p) else [], truth, notes,
                           classes=classes, class_probabilities=p.tolist())
