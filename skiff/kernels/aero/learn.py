"""The learned grid: a small network, trained with skiff's Trainer, that predicts from the
geometry where the nose's flow needs resolution.

Training data are the size fields the a-posteriori estimator arrives at
(:func:`~skiff.kernels.solve.flow.adapt.estimator_sizes`) on training shapes; each point of
the background grid near the train is one sample: its geometry features
(:func:`~skiff.kernels.solve.flow.adapt.features`: distances to the body and the ground,
position against the tip and the shoulder, the shape parameters) and the log of the
estimator's size there. The weights go to a ``.npz`` file that the solver reads with numpy
(:func:`~skiff.kernels.solve.flow.adapt.learned_size`), so a learned grid costs one
network evaluation and one mesh, no solve-estimate-refine loop.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from skiff.kernels.backend.report import NullReporter
from skiff.kernels.solve.flow.adapt import SIZE_MODEL, estimator_sizes, features
from skiff.kernels.solve.flow.nose import NoseShape, background_grid

__all__ = ["TRAINING_SHAPES", "HELD_OUT_SHAPES", "size_samples", "train_size_model",
           "fit_size_network"]

# shapes the network learns from, and shapes it never sees (the comparison runs on these)
TRAINING_SHAPES = (
    NoseShape(1.5, 0.2, 0.10), NoseShape(2.0, 0.8, 0.25), NoseShape(4.5, 0.3, 0.20),
    NoseShape(3.5, 0.9, 0.12), NoseShape(2.5, 0.5, 0.30), NoseShape(5.0, 0.6, 0.15),
)
HELD_OUT_SHAPES = (NoseShape(3.0, 0.4, 0.15), NoseShape(4.0, 0.7, 0.22))


def size_samples(shape: NoseShape, size, *, stride: int = 3, rng=None):
    """``(X, y)``: features and log sizes at the background grid's points outside the
    train, every ``stride``-th point (all of them within 0.3 of the body)."""
    xs, ys = background_grid(shape)
    X, Y = np.meshgrid(xs, ys, indexing="ij")
    keep = ~shape.inside(X, Y)
    sub = np.zeros_like(keep)
    sub[::stride, ::stride] = True
    near = shape.body_distance(X, Y) < 0.3
    keep &= sub | near
    x, y = X[keep], Y[keep]
    return features(shape, x, y).astype(np.float32), size.log_h[keep].astype(np.float32)


def fit_size_network(X, y, *, hidden=(32, 32), steps: int = 3000, seed: int = 0,
                     reporter=None) -> dict:
    """Train ``MLP(8 -> hidden -> 1, silu)`` with skiff's Trainer on standardised inputs
    and targets; returns the weights as the numpy dict the solver reads."""
    from skiff.kernels.train.core.random import seed as seed_all
    from skiff.kernels.train.models.mlp import MLP
    from skiff.kernels.train.trainer import Trainer

    seed_all(seed)
    mean, std = X.mean(axis=0), X.std(axis=0) + 1e-6
    y_mean, y_std = float(y.mean()), float(y.std() + 1e-6)
    Xn = ((X - mean) / std).astype(np.float32)
    yn = ((y - y_mean) / y_std).astype(np.float32)[:, None]
    model = MLP(X.shape[1], 1, hidden=hidden, activation="silu")
    trainer = Trainer(model, lr=3e-3, batch_size=512, weight_decay=0.0, seed=seed,
                      reporter=reporter)
    result = trainer.train((Xn, yn), steps=steps)
    state = model.state_dict()
    names = sorted({k.rsplit(".", 1)[0] for k in state}, key=lambda n: int(n.split(".")[1]))
    out = {"mean": mean.astype(np.float64), "std": std.astype(np.float64),
           "y_mean": np.float64(y_mean), "y_std": np.float64(y_std),
           "activation": np.array("silu"),
           "final_loss": np.float64(getattr(result, "final_loss", np.nan) or np.nan)}
    for i, name in enumerate(names):
        out[f"W{i}"] = np.asarray(state[f"{name}.weight"], dtype=np.float64)
        out[f"b{i}"] = np.asarray(state[f"{name}.bias"], dtype=np.float64)
    return out


def train_size_model(shapes=TRAINING_SHAPES, *, re: float = 1000.0, path=None,
                     steps: int = 3000, fields=None, reporter=None) -> dict:
    """Run the estimator on ``shapes`` (or take their ``fields``, a list of size fields),
    train the network on what it arrived at, write it to ``path`` (default: the file skiff
    ships) and return its weights with a record (``seconds`` per stage, ``samples``)."""
    reporter = reporter or NullReporter()
    t0 = time.perf_counter()
    if fields is None:
        fields = []
        for k, shape in enumerate(shapes):
            size, _ = estimator_sizes(shape, re)
            fields.append(size)
            reporter.progress(k + 1, len(shapes), unit="training shape")
    t1 = time.perf_counter()
    parts = [size_samples(s, f) for s, f in zip(shapes, fields)]
    X = np.concatenate([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    model = fit_size_network(X, y, steps=steps, reporter=reporter)
    model["samples"] = np.int64(len(y))
    # the box it learned in (length, bluntness, clearance, re): a learned solve outside it
    # warns that its sizes are extrapolated (solve.flow.adapt.outside_training)
    extent = np.array([[getattr(s, k) for k in ("length", "bluntness", "clearance")]
                       for s in shapes], float)
    model["train_box"] = np.vstack([np.column_stack([extent.min(0), extent.max(0)]),
                                    [[float(re), float(re)]]])
    model["estimator_seconds"] = np.float64(t1 - t0)
    model["train_seconds"] = np.float64(time.perf_counter() - t1)
    path = Path(path or SIZE_MODEL)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **model)
    return model
