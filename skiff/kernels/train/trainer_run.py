"""One call of :meth:`.trainer.Trainer.train`: what it set up and has done so far
(:class:`Run`), and the small helpers of its loop."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from .checks import positive_int
from .divergence import DivergenceWatch
from .strategy import Strategy

__all__ = ["Run", "nothing_to_train", "resume_folder", "next_batch", "same_objects", "median",
           "param_dtype", "num_parameters", "memory_in_use", "positive_int", "row_weight",
           "apart_from"]


@dataclass
class Run:
    """One call of :meth:`Trainer.train`: what it set up, and what it has done so far."""

    strategy: Strategy
    loader: object
    val_dataset: object
    total: int  # optimizer steps to reach
    dtype: object
    loss_fn: object
    n_params: int
    step: int = 0
    epochs: float | None = None  # train(epochs=...) (None: steps=): a resume's end (round 44)
    history: list = field(default_factory=list)
    val_history: list = field(default_factory=list)
    evaluation: list = field(default_factory=list)  # the evaluator's rows {"step", ...}
    last_ckpt: object = None
    best: object = None  # keep_best: trainer_keep.BestCheckpoints (made at the first save)
    best_path: str | None = None  # keep_best: the best validation's checkpoint so far
    stopped: str | None = None
    # resume=True: {"from_step": N or None (no checkpoint), "dir", "total"}
    resumed: dict | None = None
    early: object = None  # trainer_stop.EarlyStopping when early_stopping is set
    val_weight: float | None = None  # what the last val_loss divides by (targets or rows)
    val_batch: int | None = None  # a validation DataLoader's batch size (None: the Trainer's)
    # each kept validation's per-class report by step (the last one's, and the best one's
    # under early stopping): result.class_metrics
    class_reports: dict = field(default_factory=dict)
    t_start: float = 0.0
    elapsed: float = 0.0
    samples: int = 0
    tokens: int = 0
    window_t: float = 0.0  # the throughput window since the last logged step
    window_samples: int = 0
    window_tokens: int = 0
    window_losses: list = field(default_factory=list)  # the steps' losses since the last row
    peak: int = 0
    step_times: list = field(default_factory=list)
    # (seconds, samples, tokens) when this call's first step was done: its one-time costs
    # (kernels compiled or loaded from numba's cache, ~1-2 s) are left out of the speed
    # after it, which one process pays in its first step and several ranks before the clock
    first: tuple | None = None
    line_losses: list = field(default_factory=list)  # verbose: losses since the last line
    watch: DivergenceWatch = field(default_factory=DivergenceWatch)  # the loss trend
    # a loss function's dict's other values ({"mae": ...}): the list its calls append to
    # (None: a loss of no dict) and, by name, each step's mean since the last row
    extras: list | None = None
    window_extras: dict = field(default_factory=dict)
    step_extras: dict = field(default_factory=dict)  # the last step's (a callback's metrics)

    def take_extras(self) -> dict:
        """This step's other values of the loss function's dict on this rank: the mean over
        its micro-batches (each call's values already weighed by its rows' share of the
        global batch on data-parallel ranks); the calls list emptied."""
        calls, self.extras[:] = list(self.extras), []
        return {name: float(np.mean([c[name] for c in calls if name in c]))
                for name in dict.fromkeys(k for c in calls for k in c)}

    def note_extras(self, values: dict) -> None:
        """The step's values, averaged over the data-parallel ranks as its loss is, into the
        window (what transformers averages over ``logging_steps``) and a callback's
        metrics."""
        self.step_extras = dict(values)
        for name, value in values.items():
            self.window_extras.setdefault(name, []).append(value)

    def extras_row(self, row: dict) -> dict:
        """The window's means by name (one a row field already has, ``lr``, is
        ``train_lr``); the window emptied."""
        means = apart_from(row, {k: float(np.mean(v)) for k, v in self.window_extras.items()})
        self.window_extras.clear()
        return means

    @property
    def epoch_done(self) -> bool:
        """Whether the loader has used up this epoch's batches."""
        return self.loader.position >= len(self.loader)


def next_batch(loader):
    """The next host batch, moving to the next epoch when this one is used up.

    On data-parallel ranks (``loader.world_size > 1``) it also sets ``loader.row_weight``:
    this rank's rows times the ranks over the global batch's rows (:func:`row_weight`), so
    that a last batch (or a batch size) that does not split evenly is weighted as one device
    weighs it; a rank left without rows gets a stand-in row of weight 0 (its gradients are
    zero, and it takes part in the collectives like the others)."""
    if loader.position >= len(loader):
        loader.epoch += 1
        loader.position = 0
    stream = getattr(loader, "stream", None)
    if stream is not None:  # an IterableDataset: this epoch's own pass (round 44 h11)
        stream.to(loader.epoch)
    index = loader.batch_indices(loader.epoch, loader.position)
    loader.row_weight, index = row_weight(loader, loader.epoch, loader.position, index)
    loader.global_rows = None if loader.row_weight is None else \
        min(loader.batch_size, epoch_items(loader) - loader.position * loader.batch_size)
    loader.position += 1
    return loader.make_batch(index)


def row_weight(loader, epoch: int, position: int, index):
    """``(weight, index)`` of this rank's share ``index`` of batch ``position``: None and the
    index when one rank holds the whole batch; else ``rows * ranks / global rows`` (1.0 for
    an even split) and, for a rank with no rows, weight 0 and the batch's first item."""
    count = int(getattr(loader, "world_size", 1) or 1)
    if count <= 1:
        return None, index
    size = int(loader.batch_size)
    total = min(size, epoch_items(loader) - position * size)
    mine = len(index)
    if total <= 0:
        return None, index
    if mine == 0:
        start = position * size
        return 0.0, loader.order(epoch)[start:start + 1]
    return mine * count / total, index


def epoch_items(loader) -> int:
    """The items an epoch reads: a sampler's ``num_samples`` (a WeightedRandomSampler's
    draw, ``loader._count()``), else the dataset's length. Round 45 (h5): the ranks' rows
    were weighted against the dataset's length, so a draw of 18 of 30 rows at batch 8 on 2
    ranks weighed its last batch of 2 rows as one of 8 (its loss 0.86 off one process's)."""
    count = getattr(loader, "_count", None)
    return int(count()) if callable(count) else len(loader.dataset)


def same_objects(a, b) -> bool:
    """Whether two lists hold the same objects (parameters compare elementwise)."""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def median(values):
    if not values:
        return None
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def param_dtype(model):
    for p in model.parameters():
        return p.dtype
    return None


def num_parameters(model) -> int:
    if hasattr(model, "num_parameters"):
        return int(model.num_parameters())
    return int(sum(int(np.prod(p.shape)) for p in model.parameters()))


def memory_in_use(device) -> int:
    """Bytes in use on ``device``: the cupy pool on a GPU, the resident set on the CPU."""
    if device is not None and getattr(device, "is_gpu", False):
        from skiff.kernels.backend import cupy

        cp = cupy()
        return int(cp.get_default_memory_pool().used_bytes()) if cp is not None else 0
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0




def nothing_to_train(step: int, total: int) -> str | None:
    """What a resume from a checkpoint at ``step`` says when the run asks ``total`` steps
    and the checkpoint already has them (None when there are steps left to train)."""
    if step < total:
        return None
    if step == total:
        where = f"the checkpoint already reaches the {total:,} steps asked"
    else:
        where = (f"the checkpoint is past the {total:,} steps asked: the model holds step "
                 f"{step:,}'s weights")
    return (f"nothing to train, {where} (steps count from step 0: ask for more than "
            f"{step:,} to train on)")


_STEP_NAME = r"step-(\d+)(\.npz)?"


def resume_folder(resume, checkpoint_dir):
    """``Trainer(resume=PATH)`` (transformers' ``resume_from_checkpoint=PATH``, Lightning's
    ``ckpt_path``): the checkpoint folder to go on from, as ``checkpoint_dir``. PATH is the
    folder, its ``latest`` file, or its newest checkpoint (``step-N.npz`` or a ``step-N/``
    folder of several ranks); an older one than the newest is refused (a resume reads the
    newest), as is a ``checkpoint_dir`` elsewhere. ``resume=True`` keeps ``checkpoint_dir``
    (it said "resume=True needs checkpoint_dir" to a path)."""
    import os
    import re
    from pathlib import Path

    if resume is None or isinstance(resume, bool):
        return checkpoint_dir
    if not isinstance(resume, (str, os.PathLike)):
        raise TypeError(f"resume must be True/False or a checkpoint folder's path, got "
                        f"{type(resume).__name__}")
    path = Path(resume).expanduser()
    named = re.fullmatch(_STEP_NAME, path.name)
    folder = path.parent if named or (path.name == "latest" and path.is_file()) else path
    if checkpoint_dir is not None and Path(checkpoint_dir).expanduser().resolve() != \
            folder.resolve():
        raise ValueError(f"resume={str(resume)!r} is in {str(folder)!r} and checkpoint_dir is "
                         f"{str(checkpoint_dir)!r}: give one of them (a resume goes on from "
                         "the newest checkpoint of checkpoint_dir and writes its own there)")
    if not named and not folder.is_dir():  # a path names one (resume=True: maybe none yet)
        raise FileNotFoundError(f"resume={str(resume)!r}: no such checkpoint folder")
    if named:
        if not path.exists():
            raise FileNotFoundError(f"resume={str(resume)!r}: no such checkpoint")
        steps = [int(m.group(1)) for q in folder.iterdir()
                 if (m := re.fullmatch(_STEP_NAME, q.name))]
        newest, asked = max(steps), int(named.group(1))
        if newest != asked:
            raise ValueError(f"resume={str(resume)!r} is step {asked}, but {str(folder)!r} "
                             f"holds a newer checkpoint (step {newest}): a resume goes on from "
                             f"the newest in its folder; copy step {asked} into a folder of "
                             "its own (with its history-*.npz files) to go on from it")
    return folder


def apart_from(row: dict, extras: dict) -> dict:
    """``extras`` (a loss function's values) with a name ``row`` has already (``lr``,
    ``loss``, ...) as ``train_<name>``."""
    return {(f"train_{k}" if k in row else k): v for k, v in extras.items()}
