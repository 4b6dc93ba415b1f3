"""The Trainer: three lines from a model and a data set to a trained model.

::

    trainer = skiff.Trainer(model, strategy="auto")
    result = trainer.train(dataset, epochs=10)

:meth:`Trainer.train` reads top to bottom: pick a strategy (one device, or what the planner
chose; :mod:`.resolve`), build the optimizer and schedule, resume if asked, then for each
optimizer step run ``grad_accum`` micro-batches forward and backward, reduce gradients, clip,
step, report, validate at each epoch's end, checkpoint every N steps and at the end, and
return a :class:`~skiff.kernels.train.result.TrainResult`. Everything that differs between one
device and many ranks is a hook of :class:`~skiff.kernels.train.strategy.Strategy`.

The loss is the model's own ``loss(batch)`` when it has one; otherwise a batch is ``(x, y)``
and integer targets mean cross-entropy, float targets mean squared error; ``loss=`` overrides
both (:mod:`.losses`). A run is seeded: the same seed, model and data give the same weights,
and a run that is stopped and resumed from its checkpoint ends with the same weights as one
that never stopped.
"""

from __future__ import annotations

import contextlib
import math
import time
import warnings
from pathlib import Path

import numpy as np

from skiff.kernels.backend.devices import DEFAULT_DEVICE
from skiff.kernels.backend.report import NullReporter

from .checkpoint import checkpoint_name
from .core import random as train_random
from .data import as_dataset, batch_size_of, loader_batch_size, split_off, token_count
from .data_stream import EpochReads, dataset_state, is_stream, reread_each_epoch, set_epoch
from .divergence import OVERFLOW_ERRORS
from .inference import Inference
from .losses import loss_function
from .precision import (
    MixedTraining,
    check_mixed_strategy,
    check_precision,
    clip_values,
    weight_bytes,
)
from .resolve import memory_limit, resolve_strategy
from .result import TrainResult, predicted_vs_measured
from .strategy import NonFiniteLoss, Strategy
from .trainer_callbacks import Callbacks
from .trainer_graph import make_step_graph
from .trainer_keep import (
    BestCheckpoints,
    check_cadence,
    checkpoint_due,
    keep_best_count,
    warn_no_early_validation,
    warn_unscored,
)
from .trainer_run import (
    Run,
    apart_from,
    median,
    memory_in_use,
    next_batch,
    nothing_to_train,
    num_parameters,
    param_dtype,
    positive_int,
    resume_folder,
    same_objects,
)
from .trainer_schedule import (
    bound_scheduler,
    check_interval,
    check_plateau,
    check_schedule,
    is_scheduler,
    lightning_schedule,
    make_schedule,
    on_plateau,
)
from .trainer_state import TrainerState
from .trainer_stop import EarlyStopping, check_early_stopping, check_monitor, default_hold_out

__all__ = ["Trainer", "TrainingDiverged"]

LOSSES = ("auto", "cross_entropy", "mse", "bce")
DEFAULT_LR = 1e-3  # a model without config.lr (any nn.Module of the user's)


class TrainingDiverged(FloatingPointError):
    """The loss became NaN or infinite; the message names the step."""


# ------------------------------------------------------------------------------------------

def _sequence_length(model, dataset) -> int | None:
    """The tokens per sequence the plan costs: the data's (``--block-size 64`` cuts a
    model's 256-token context to 64), else the model's context (``config.block_size``);
    None for a model without one (the plan's own guess)."""
    own = getattr(getattr(model, "config", None), "block_size", None)
    if own is None:
        return None
    block = getattr(dataset, "block_size", None)
    if block is None and dataset is not None:
        try:  # token blocks: each sample's inputs are one sequence of ids
            first = dataset[0]
            x = np.asarray(first[0] if isinstance(first, (tuple, list)) else first)
            block = int(x.shape[-1]) if x.ndim == 1 and x.dtype.kind in "iu" else None
        except Exception:  # noqa: BLE001 - a dataset that cannot be read so: the model's
            block = None
    return int(block) if block else own


class Trainer(Inference, TrainerState):
    """Train a model on a data set, on one device or many ranks.

    Parameters
    ----------
    model : Module
        A skiff ``nn.Module``; trained in place.
    strategy : str or Strategy
        ``"auto"`` (one process: the single device; several ranks: the planner decides),
        ``"single"``, ``"dp"``, ``"zero2"``, a layout ``"dp=2,tp=1,pp=1"``, or an instance.
    optimizer : Optimizer, callable or None
        An optimizer over ``model.parameters()``, or ``make(params) -> Optimizer``; default
        AdamW with ``lr`` and ``weight_decay``.
    lr : float or None
        Peak learning rate (default: ``model.config.lr`` when the model has one, else 1e-3).
    batch_size : int
        Samples per optimizer step over all ranks, before accumulation is split off:
        each micro-batch has ``batch_size`` samples and a step sees ``grad_accum`` of them.
    loss : {"auto", "cross_entropy", "mse", "bce"} or callable
        ``"auto"``: the model's own ``loss(batch)`` when it has one, else cross-entropy for
        integer targets and MSE for float targets; ``"bce"`` is binary cross-entropy on raw
        scores (one output per 0/1 label). ``loss(output, target) -> scalar Tensor`` (e.g.
        ``nn.CrossEntropyLoss()``) overrides the model's ``loss(batch)``.
    device : str
        ``"auto"``, ``"cpu"``, ``"cuda:0"`` ...
    grad_accum : int
        Micro-batches whose gradients add up before each optimizer step.
    device_memory : int, str or None
        Memory a device may use, bytes or text like ``"40GB"`` (as ``%plan
        --device-memory``): ``strategy="auto"`` chooses as for devices of that size (e.g.
        ZeRO when Adam's state does not fit). Default: what the device reports.
    clip : float or None
        Clip the global gradient norm to this (None or 0: no clipping).
    clip_by : {"norm", "value"}
        ``"value"``: ``clip`` bounds each gradient element to ``[-clip, clip]`` instead
        (torch's ``clip_grad_value_``, Lightning's ``gradient_clip_algorithm="value"``), on
        the gradients the optimizer steps (averaged over dp ranks, unscaled in mixed
        precision).
    schedule : {"cosine", "linear", "constant"} or callable
        Learning-rate schedule: linear warmup over ``warmup_steps`` then cosine (or a
        straight line, transformers' default) to ``min_lr_ratio * lr``, or constant; or a
        factory ``make(optimizer)`` of a torch-style scheduler (``lambda opt:
        skiff.optim.lr_scheduler.StepLR(opt, 10)``), stepped after every optimizer step and
        kept in checkpoints, as a torch loop steps its own; a ``ReduceLROnPlateau`` is
        stepped after each validation on ``monitor`` (``"val_loss"``) instead. A scheduler
        made on the optimizer instance given as ``optimizer=`` is used as it is.
    schedule_interval : {"step", "epoch"}
        When a scheduler of one's own (a factory's or an instance) is stepped: after every
        optimizer step (default, transformers'), or once at each epoch's end, as a torch
        loop that calls ``scheduler.step()`` after its epoch (torch's ImageNet example's
        ``StepLR(opt, 30)``) and Lightning's default ``"interval": "epoch"`` step it.
    weight_decay, decay_bias_norm
        The built-in AdamW's decoupled weight decay (default 0.01, torch's AdamW default),
        on every parameter as ``torch.optim.AdamW(model.parameters())`` decays them, biases
        and norm scales too (a ported torch script trains the same); with ``"sgd"`` or
        ``"adam"`` (default 0, as torch's) a value given is their L2 weight decay, as
        ``torch.optim.SGD``'s and ``Adam``'s ``weight_decay``. ``decay_bias_norm=False``
        leaves the parameters of one axis (biases, LayerNorm/BatchNorm scales and shifts)
        out, as transformers' Trainer and nanoGPT do: two AdamW groups, the second of
        weight decay 0 (the command line's ``--no-bias-norm-decay``); under ZeRO, whose
        slice is one group, the same parameters' elements decay by a mask.
    checkpoint_dir, checkpoint_every, keep_checkpoints
        Where, how often (optimizer steps, or ``"epoch"``: at each epoch's end, transformers'
        ``save_strategy="epoch"``), and how many of the newest checkpoints to keep. A
        checkpoint is always written at the end when ``checkpoint_dir`` is set (or the
        reporter has a run folder, then ``run_dir/checkpoints``).
    keep_best : bool or int
        Keep the checkpoint of the best validation (``monitor``, in ``mode``) beside the
        newest ``keep_checkpoints`` (transformers' ``save_total_limit`` with
        ``metric_for_best_model``, Lightning's ``ModelCheckpoint(monitor=...)``), or the
        ``K`` best with ``keep_best=K`` (Lightning's ``save_top_k=K``, beside the newest
        ones a resume goes on from, as Lightning's ``save_last``; ``best.json`` lists the
        K in order): a
        checkpoint written at a step that validated is scored by that validation;
        ``result.best_checkpoint`` names it and the folder's ``best.json`` holds every
        kept checkpoint's score (``model.load_state_dict(path)`` loads its weights). Needs
        validation data and a checkpoint folder (:mod:`.trainer_keep`).
    resume : bool or path
        Continue from the newest checkpoint in ``checkpoint_dir``; a path (the folder, or
        its newest ``step-N.npz``, as transformers' ``resume_from_checkpoint=``) is that
        folder as ``checkpoint_dir``.
    seed : int
        Seeds the data order and dropout: the Trainer owns its generator (``trainer.rng``,
        saved in its checkpoints), so runs on other threads never change its numbers.
    shuffle, drop_last
        A new order each epoch (default: yes, except for a stream, a generator or an
        ``IterableDataset``, read in its own order as torch's DataLoader reads one;
        ``shuffle=True`` given shuffles each of its passes), and a last, smaller batch left
        out. An ``IterableDataset``'s ``__iter__`` is called again at each epoch (and its
        ``set_epoch(epoch)`` where it has one); a generator, one pass, is replayed.
    reporter : Reporter or None
        Where loss, learning rate, throughput and memory go (default: nowhere).
    log_every : int
        Report metrics every this many steps; a row's loss is the mean of its steps' losses
        (transformers' ``logging_steps``), the last step's before round 30.
    stop_on_divergence : bool
        The loss trend is watched (:mod:`.divergence`): a loss that runs away logs a
        warning; with this, the run stops there with :class:`TrainingDiverged`, naming the
        last checkpoint from before the divergence began.
    evaluator : callable or None
        ``evaluator(model) -> {name: value}`` (e.g. a held-out set,
        :class:`~skiff.kernels.train.models.evaluate.HeldOut`): run on the reporting rank
        before the first step, every ``eval_every`` steps and after the last, each value
        reported as a metric at that step and kept in ``result.evaluation``. It needs the
        whole model on that rank: one device, DP or ZeRO; under TP or EP of an ERNIE model
        the ranks gather a whole copy for it; under PP the stages' weights.
    eval_every : int or None
        Optimizer steps between evaluations (None: only before and after training); the
        validation data is validated every ``eval_every`` steps (and after the last) instead
        of at each epoch's end (transformers' ``eval_steps`` with ``eval_strategy="steps"``,
        Lightning's integer ``val_check_interval``): early stopping's patience and a
        ``ReduceLROnPlateau`` count those validations.
    recompute : bool or None
        Activation checkpointing (:mod:`.core.recompute`): each block of a GPT or ERNIE-4.5
        model keeps only its input and is recomputed in backward (far less activation
        memory, ~1/3 more compute). None: as the plan chose.
    early_stopping : int or None
        Stop once the validation loss (scored at each epoch's end, or every ``eval_every`` steps)
        has not improved for this many validations in a row, and end with the weights of the best
        one (``result.best_step``; :mod:`.trainer_stop`). Needs ``val_dataset`` or ``val_split``; a
        text or an image folder without them holds its last tenth out (said in the log).
    monitor, mode : str
        What early stopping (and a ``ReduceLROnPlateau`` schedule, stepped after each
        validation) watches: ``"val_loss"`` (default), ``"val_accuracy"``,
        ``"val_f1"`` (macro F1 of a classifier) or another name of the validation rows
        (Keras' and Lightning's ``monitor``), and whether smaller (``"min"``) or larger
        (``"max"``) is better; ``"auto"``: larger for an accuracy, F1, AUC, precision,
        recall, R^2, exact match or score (``result.best_metric`` holds the best value).
    callbacks : list or None
        Functions ``cb(metrics)`` called after every step, or objects with
        ``on_step_end(trainer, metrics)``, ``on_validation_end(trainer, metrics)``,
        ``on_train_end(trainer, result)``; returning True or setting ``trainer.should_stop``
        ends the run there (:mod:`.trainer_callbacks`).
    class_weight : "balanced", dict, array or None
        Cross-entropy weighted per class, as torch's ``nn.CrossEntropyLoss(weight=...)``
        (the mean divides by the targets' weights; validation losses are weighted too):
        ``"balanced"`` is scikit-learn's ``n_samples / (n_classes * bincount(y))`` over the
        training targets, a dict ``{class id: weight}`` leaves other classes at 1, an array
        gives one weight per class (:mod:`.trainer_class_weight`).
    cuda_graph : bool or None
        Replay the step as one CUDA graph (:mod:`.core.graph`): on one GPU with AdamW, no
        gradient accumulation or mixed precision, the step's ~400 kernel launches from Python
        become one (a small model's step is bound by those launches). None: when the run can
        be captured and the model is built of skiff's own modules (the first replay is checked
        against the eager step; the log says why a step runs eagerly); True: any model (its
        forward must keep no Python state between steps: a replay repeats the recorded
        kernels), and the log says why a run cannot be; False: never.
    verbose : bool
        Print one line per epoch (and at the end): step, mean training loss since the last
        line, validation metrics, elapsed time. For a direct call in a notebook or script;
        jobs show the same live in their widget.

    Examples
    --------
    >>> import numpy as np, skiff
    >>> from skiff import nn
    >>> x = np.random.default_rng(0).standard_normal((64, 2)).astype("f4")
    >>> y = (x[:, 0] > 0).astype("i8")              # integer labels: cross-entropy
    >>> model = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 2))
    >>> trainer = skiff.Trainer(model, lr=1e-2, batch_size=16)
    >>> result = trainer.train((x, y), epochs=2, val_dataset=(x, y))
    >>> result.steps, sorted(result.val_history[-1])
    (8, ['epoch', 'step', 'val_accuracy', 'val_balanced_accuracy', 'val_f1', 'val_loss'])
    >>> trainer.predict(x).shape                    # outputs as numpy, in eval mode
    (64, 2)
    """

    def __init__(self, model, *, strategy="auto", optimizer=None, lr: float | None = None,
                 batch_size: int = 32, loss="auto", device=DEFAULT_DEVICE, grad_accum: int = 1,
                 clip: float | None = 1.0, schedule: str = "cosine",
                 warmup_steps: int | None = None, min_lr_ratio: float = 0.1,
                 weight_decay: float | None = None, decay_bias_norm: bool = True,
                 checkpoint_dir=None,
                 checkpoint_every: int | str | None = None, keep_checkpoints: int = 3,
                 keep_best: bool = False,
                 resume: bool = False, seed: int = 0, reporter=None, log_every: int = 1,
                 shuffle: bool | None = None, drop_last: bool = False, verbose: bool = False,
                 stop_on_divergence: bool = False, precision: str = "32",
                 evaluator=None, eval_every: int | None = None,
                 recompute: bool | None = None, cuda_graph: bool | None = None,
                 early_stopping: int | None = None, callbacks=None, class_weight=None,
                 device_memory=None, monitor: str = "val_loss", mode: str = "auto",
                 clip_by: str = "norm", schedule_interval: str = "step", **unknown):
        if not hasattr(model, "parameters") or type(model).__module__.split(".")[0] in (
                "torch", "tensorflow", "keras", "jax", "flax", "sklearn"):
            raise TypeError(f"Trainer needs a skiff nn.Module (build it from skiff.nn), got "
                            f"{type(model).__module__}.{type(model).__qualname__}")
        if unknown:
            _unknown_setting(unknown)
        positive_int("batch_size", batch_size)
        positive_int("grad_accum", grad_accum)
        positive_int("log_every", log_every)
        check_cadence(checkpoint_every)  # N steps or "epoch" (round 41)
        self.keep_best = keep_best_count(keep_best)  # True: 1; K: the K best (round 41 h9)
        if eval_every is not None:
            positive_int("eval_every", eval_every)
        if evaluator is not None and not callable(evaluator):
            raise TypeError(f"evaluator must be callable(model) -> dict, got {evaluator!r}")
        if lr is not None and not (isinstance(lr, (int, float)) and math.isfinite(lr)
                                   and lr > 0):
            raise ValueError(f"lr must be a positive finite number, got {lr!r}")
        if clip is not None and not clip >= 0:
            raise ValueError(f"clip must be positive, or 0 or None (no clipping), got {clip!r}")
        clip = clip or None  # 0: no clipping (the command line's --clip 0, transformers'
        # max_grad_norm=0, Lightning's gradient_clip_val=0; it was refused, round 37)
        if clip_by not in ("norm", "value"):
            raise ValueError(f"clip_by is 'norm' (the global gradient norm, the default) or "
                             f"'value' (each element within [-clip, clip]), got {clip_by!r}")
        # Lightning's {"scheduler": s, "interval": "epoch"} (round 45 h5: "unknown schedule")
        schedule, schedule_interval = lightning_schedule(schedule, schedule_interval, monitor)
        check_schedule(schedule)  # "cosine", "linear", "constant" or a factory
        self.schedule_interval = check_interval(schedule_interval, schedule)
        from .trainer_torch_habits import check_loss_module, check_one_optimizer

        check_loss_module(loss)  # torch.nn.CrossEntropyLoss(): skiff's of the same name
        if isinstance(loss, str) and loss not in LOSSES and loss != "ce":
            raise ValueError(f"unknown loss {loss!r}: choose from {', '.join(LOSSES)} "
                             "or pass a callable loss(output, target)")
        if recompute and not hasattr(model, "recompute"):
            raise ValueError(f"recompute=True (activation checkpointing) needs a model made of "
                             f"blocks it can recompute (GPT, ERNIE-4.5); "
                             f"{type(model).__name__} has none")
        checkpoint_dir = resume_folder(resume, checkpoint_dir)  # resume="ck/": the folder
        resume = bool(resume)
        if resume and checkpoint_dir is None and getattr(reporter, "run_dir", None) is None:
            raise ValueError("resume=True needs checkpoint_dir (where the checkpoints are; or "
                             "resume='that/folder')")
        self.early_stopping = check_early_stopping(early_stopping)
        self.monitor, self.monitor_mode = check_monitor(monitor, mode)
        self._monitor_given = (self.monitor, mode) not in (("val_loss", "auto"),
                                                           ("val_loss", "min"))
        if not callable(schedule):  # a factory's may be a ReduceLROnPlateau (train checks)
            self._check_monitor_used(schedule if is_scheduler(schedule) else None)
        from .trainer_class_weight import check_class_weight

        self.class_weight = check_class_weight(class_weight, "cross_entropy" if loss == "ce"
                                               else loss, model)
        self.class_weights_ = None  # the weights in use ("balanced": counted by train())
        self.callbacks = Callbacks(callbacks)  # user code at step ends (trainer_callbacks.py)
        self.should_stop = False  # a callback sets it (Lightning's name) to end the run
        if cuda_graph not in (None, True, False):
            raise ValueError(f"cuda_graph must be None (auto), True or False, got {cuda_graph!r}")
        from .trainer_launch import launch_reporter

        self.model = model
        self.strategy_spec = strategy
        # the memory a device may use ("40GB" or bytes): the plan chooses as for that size
        self.device_memory = None if device_memory is None else memory_limit(device_memory)
        check_one_optimizer(optimizer)
        if is_scheduler(schedule) and schedule.optimizer is not optimizer:
            bound_scheduler(schedule, optimizer)  # made on another optimizer: refused now
        self.optimizer_spec = optimizer
        # a model of its own (gpt-mini, ERNIE) says its rate; any other gets Adam's usual
        # 1e-3 (3e-4 left a linear regression at R^2 0.18 after 20 epochs of warm-up + cosine)
        self.lr = lr if lr is not None else float(getattr(getattr(model, "config", None),
                                                          "lr", DEFAULT_LR) or DEFAULT_LR)
        self.batch_size = int(batch_size)
        self.loss_spec = "cross_entropy" if loss == "ce" else loss
        self.device = device
        self.grad_accum = int(grad_accum)
        # the norm clip (None with clip_by="value") and the element bound (None by norm)
        self.clip, self.clip_value = (None, clip) if clip_by == "value" else (clip, None)
        self.schedule = schedule
        self.warmup_steps = warmup_steps
        self.min_lr_ratio = min_lr_ratio
        self.weight_decay = weight_decay
        if not isinstance(decay_bias_norm, bool):
            raise TypeError(f"decay_bias_norm is True (torch's AdamW: every parameter decays) "
                            f"or False (transformers': biases and norms do not), got "
                            f"{decay_bias_norm!r}")
        self.decay_bias_norm = decay_bias_norm
        # none given: one rank, or this rank of an MPI launch (mpiexec, MPI.COMM_SELF.Spawn)
        self.reporter = reporter if reporter is not None else launch_reporter(strategy)
        if optimizer is not None and not isinstance(optimizer, str) and (
                weight_decay is not None or not decay_bias_norm):
            # the optimizer given decays as it was built: said (round 44 h5: the setting
            # was dropped without a word, as transformers' Trainer drops it)
            what = "weight_decay" if weight_decay is not None else "decay_bias_norm"
            value = weight_decay if weight_decay is not None else decay_bias_norm
            self._say_resume(f"{what}={value!r} is not used: optimizer= is yours and decays "
                             "as you built it (its groups' weight_decay); set it there, or "
                             "leave optimizer= out for the built-in AdamW")
        if checkpoint_dir is None and getattr(self.reporter, "run_dir", None) is not None:
            checkpoint_dir = Path(self.reporter.run_dir) / "checkpoints"
        if keep_best and checkpoint_dir is None:
            raise ValueError("keep_best=True keeps the best validation's checkpoint: give "
                             "checkpoint_dir='ck' (where the checkpoints go)")
        if checkpoint_every is not None and checkpoint_dir is None:
            # Lightning writes into its default_root_dir, transformers needs output_dir: one
            # of ours wrote nothing, without a word (a resume then started from step 0)
            warnings.warn(f"checkpoint_every={checkpoint_every} without checkpoint_dir: no "
                          "checkpoint is written; give checkpoint_dir='ck' (where they go)",
                          UserWarning, stacklevel=2)
        self.checkpoint_dir = None if checkpoint_dir is None else Path(checkpoint_dir)
        self.checkpoint_every = checkpoint_every
        self.keep_checkpoints = keep_checkpoints
        self.resume = resume
        self.seed = int(seed)
        self.log_every = int(log_every)
        # None: shuffled, except a stream (read in its order, as torch's DataLoader reads an
        # IterableDataset and transformers' and Keras' fit read one; round 44 h11)
        self.shuffle = True if shuffle is None else shuffle
        self._shuffle_given = shuffle is not None
        self.drop_last = drop_last
        self.verbose = bool(verbose)
        self.stop_on_divergence = bool(stop_on_divergence)
        self.precision = check_precision(precision)
        self.evaluator, self.eval_every = evaluator, eval_every
        self.recompute_spec = recompute
        self.cuda_graph = cuda_graph
        self._graph = None
        self.mixed: MixedTraining | None = None
        self.strategy: Strategy | None = None
        self.optimizer = None
        self.scheduler = None
        self.plan: dict = {}
        self.rng = train_random.new_generator(self.seed)   # owned: saved in checkpoints

    def evaluate(self, dataset, batch_size: int | None = None, *, per_class: bool = False):
        from .trainer_torch_habits import from_torch_loader

        self._refuse_stale("evaluate")   # from a callback during a pp run
        _keras_pair("evaluate", batch_size, "batch_size=...")
        dataset, size = from_torch_loader(dataset)  # a torch DataLoader: its dataset
        size = size or loader_batch_size(dataset)  # skiff.utils.data's: its batch size too
        return super().evaluate(dataset, batch_size or size, per_class=per_class)

    evaluate.__doc__ = Inference.evaluate.__doc__

    def predict(self, data, batch_size: int | None = None, *, inputs: int = 1):
        from .trainer_torch_habits import from_torch_loader

        self._refuse_stale("predict")
        data, size = from_torch_loader(data)
        return super().predict(data, batch_size or size or loader_batch_size(data),
                               inputs=inputs)

    predict.__doc__ = Inference.predict.__doc__

    def __getattr__(self, name: str):
        # only for an attribute not found: another library's method names skiff's call
        from .trainer_torch_habits import other_method_error

        raise other_method_error(type(self).__name__, name)

    def lr_find(self, data, *, min_lr: float = 1e-8, max_lr: float = 1.0,
                steps: int = 100) -> dict:
        """The learning-rate range test (Lightning's ``Tuner.lr_find``): ``steps`` steps
        with the lr growing from ``min_lr`` to ``max_lr``, the model's weights put back
        after; ``{"lr", "loss" (smoothed), "raw_loss", "suggestion"}``
        (:mod:`.trainer_lr_find`). Then ``Trainer(model, lr=found["suggestion"])``."""
        from .trainer_lr_find import lr_find

        return lr_find(self, data, min_lr=min_lr, max_lr=max_lr, steps=steps)

    def whole_state_dict(self) -> dict:
        """The trained model's single-device state dict (host arrays), on every rank: a
        model split by tp is gathered, so under several ranks this is a collective call
        that every rank makes (then save it on rank 0)."""
        if self.strategy is None:
            return self.model.state_dict()
        return self.strategy.full_state_dict(self.model)

    # --------------------------------------------------------------------------------------
    def train(self, dataset, *positional, epochs: float | None = None,
              steps: int | None = None, val_dataset=None, val_split: float | None = None,
              **misplaced) -> TrainResult:
        """Train on ``dataset`` for ``epochs`` passes or ``steps`` optimizer steps (neither:
        one epoch); evaluate ``val_dataset`` after each epoch, or every ``eval_every`` steps
        (and after the last step).
        ``val_split=0.2`` keeps the last fifth of ``dataset`` apart as the validation set
        instead. Returns a :class:`TrainResult`. ``epochs``, ``steps`` and ``val_dataset``
        may also be given by position, in that order.
        """
        if misplaced:
            _misplaced(misplaced)
        if positional:  # train(data, 10), and Keras' train(x, y, epochs=10) said clearly
            _keras_pair("train", positional[0], "epochs=...")
            given = {"epochs": epochs, "steps": steps, "val_dataset": val_dataset}
            if len(positional) > len(given):
                raise TypeError(f"train() takes the data and at most epochs, steps and "
                                f"val_dataset by position; got {1 + len(positional)} "
                                "positional arguments")
            for name, value in zip(given, positional):
                if given[name] is not None:
                    raise TypeError(f"train() got {name} twice, by position and by name")
                given[name] = value
            epochs, steps, val_dataset = given["epochs"], given["steps"], given["val_dataset"]
        _keras_pair("train", epochs, "epochs=...")
        self.should_stop = False  # a callback's stop ends one run, not the next train()
        # an exception on one rank stops the others too (they would wait in a collective);
        # from the first line on: reading the data may fail on one rank only
        from .parallel.rank_alarm import rank_alarm

        with rank_alarm(getattr(self.reporter, "world_size", 1)) as alarm:
            return self._train(alarm, dataset, epochs, steps, val_dataset, val_split)

    def _train(self, alarm, dataset, epochs, steps, val_dataset, val_split) -> TrainResult:
        """:meth:`train` under its rank alarm (:mod:`.parallel.rank_alarm`)."""
        # a DataLoader in place of the data: its batch size is the one meant, for this call
        from .trainer_torch_habits import from_torch_loader, loader_order

        order = loader_order(dataset)  # its shuffle and drop_last, for this call too
        dataset, torch_batch = from_torch_loader(dataset)  # torch's: its dataset, batch size
        # an image folder's (skiff's, torchvision's) or a table's classes: the per-class
        # report names them (it said '0', '1' where the line said 'cats', 'dogs')
        self._class_names = _class_names(dataset)
        # a validation DataLoader's batch size is the one it validates at (a collate_fn that
        # pads gives other outputs in other batches; it validated at the training batch's)
        val_dataset, val_batch = from_torch_loader(val_dataset)
        val_batch = val_batch or loader_batch_size(val_dataset)
        own_batch, loader_batch = self.batch_size, torch_batch or loader_batch_size(dataset)
        from .inference import by_feature_names, frame_columns

        # a DataFrame's column names: predict(df) finds the features by name (a frame in
        # another column order predicted from the wrong columns, silently)
        self.feature_names = frame_columns(dataset)
        # a validation frame in another column order is taken by name as well (evaluate too)
        val_dataset = by_feature_names(val_dataset, self.feature_names, "to validate on")
        held_note = None
        if self.early_stopping is not None and val_dataset is None and val_split is None:
            # a text or an image folder holds its last tenth out, as on the line (round 34)
            val_split, held_note = default_hold_out(dataset, self.early_stopping)
        dataset, val_dataset = self._check_data(dataset, epochs, steps, val_dataset, val_split,
                                                loader_batch or own_batch)
        if self.keep_best and val_dataset is None:
            raise ValueError("keep_best=True keeps the best validation's checkpoint: give "
                             "val_dataset= or val_split= (what it validates on)")
        if held_note:
            held_note = f"{held_note}: {len(dataset)} items train, {len(val_dataset)} validate"
            self.reporter.log(held_note)
            if self.verbose and getattr(self.reporter, "rank", 0) == 0:
                print(held_note)
        elif val_split is not None and getattr(val_dataset, "split_note", None):
            held_note = val_dataset.split_note  # a chat file's conversations held out whole
            self.reporter.log(held_note)
        own_order = {"shuffle": self.shuffle, "drop_last": self.drop_last}
        try:
            if loader_batch is not None and loader_batch != own_batch:
                self.batch_size = loader_batch
                self.reporter.log(f"batch size {loader_batch}: the DataLoader's (the "
                                  f"Trainer's batch_size is {own_batch})")
            for key, value in (order or {}).items():
                if value != own_order[key]:
                    setattr(self, key, value)
                    self.reporter.log(f"{key}={value}: the DataLoader's (the Trainer's "
                                      f"{key} is {own_order[key]})")
            if self._streamed and order is None and self.shuffle and \
                    not self.__dict__.get("_shuffle_given", True):
                # a stream was shuffled pass by pass, where torch's DataLoader refuses
                # shuffle=True over an IterableDataset and transformers and Keras read it in
                # its order: a ported loop's losses left torch's at step 1 (round 44 h11)
                self.shuffle = False
                self.reporter.log("the stream is read in its own order, as torch's "
                                  "DataLoader reads an IterableDataset (Trainer(shuffle="
                                  "True) shuffles each pass)", level="info")
            strategy = self._choose_strategy(dataset)
            self.rng = train_random.new_generator(self.seed)  # this run's own: dropout draws
            with train_random.using(self.rng):
                if getattr(alarm, "comm", None) is not None:  # several ranks: one dataset
                    from .parallel.same_data import check_same_data

                    reads = self._epoch_reads
                    if reads is not None:  # a stream's first pass: the ranks' shortest too
                        reads.items[:] = reads.items[:self._agree_pass(
                            alarm.comm, 0, len(reads.items))]
                        reads.first = len(reads.items)

                    said = check_same_data(alarm.comm, dataset, stream=self._streamed)
                    if said:  # a stream's passes differ over the ranks (round 44 h11)
                        self._say_once(said)
                run = self._prepare(strategy, dataset, val_dataset, epochs, steps)
                run.loader.stream = self._epoch_reads  # next_batch reads each epoch's pass
                if self._epoch_reads is not None:  # a pass of another length: re-planned
                    self._epoch_reads.on_pass = lambda: self._replan_stream(run)
                    if getattr(alarm, "comm", None) is not None:  # the ranks' shortest pass
                        comm = alarm.comm
                        self._epoch_reads.agree = lambda e, n: self._agree_pass(comm, e, n)
                run.val_batch = val_batch
                self._live_strategy = strategy  # evaluate/predict in the run: _refuse_stale
                alarm.where = lambda: f"after step {run.step}"
                if self.resume:
                    self._resume_from_checkpoint(run)
                    self._say_stream_resumed(run)
                # an early stopping no validation before the last step can trigger (round 41)
                said = [warn_no_early_validation(self, run), warn_unscored(self, run)]
                self._run_steps(run)
                result = self._finish(run)
                # the terminal's summary shows the result's notes
                result.notes.extend(note for note in said if note)
                if held_note:  # also on the result, for a script that logs nothing
                    result.notes.append(held_note)
                return result
        finally:
            self.batch_size = own_batch
            self.shuffle, self.drop_last = own_order["shuffle"], own_order["drop_last"]
            self._live_strategy = None

    def _refuse_stale(self, what: str) -> None:
        """``trainer.evaluate()`` / ``predict()`` from a callback during a run whose ranks
        each hold only part of the weights current (pp): refused, naming the ways that
        work. It scored a model whose other stages held their initial weights; gathering
        them here would be a collective, which a callback that calls it on rank 0 alone
        (the usual guard for logging) would wait in for ever."""
        live = self.__dict__.get("_live_strategy")
        if live is not None and live.stale_elsewhere():
            raise ValueError(f"trainer.{what}() during a {live.name} run: each rank holds "
                             "only its own stage's current weights (the others are their "
                             "initial ones there); give val_dataset= (the loop gathers the "
                             f"stages before it validates) or call {what}() after train() "
                             "returns")

    def _say_stream_resumed(self, run: Run) -> None:
        """A resume on an ``IterableDataset`` (round 44 h11): what is read, said once."""
        loader = run.loader
        if self._epoch_reads is None or not (loader.epoch or loader.position):
            return
        ahead = min(loader.position * loader.batch_size, len(loader.dataset))
        kept = self._epoch_reads.start_state is not None
        self.reporter.log(
            f"resumed on a stream: epoch {loader.epoch + 1}'s pass is read again from its "
            f"start (__iter__, and set_epoch({loader.epoch}) where the dataset has one) and "
            f"its first {ahead} samples ({loader.position} batches) skipped, as "
            "transformers skips them; " + (
                "the dataset's state at the pass's start was put back first "
                "(load_state_dict, torchdata's StatefulDataLoader convention), so the pass "
                "is the uninterrupted run's" if kept else
                "a stream whose passes draw from its own state (a generator kept across "
                "passes) reads other samples than the uninterrupted run, unless the dataset "
                "has state_dict() and load_state_dict() (torchdata's StatefulDataLoader "
                "convention): then the checkpoint keeps its state"),
            level="info")

    def _say_once(self, note: str) -> None:
        """A warning in the job's log, and in a script (rank 0) a ``UserWarning``."""
        self.reporter.log(note, level="warning")
        if type(self.reporter) is NullReporter and getattr(self.reporter, "rank", 0) == 0:
            warnings.warn(note, UserWarning, stacklevel=5)

    # -- the stages of train(), in order -----------------------------------------------------
    def _check_data(self, dataset, epochs, steps, val_dataset, val_split, batch_size):
        """The training and validation data sets, checked (``val_split`` applied). A stream
        under ``steps=N`` is read only as far as N steps of ``batch_size`` use (an endless
        generator was read to 2^22 samples and refused; transformers' ``max_steps``)."""
        if epochs is not None and steps is not None:
            raise ValueError(f"give epochs or steps, not both (got epochs={epochs!r}, "
                             f"steps={steps!r})")
        if epochs is not None and not epochs > 0:
            raise ValueError(f"epochs must be positive, got {epochs!r}")
        if steps is not None:
            positive_int("steps", steps)
        _frame_alone(dataset, self.model)
        take = None
        source = getattr(dataset, "dataset", dataset)
        streamed = self._streamed = is_stream(source)
        if steps is not None and streamed:
            take = int(steps) * self.grad_accum * batch_size
            if isinstance(val_split, (int, float)) and 0 < val_split < 1:  # held out of it
                take = math.ceil(take / (1.0 - float(val_split)))
        # an IterableDataset is read again each epoch, as torch's DataLoader calls its
        # __iter__ each epoch (round 44 h11: one pass was replayed, fresh augmentations and
        # reshuffled shards drawn once); a generator (one pass) or a held-out cut replays
        again = take is None and val_split is None and reread_each_epoch(source)
        self._epoch_reads = None
        start_state = None
        if again:
            set_epoch(source, 0)  # transformers' set_epoch(epoch) before each epoch's pass
            start_state = dataset_state(source)  # a stateful dataset's (round 45 h5)
        dataset = as_dataset(dataset, take=take)
        if again:
            items = getattr(dataset, "dataset", dataset)
            if isinstance(items, list):
                self._epoch_reads = EpochReads(source, items, start_state=start_state)
        if take is not None:
            self.reporter.log(f"the stream's first {len(dataset)} samples read: {steps} steps "
                              f"x {self.grad_accum} x batch {batch_size}"
                              + (f", and the val_split {val_split}" if val_split else ""))
        elif self._epoch_reads is not None and (epochs or 1) > 1:
            self.reporter.log(f"the dataset is a stream without a length: {len(dataset)} "
                              "samples a pass, its __iter__ called again at each epoch's "
                              "start (as torch's DataLoader calls it)", level="info")
        elif streamed and (epochs or 1) > 1:
            # transformers refuses a stream without max_steps; skiff reads it once and
            # replays it: said, since a generator drawing fresh augmentations each pass
            # gives the same ones every epoch here (round 42 h13)
            note = (f"the dataset is a stream without a length: its {len(dataset)} samples "
                    f"were read once and each of the {epochs:g} epochs replays them (a "
                    "generator's random augmentations are not drawn again); "
                    "train(..., steps=N) reads on from the stream instead")
            self.reporter.log(note, level="info")
            from skiff.kernels.backend.report import NullReporter

            if type(self.reporter) is NullReporter and getattr(self.reporter, "rank", 0) == 0:
                warnings.warn(note, UserWarning, stacklevel=4)  # a script: nowhere else
        if val_dataset is not None:
            val_dataset = as_dataset(val_dataset, what="validation dataset")
        if len(dataset) == 0:
            raise ValueError("the dataset is empty: nothing to train on")
        if val_split is not None:
            if val_dataset is not None:
                raise ValueError("give val_dataset or val_split, not both")
            dataset, val_dataset = split_off(dataset, val_split)
        return dataset, val_dataset

    def _choose_strategy(self, dataset=None) -> Strategy:
        """One device, or the planner's layout over the job's ranks; the plan is reported."""
        rep = self.reporter
        seq_len = _sequence_length(self.model, dataset)
        world = getattr(rep, "world_size", 1)
        # a batch the ranks do not divide is split as evenly as it goes and each rank's loss
        # weighted by its rows (Strategy.row_weight): the planner costs the next multiple
        batch = -(-self.batch_size // world) * world
        strategy, self.plan = resolve_strategy(
            self.strategy_spec, self.model, world_size=world,
            reporter=rep, global_batch=batch, seq_len=seq_len,
            weight_bytes=weight_bytes(self.precision),  # the planner costs what will run:
            grad_bytes=4,  # gradients reduced and stepped in float32 in every precision
            device_memory=self.device_memory)
        strategy.bind(device=self.device, reporter=rep)
        self.strategy = strategy
        rep.info(plan=self.plan)
        if self.plan.get("summary"):  # the choice and its main reason, first (round 30)
            rep.log(f"plan: {self.plan['summary']}")
        for reason in self.plan.get("reasons", []):
            rep.log(f"plan: {reason}")
        # activation checkpointing: as asked, else as the plan chose (when the model can)
        want = self.recompute_spec
        if want is None:
            want = bool(self.plan.get("choice", {}).get("recompute"))
        if hasattr(self.model, "recompute"):
            self.model.recompute = bool(want)
            if want:
                rep.log("activation checkpointing: each block keeps its input only and is "
                        "recomputed in backward")
        elif want:
            rep.log(f"plan: recompute chosen, but {type(self.model).__name__} has no blocks "
                    "to recompute: activations kept")
        return strategy

    def _prepare(self, strategy, dataset, val_dataset, epochs, steps) -> Run:
        """Model on the device, optimizer, data loader, schedule, loss; the RNG seeded."""
        make = self._make_optimizer
        if self.precision != "32":
            check_mixed_strategy(strategy, self.precision)
            strategy.precision = self.precision

            def make(params):  # 16-bit parameters; the optimizer steps float32 masters
                params = list(params)
                if strategy.owns_masters:  # ZeRO: its float32 flat slice is the master
                    if self.mixed is None or not same_objects(self.mixed.master, params):
                        before = self.mixed
                        self.mixed = MixedTraining(strategy.params, self.precision,
                                                   masters=params,
                                                   write_back=strategy.gather_params)
                        if before is not None and before.precision == self.precision:
                            self.mixed.scaler.load_state_dict(before.scaler.state_dict())
                    return self._make_optimizer(params)
                if self.mixed is None or not same_objects(self.mixed.params, params):
                    self.mixed = MixedTraining(params, self.precision)
                return self._make_optimizer(self.mixed.master_params())

        self._calibration = self._calibrate(dataset)
        spec = self.optimizer_spec
        if hasattr(spec, "param_groups") and getattr(self, "_spec_names", None) is None:
            from .trainer_optimizer import group_names  # before tp splits the model

            self._spec_names = group_names(spec, self.model)
        self.model, self.optimizer = strategy.setup(self.model, make)
        if self._calibration is not None:
            comm = getattr(strategy, "comm", None)
            if comm is not None and getattr(comm, "size", 1) > 1:
                from .calibrate import time_allreduce

                self._calibration.allreduce_s = time_allreduce(
                    comm, num_parameters(self.model), calib=self._calibration)
        loader = strategy.make_loader(dataset, self.batch_size, shuffle=self.shuffle,
                                      seed=self.seed, drop_last=self.drop_last)
        if len(loader) == 0:
            raise ValueError(f"the dataset has {len(dataset)} items, fewer than one batch of "
                             f"{self.batch_size} with drop_last=True")
        # transformers' count: an epoch's last window takes the micro-batches left (its
        # steps never cross into the next epoch, so epochs=1 sees every batch)
        per_epoch = max(1, -(-len(loader) // self.grad_accum))
        # a fraction of epochs: transformers' max_steps = ceil(num_train_epochs x steps an
        # epoch) (round() gave 2 steps for 0.625 epochs of 4 where transformers trains 3)
        total = int(steps) if steps is not None else \
            max(1, math.ceil((epochs or 1) * per_epoch - 1e-9))
        self.scheduler = self._make_scheduler(total)
        self._check_monitor_used(self.scheduler)
        if on_plateau(self.scheduler):  # stepped after each validation, on self.monitor
            check_plateau(self.scheduler, val_dataset, self.monitor, self.monitor_mode)
        dtype = param_dtype(self.model)
        self._set_class_weights(dataset)
        loss_fn = self._loss_fn()
        extras = None
        if getattr(loss_fn, "extras", False) is None:  # a loss function's dict: its values
            extras = loss_fn.extras = []
        if self.mixed is not None:
            loss_fn = MixedTraining.float32_loss(loss_fn)
        self._graph = make_step_graph(
            self.cuda_graph, strategy, self.model, self.optimizer, loss_fn, clip=self.clip,
            grad_accum=self.grad_accum, mixed=self.mixed, clip_value=self.clip_value,
            log=lambda msg: self.reporter.log(msg, level="info"))
        n_params = num_parameters(self.model)
        self.reporter.info(num_parameters=n_params, total_steps=total,
                           batch_size=self.batch_size, grad_accum=self.grad_accum,
                           device=str(strategy.device), precision=self.precision)
        return Run(strategy=strategy, loader=loader, val_dataset=val_dataset, total=total,
                    dtype=dtype, loss_fn=loss_fn, n_params=n_params, extras=extras,
                    epochs=None if steps is not None else float(epochs or 1))

    def _calibrate(self, dataset):
        """The micro-run of the planner's check (several ranks only; see
        :mod:`skiff.kernels.train.calibrate`), before the strategy touches the model."""
        world = getattr(self.reporter, "world_size", 1)
        if world <= 1 or not isinstance(self.plan, dict) or "estimate" not in self.plan:
            return None
        from .calibrate import micro_run

        return micro_run(self.model, dataset, rows=max(1, self.batch_size // world),
                         loss_spec=self.loss_spec, device=self.device,
                         precision=self.precision, world_size=world)

    def _check_plan(self, result) -> None:
        """The plan's check: the cost model plus the measured fixed costs, against the run."""
        import resource

        from .plan.check import compare, describe, expected

        calib, est = self._calibration, self.plan["estimate"]
        exp = expected(est, calib, n_params=result.num_parameters,
                       weight_bytes=weight_bytes(self.precision),
                       dp=int(self.plan.get("choice", {}).get("dp", 1)))
        exp["why_not"] = calib.why_not
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        check = compare(exp, result.step_time_s, peak)
        check.update(predicted_step_s=est.get("step_time"),
                     predicted_peak_bytes=est.get("peak_memory"),
                     measured_peak_rss_bytes=peak,
                     memory_parts=exp["memory_parts"], step_parts=exp.get("step_parts"),
                     calibration=calib.to_json())
        result.plan_check = check
        if getattr(self.reporter, "rank", 0) == 0:
            self.reporter.info(plan_check=check)
            self.reporter.log(describe(check))

    def _resume_from_checkpoint(self, run: Run) -> None:
        """Weights, optimizer, schedule, RNG, data position, step and curves from the newest
        checkpoint (none there: start from step 0)."""
        state = run.strategy.load_checkpoint(self.checkpoint_dir)
        run.resumed = {"from_step": None, "dir": str(self.checkpoint_dir), "total": run.total}
        if state is None:
            from .parallel.relayout import newest_steps

            npz, sharded = newest_steps(self.checkpoint_dir)
            if npz is not None or sharded is not None:  # there, but not for this strategy
                by = "one process" if sharded is None else "several ranks"
                raise ValueError(
                    f"the checkpoint of step {max(s for s in (npz, sharded) if s is not None)}"
                    f" in {self.checkpoint_dir} was written by {by} and strategy "
                    f"{run.strategy.name!r} cannot read it: resume with one process, dp or "
                    "zero1/zero2 (they read both kinds)")
            self.reporter.log(f"no checkpoint in {self.checkpoint_dir}: starting from step 0")
            return
        run.step, run.history, run.val_history = self._restore(state, run.loader)
        run.resumed["from_step"] = run.step
        self._end_at_the_epochs(run, state)
        reads = self._epoch_reads
        if reads is not None and (len(reads.items) != reads.first or reads.resized):
            self._replan_stream(run, resumed=True)
        self._resume_early_stopping(run, state.get("early"))
        read = self.checkpoint_dir / checkpoint_name(run.step)
        if run.strategy.world_size == 1 and read.is_file():  # the file this state came from
            run.resumed["path"] = str(read)
        said = f"resumed from step {run.step} (epoch {run.loader.epoch}, batch " \
               f"{run.loader.position})"
        nothing = nothing_to_train(run.step, run.resumed["total"])
        if run.stopped:  # early stopping had ended the run it resumes here
            nothing = (f"nothing to train, the run had stopped here ({run.stopped}; a larger "
                       "early_stopping, --early-stop, trains on)")
        if nothing is None:
            self.reporter.log(said)
            return
        # one line (the job view shows the first "resum..." line): a resume to the step the
        # checkpoint has reached, or past it, trained nothing and said so only in the CLI's
        # summary; a script's resume=True said nothing at all (Lightning warns "max_steps=N
        # reached"); the model holds the checkpoint's weights
        self.reporter.log(f"{said}: {nothing}", level="warning")
        if getattr(self.reporter, "rank", 0) == 0:
            if self.verbose:
                print(f"{said}: {nothing}", flush=True)
            elif type(self.reporter) is NullReporter:  # a script: nowhere else to say it
                warnings.warn(f"{said}: {nothing}", UserWarning, stacklevel=4)

    def _resume_early_stopping(self, run: Run, saved: dict | None) -> None:
        """Early stopping's count, best loss and best weights as the checkpoint kept them (a
        resumed run started counting afresh and forgot the best weights: it trained on past
        the point where the uninterrupted run stopped)."""
        if saved is None or self.early_stopping is None:
            return
        if saved.get("base_left_out") and isinstance(saved.get("weights"), dict):
            # a frozen base (LoRA) was left out of them: this model's, checked on resume
            from .trainer_frozen import frozen_names

            local = self.model.state_dict()
            base = {k: local[k] for k in frozen_names(self.model) if k in local}
            saved = {**saved, "weights": {**base, **saved["weights"]}}
        if saved.get("weights") is not None and not _own_slices(saved["weights"],
                                                                self.model.state_dict()):
            # weights of another layout: whole ones on a split model, a tp or pp rank's
            # slices on a whole one or another layout (another world size gives None each)
            saved = {**saved, "weights": None}
        run.early = self._early_stopping()
        if not run.early.load_state_dict(saved, self.model, run.step):
            self.reporter.log(f"early stopping: the best weights (step {run.early.best_step}) "
                              "of a model split over the ranks are not in this checkpoint "
                              "(another layout than the one that wrote it): the run ends "
                              "with its last weights unless a later validation is better",
                              level="warning")
        if run.early.since >= self.early_stopping and run.step < run.total:
            run.total = run.step  # the run had stopped early here: nothing left to train
            run.stopped = self._stopped_early()

    def _run_steps(self, run: Run) -> None:
        """Optimizer steps until ``run.total`` or a stop request: each one reports, validates
        at an epoch's end (and after the last step), and checkpoints every N steps."""
        rep = self.reporter
        run.t_start = time.perf_counter()
        run.window_t = time.perf_counter()
        self.model.train()
        rep.progress(run.step, run.total, unit="step")
        self._run_evaluator(run)
        while run.step < run.total:
            if rep.should_stop():
                run.stopped = "cancelled"
                break
            loss, lr, grad_norm = self._optimizer_step(run)
            self._report_step(run, loss, lr, grad_norm)
            stop = self.callbacks and self.callbacks.step_end(self, self._step_metrics(
                run, loss, lr, grad_norm))
            if run.watch.update(run.step, loss):
                self._on_divergence(run)
            if run.val_dataset is not None and self._validation_due(run):
                self._validate(run)
                self._step_on_plateau(run)
                if self.callbacks and self.callbacks.validation_end(self, run.val_history[-1]):
                    stop = True
                if self._stop_early_agreed(run):
                    if self.verbose:
                        self._print_progress(run, loss)
                    break
            if self.eval_every and run.step % self.eval_every == 0 or run.step == run.total:
                self._run_evaluator(run)
            if self.verbose:
                self._print_progress(run, loss)
            if self.checkpoint_dir is not None and checkpoint_due(self.checkpoint_every, run):
                run.last_ckpt = self._checkpoint(run)
                run.watch.note_checkpoint(run.step, run.last_ckpt)
            if self.callbacks:  # every rank stops where any rank's callback asked
                stop = run.strategy.agree_stop(bool(stop))
            if stop and run.step < run.total:
                run.stopped = "stopped by a callback"
                break
        run.elapsed = time.perf_counter() - run.t_start

    def _schedule_due(self, run: Run) -> bool:
        """Step the scheduler after this optimizer step? Every step, or with
        ``schedule_interval="epoch"`` at an epoch's last (round 45 h5: a torch loop's
        per-epoch ``StepLR(opt, 30)`` was stepped per batch, its lr cut 30 steps in)."""
        return self.schedule_interval == "step" or run.epoch_done

    def _validation_due(self, run: Run) -> bool:
        """Validate after this step? With ``eval_every=N``: every N-th optimizer step (counted
        over the whole run, not per epoch) and after the last, and not at the epochs' ends
        besides (transformers' ``eval_strategy="steps"``, Lightning's integer
        ``val_check_interval``): a run of one-step epochs validated every step whatever N
        was. Without it: each epoch's end and after the last step."""
        if run.step == run.total:
            return True
        if self.eval_every:
            return run.step % self.eval_every == 0
        return run.epoch_done

    @staticmethod
    def _step_metrics(run: Run, loss, lr, grad_norm) -> dict:
        """What a callback gets after a step (every step, whatever ``log_every``)."""
        loader = run.loader
        values = {"step": run.step, "loss": loss, "lr": lr,
                  "epoch": loader.epoch + loader.position / len(loader)}
        if grad_norm is not None:
            values["grad_norm"] = grad_norm
        # a loss function's {"mae": ...}: this step's values, as a row names them
        values.update(apart_from(values, run.step_extras))
        return values

    def _optimizer_step(self, run: Run) -> tuple[float, float, float | None]:
        """``grad_accum`` micro-batches forward and backward, then gradients reduced, clipped
        and applied; (the loss over all ranks, the learning rate used, the gradient norm)."""
        strategy, loader = run.strategy, run.loader
        t_step = time.perf_counter()
        fetched = None
        if self._graph is not None:  # one replay of the captured step (None: run it eagerly)
            host_batch = next_batch(loader)
            fetched = host_batch, strategy.to_device(host_batch, run.dtype, targets=True)
            taken = self._graph.step(fetched[1])
            if taken is not None:
                return self._graph_step_done(run, host_batch, taken, t_step)
        loss_sum = 0.0
        micro, scales = self._window(run, fetched)
        for i in range(len(micro)):
            if fetched is not None:
                (host_batch, batch), fetched = fetched, None
            else:
                host_batch = micro[i][0]
                batch = strategy.to_device(host_batch, run.dtype, targets=True)
            # this rank's share of the global batch (None: even, or one rank)
            strategy.row_weight = micro[i][1]
            loader.global_rows = micro[i][2]
            # what an MoE balancing term on this rank is divided by (trainer_accum)
            balance = getattr(self, "_balance", None)
            strategy.balance_weight = balance[i] if balance else None
            try:
                scale = 1.0 / len(micro) if scales is None else scales[i]
                quiet = contextlib.nullcontext()
                if self.mixed is not None:
                    scale *= self.mixed.loss_scale
                    if self.mixed.scaler.enabled:  # an fp16 overflow is expected: skipped
                        quiet = np.errstate(over="ignore", invalid="ignore")
                called = len(run.extras) if run.extras is not None else 0
                with quiet:
                    value = strategy.forward_backward(self.model, batch, run.loss_fn,
                                                      scale=scale)
                if micro[i][1] is not None and run.extras:  # this rank's share of the rows
                    run.extras[called:] = [{k: v * micro[i][1] for k, v in c.items()}
                                           for c in run.extras[called:]]
                # the window's token mean (a token loss), else the micro-batches' mean
                loss_sum += value * scales[i] if scales is not None else value
            except NonFiniteLoss as exc:
                raise self._diverged(run.step + 1, self._overflow_hint(str(exc)),
                                     run) from None
            except OVERFLOW_ERRORS as exc:   # weights so large that the arithmetic broke
                raise self._diverged(
                    run.step + 1, f"the numbers overflowed ({type(exc).__name__} in the "
                    f"forward or backward pass: {exc}); the learning rate "
                    f"{self._current_lr():g} is likely far too large", run) from None
            self._count_batch(run, host_batch)
        strategy.balance_weight = None
        strategy.reduce_gradients(self.model)
        bad = strategy.agree_finite(loss_sum)  # a bad batch on one rank fails every rank
        if bad is not None:
            raise self._diverged(run.step + 1, bad, run, all_ranks=True)
        grad_norm = None
        lr = self._current_lr()
        if self.mixed is not None:
            grad_norm = self._mixed_step(run)
        else:
            if self.clip is not None:
                grad_norm = strategy.clip_grad_norm(self.model, self.clip)
                if not math.isfinite(grad_norm):
                    # not flagged all_ranks: a norm of gradients that went wrong on one
                    # rank may be finite on the others
                    raise self._diverged(run.step + 1, f"gradient norm is {grad_norm}", run)
            if self.clip_value is not None:
                clip_values(self.optimizer, self.clip_value)
            strategy.optimizer_step(self.optimizer)
        self.optimizer.zero_grad()
        if self.scheduler is not None and not on_plateau(self.scheduler) and \
                self._schedule_due(run):
            self.scheduler.step()
        run.step += 1
        run.step_times.append(time.perf_counter() - t_step)
        loss = loss_sum / len(micro) if scales is None else loss_sum
        values = {"loss": loss}
        if run.extras is not None:  # a loss function's {"mae": ...}: averaged as the loss
            extras = run.take_extras()
            names, everywhere = strategy.agree_names(extras)
            values.update({f"extra:{k}": extras.get(k, 0.0) for k in names})
            if not everywhere:  # a name some ranks lack: the mean over the ranks that have it
                share = float(np.mean([1.0 if m[1] is None else m[1] for m in micro]))
                values.update({f"share:{k}": share if k in extras else 0.0 for k in names})
        metrics = strategy.reduce_metrics(values)
        if run.extras is not None:
            run.note_extras({k[6:]: v / metrics.get(f"share:{k[6:]}", 1.0)
                             for k, v in metrics.items() if k.startswith("extra:")
                             and metrics.get(f"share:{k[6:]}") != 0.0})
        return metrics["loss"], lr, grad_norm

    def _window(self, run: Run, fetched) -> tuple[list, list | None]:
        """This step's micro-batches ``(host batch, row_weight, global_rows)`` and the factor
        each one's loss is scaled by (None: one over their number): a token loss weighs each
        by its scored targets over the window's on every rank, as transformers' Trainer
        (:mod:`.trainer_accum`). ``grad_accum`` of them, or those left in the epoch (as
        transformers: a step never crosses into the next epoch)."""
        from .trainer_accum import scored_targets, window_scales

        loader = run.loader
        self._balance = None
        if fetched is not None:  # the graph's batch: one micro-batch, as fetched
            return [(fetched[0], getattr(loader, "row_weight", None),
                     getattr(loader, "global_rows", None))], None
        left = len(loader) - loader.position
        if left <= 0:  # next_batch starts the next epoch
            left = len(loader)
        micro = []
        for _ in range(min(self.grad_accum, left)):
            host = next_batch(loader)
            micro.append((host, getattr(loader, "row_weight", None),
                          getattr(loader, "global_rows", None)))
        if self.grad_accum == 1 and getattr(loader, "world_size", 1) == 1:
            return micro, None
        weighted = getattr(self, "class_weights_", None) is not None
        counts = [scored_targets(self.model, self.loss_spec, weighted, m[0]) for m in micro]
        balance: list = []
        scales = window_scales(run.strategy, loader, [(m[0], m[1]) for m in micro], counts,
                               balance)
        self._balance = balance if scales is not None and balance else None
        return micro, scales

    def _count_batch(self, run: Run, host_batch) -> None:
        rows = batch_size_of(host_batch)
        n = getattr(run.loader, "global_rows", None)  # set on data-parallel ranks
        if n is None:
            n = rows * run.loader.world_size
        run.samples += n
        run.window_samples += n
        t = token_count(host_batch)
        if t is not None and rows:
            run.tokens += round(t / rows * n)
            run.window_tokens += round(t / rows * n)

    def _graph_step_done(self, run: Run, host_batch, taken, t_step):
        """The bookkeeping of a step the CUDA graph ran (the eager step's, same order)."""
        loss, sumsq = taken
        self._count_batch(run, host_batch)
        lr = self._current_lr()
        if not math.isfinite(loss):
            raise self._diverged(run.step + 1, f"loss is {loss}", run)
        grad_norm = math.sqrt(sumsq) if math.isfinite(sumsq) else sumsq
        if not math.isfinite(grad_norm):  # the graph's AdamW left the weights as they were
            raise self._diverged(run.step + 1, f"gradient norm is {grad_norm}", run)
        if self.scheduler is not None and not on_plateau(self.scheduler) and \
                self._schedule_due(run):
            self.scheduler.step()
        if run.extras is not None:  # the captured step's values only (Python not called)
            run.note_extras(run.take_extras())
        run.step += 1
        run.step_times.append(time.perf_counter() - t_step)
        return loss, lr, grad_norm if self.clip is not None else None

    def _mixed_step(self, run: Run) -> float | None:
        """The optimizer step in mixed precision: masters updated, or (fp16) the step skipped
        on an overflow and the loss scale halved; bf16 gradients that overflow diverged."""
        scale = self.mixed.loss_scale
        ran, norm = self.mixed.step(self.optimizer, self.clip, norm=run.strategy.grad_norm,
                                    clip_value=self.clip_value)
        if not ran:
            if not self.mixed.scaler.enabled:
                raise self._diverged(run.step + 1, f"gradient norm is {norm}", run)
            self.reporter.log(f"step {run.step + 1} skipped: gradients overflowed at loss "
                              f"scale {scale:g} (now {self.mixed.loss_scale:g})",
                              level="warning")
        return norm if ran and self.clip is not None else None

    def _report_step(self, run: Run, loss, lr, grad_norm) -> None:
        """Peak memory; every ``log_every`` steps (and the last) a history row and its
        metrics; progress after every step."""
        rep, loader, step = self.reporter, run.loader, run.step
        in_use = memory_in_use(run.strategy.device)
        if self._graph is not None:  # a captured step's arrays live in the graph's own pool
            in_use += self._graph.memory_bytes()
        run.peak = max(run.peak, in_use)
        run.window_losses.append(loss)
        if run.first is None:
            run.first = (time.perf_counter() - run.t_start, run.samples, run.tokens)
        if step % self.log_every == 0 or step == run.total:
            now = time.perf_counter()
            dt = max(now - run.window_t, 1e-9)
            # the mean of the steps since the last row, as transformers logs `logging_steps`
            mean = float(np.mean(run.window_losses)) if len(run.window_losses) > 1 else loss
            run.window_losses.clear()
            row = {"step": step, "loss": mean, "lr": lr,
                   "epoch": loader.epoch + loader.position / len(loader),
                   "samples_per_s": run.window_samples / dt}
            if run.window_tokens:
                row["tokens_per_s"] = run.window_tokens / dt
            if grad_norm is not None:
                row["grad_norm"] = grad_norm
            extras = run.extras_row(row)
            row.update(extras)
            run.history.append(row)
            rep.metric("loss", mean, step=step)  # every value; the rest are curves a view
            for name, value in extras.items():  # a loss function's {"mae": ...}: each value
                rep.metric(name, value, step=step)
            for name in ("lr", "samples_per_s", "tokens_per_s", "grad_norm"):  # may thin
                if name in row:
                    rep.sample(name, row[name], step=step)
            rep.sample("memory_bytes", run.peak, step=step)
            run.window_t, run.window_samples, run.window_tokens = now, 0, 0
        rep.progress(step, run.total, unit="step", message=f"loss {loss:.4f}")

    def _validate(self, run: Run) -> None:
        """Evaluate the validation set, record and report it, and go back to training mode."""
        loader = run.loader
        from .trainer_state import WHOLE_MODEL

        run.strategy.sync_for_evaluation(self.model)  # pp: the other stages' weights
        # per class where each rank holds the whole model (its own validation rows' counts)
        val = Inference.evaluate(self, run.val_dataset, run.val_batch,
                                 per_class=run.strategy.name in WHOLE_MODEL)
        run.val_weight = getattr(self, "_eval_weight", None)
        self._keep_class_report(run, val)
        val = {"step": run.step, "epoch": round(loader.epoch + loader.position / len(loader),
                                                4), **val}
        run.val_history.append(val)
        for k, v in val.items():
            if k.startswith("val_"):
                self.reporter.metric(k, v, step=run.step)
        self.model.train()

    @staticmethod
    def _keep_class_report(run: Run, val: dict) -> None:
        """A classifier's per-class validation (popped from ``val``: validation rows keep
        their scalar metrics) kept for ``result.class_metrics``, with the best step's."""
        report = {k: val.pop(k) for k in ("per_class", "confusion") if k in val}
        # the macro F1 and the balanced accuracy stay in the row (round 41): a user of an
        # imbalanced classifier reads them at each validation (Keras' and Lightning's
        # logged metrics), and early stopping or keep_best can watch them
        f1 = val.get("val_f1")
        if f1 is None:
            return
        if report.get("confusion") is not None:
            val["val_balanced_accuracy"] = balanced_accuracy(report["confusion"])
        best = getattr(run.early, "best_step", None)
        run.class_reports = {s: r for s, r in run.class_reports.items() if s == best}
        run.class_reports[run.step] = {"val_accuracy": val.get("val_accuracy"), "f1": f1,
                                       **({"balanced_accuracy": val["val_balanced_accuracy"]}
                                          if "val_balanced_accuracy" in val else {}),
                                       **report}

    def _check_monitor_used(self, scheduler) -> None:
        """``monitor=``/``mode=`` given for nothing that watches them (early stopping, a
        ``ReduceLROnPlateau`` schedule) is refused, saying what would."""
        if self._monitor_given and self.early_stopping is None and not self.keep_best \
                and not on_plateau(scheduler):
            raise ValueError(f"monitor={self.monitor!r} and mode={self.monitor_mode!r} tell "
                             "early stopping (or a schedule=ReduceLROnPlateau, or keep_best) "
                             "what to watch: give early_stopping=N (the validations to wait) "
                             "too")

    def _step_on_plateau(self, run: Run) -> None:
        """A ``ReduceLROnPlateau`` steps on this validation's ``monitor`` (the ranks' mean,
        one value on every rank, as early stopping's: their lrs stay alike), as a torch loop
        calls ``scheduler.step(val_loss)`` after each epoch's validation."""
        if not on_plateau(self.scheduler):
            return
        value = self._monitored(run)
        if value is not None:
            self.scheduler.step(self._mean_of_ranks(run, value))

    def _stop_early(self, run: Run) -> bool:
        """With ``early_stopping``: count this validation; True (and why in ``run.stopped``)
        when it is the last one without a better val_loss that the patience allows."""
        if self.early_stopping is None:
            return False
        if run.early is None:
            run.early = self._early_stopping()
        value = self._monitored(run)
        if value is not None:  # ranks that saw other validation data watch their mean
            value = self._mean_of_ranks(run, value)  # (one best step and weights)
        if not run.early.update(self.model, run.step, value) or run.step >= run.total:
            return False
        run.stopped = self._stopped_early()
        return True

    def _early_stopping(self) -> EarlyStopping:
        return EarlyStopping(self.early_stopping, monitor=self.monitor, mode=self.monitor_mode)

    def _stopped_early(self) -> str:
        n = self.early_stopping
        return f"early stopping: no better {self.monitor} in {n} validation{'s' if n > 1 else ''}"

    def _monitored(self, run: Run):
        """This validation's value of the metric early stopping watches (``val_f1``: the
        class report's macro F1); a name the validation does not give is refused, naming
        the ones it gives."""
        row = run.val_history[-1]
        if self.monitor in row:
            return row[self.monitor]
        if self.monitor == "val_nll" and "val_loss" in row and self.loss_spec in (None, "auto") \
                and callable(getattr(self.model, "loss", None)):
            from .inference import gives_val_nll

            if not gives_val_nll(self.model):  # its own loss is its NLL (a dense model's)
                return row["val_loss"]
        report = run.class_reports.get(run.step) or {}
        if self.monitor == "val_f1" and report.get("f1") is not None:
            return report["f1"]
        import difflib

        given = [k for k in row if k.startswith("val_")] + (
            ["val_f1"] if report and "val_f1" not in row else [])
        close = difflib.get_close_matches(self.monitor, given, n=1)
        raise ValueError(f"early stopping watches monitor={self.monitor!r}, which the "
                         f"validation does not give"
                         f"{f' (did you mean {close[0]!r}?)' if close else ''}: it gives "
                         f"{', '.join(given)}")

    @staticmethod
    def _mean_of_ranks(run: Run, val_loss: float) -> float:
        """The ranks' validation losses as one over all their validation data: each rank's
        weighted by what it divides by (its scored targets, or rows; a rank of 4 rows beside
        one of 28 counted as much before): ``sum(loss_r n_r) / sum(n_r)``, two means over
        the ranks; one process gives ``val_loss`` itself."""
        n = run.val_weight
        n = 1.0 if n is None or not n > 0 else float(n)  # every rank makes both calls
        mean_n = run.strategy.mean_over_ranks(n)
        return run.strategy.mean_over_ranks(val_loss * (n / mean_n))

    def _stop_early_agreed(self, run: Run) -> bool:
        """:meth:`_stop_early`, agreed over the ranks (their validation losses are the same,
        but a rank that left alone would leave the others waiting in a collective)."""
        if self.early_stopping is None:
            return False
        stop = run.strategy.agree_stop(self._stop_early(run))
        if stop and run.stopped is None:
            run.stopped = "early stopping on another rank"
        return stop

    def _run_evaluator(self, run: Run) -> None:
        """The ``evaluator``'s metrics at this step (once a step), on the reporting rank."""
        if self.evaluator is None or (run.evaluation and run.evaluation[-1]["step"] == run.step):
            return
        strategy = run.strategy
        model = strategy.evaluation_model(self.model)  # a split model: a gathered copy
        if strategy.is_root:
            metrics = self.evaluator(model)
            run.evaluation.append({"step": run.step, **metrics})
            for name, value in metrics.items():
                self.reporter.metric(name, value, step=run.step)
            self.model.train()

    def _print_progress(self, run: Run, loss) -> None:
        """``verbose``: one printed line at each epoch's end and after the last step, by the
        reporting rank only (every rank of ``mpiexec -n 2`` printed each line)."""
        if not run.strategy.is_root:
            return
        run.line_losses.append(loss)
        if run.epoch_done or run.step == run.total:
            self._print_line(run.step, run.total, run.loader, run.line_losses,
                             run.val_history, run.t_start)
            run.line_losses = []

    def _checkpoint(self, run: Run, restored=None):
        """Write this step's checkpoint; with ``keep_best``, score it by this step's
        validation (early stopping's best value when its weights were ``restored`` into
        it) and keep the newest ``keep_checkpoints`` and the best (:mod:`.trainer_keep`)."""
        if not self.keep_best:
            return self._save(run.step, run.loader, run.history, run.val_history, run.early)
        if run.best is None:
            run.best = BestCheckpoints(self.checkpoint_dir, self.keep_checkpoints,
                                       self.monitor, self.monitor_mode, resume=self.resume,
                                       top=self.keep_best)
        value = None
        if restored is not None:
            # the best's weights again: with keep_best=K > 1 no candidate, or the K kept
            # held the best twice and dropped the K-th distinct one (round 41 h9)
            value = run.early.best if self.keep_best == 1 else None
        elif run.val_history and run.val_history[-1]["step"] == run.step:
            value = self._mean_of_ranks(run, self._monitored(run))  # every rank calls it
        keep, self.keep_checkpoints = self.keep_checkpoints, None  # rotated here instead
        try:
            path = self._save(run.step, run.loader, run.history, run.val_history, run.early)
        finally:
            self.keep_checkpoints = keep
        run.best.note(run.step, value)
        run.best_path = run.best.rotate(run.strategy.is_root)
        self._sweep_merged()  # the side files only the rotated-out ones listed (round 42)
        return path

    @staticmethod
    def _checkpoint_is_current(run: Run, best) -> bool:
        """A resume that trained nothing (its checkpoint already reaches the steps asked)
        and restored no other weights: the checkpoint it read holds this very state, so it
        is not written again (at 30,000 steps that rewrite cost 11 s of a 24 s resume)."""
        resumed = getattr(run, "resumed", None) or {}
        return (best is None and resumed.get("path") is not None
                and run.step == resumed["from_step"] and Path(resumed["path"]).is_file())

    @staticmethod
    def _interrupted(run: Run) -> bool:
        """Stopped before its last step by something a resume goes on from (the job
        cancelled, its launcher gone, a callback), not by early stopping or divergence."""
        return run.step < run.total and run.stopped in ("cancelled", "stopped by a callback")

    def _finish(self, run: Run) -> TrainResult:
        """The final checkpoint (also when cancelled, so the run can be resumed), the
        strategy torn down, and the result with its measurements against the plan."""
        step, loader, rep = run.step, run.loader, self.reporter
        saved = False
        if self._interrupted(run) and self.checkpoint_dir is not None and step > 0:
            # a run cut short to be resumed (cancelled, a callback's stop) checkpoints the
            # weights it trained to: the best ones restored first went into the checkpoint
            # with this step's optimizer, and the resume went on from them (a pp job whose
            # launcher was killed at step 14 of 24: its losses 0.5 above the whole run's)
            run.last_ckpt = self._checkpoint(run)
            saved = True
        best = run.early.restore(self.model, step) if run.early is not None else None
        if best is not None:
            msg = (f"early stopping: the weights of step {best} restored ({self.monitor} "
                   f"{run.early.best:.4g}, the best; step {step} was worse)")
            rep.log(msg)
            if self.verbose and run.strategy.is_root:
                print(msg, flush=True)
        if saved:
            pass
        elif self._checkpoint_is_current(run, best):  # nothing trained: it is this state
            run.last_ckpt = run.resumed.get("path")
        elif self.checkpoint_dir is not None and step > 0:
            run.last_ckpt = self._checkpoint(run, restored=best)
        self._live_strategy = None  # torn down: the model is whole from here on
        run.strategy.teardown()
        elapsed, samples, tokens = run.elapsed, run.samples, run.tokens
        result = TrainResult(
            steps=step, epochs=round(loader.epoch + loader.position / len(loader), 4),
            final_loss=run.history[-1]["loss"] if run.history else None, history=run.history,
            val_history=run.val_history, evaluation=run.evaluation, time_s=elapsed,
            samples_per_s=samples / elapsed if elapsed > 0 and samples else None,
            tokens_per_s=tokens / elapsed if elapsed > 0 and tokens else None,
            peak_memory_bytes=run.peak or None,
            checkpoint=None if run.last_ckpt is None else str(run.last_ckpt),
            best_checkpoint=run.best_path,
            strategy=self.plan, stopped=run.stopped, num_parameters=run.n_params,
            model=self.model)
        result.resumed = run.resumed
        # the weights the model now holds (the best ones after early stopping), per class
        result.class_metrics = _named(run.class_reports.get(step if best is None else best),
                                      getattr(self, "_class_names", None))
        result.step_time_s = median(run.step_times[1:] or run.step_times)
        if run.first is not None and len(run.step_times) > 1:
            first_s, first_samples, first_tokens = run.first
            rest = elapsed - first_s
            result.first_step_s = first_s
            if rest > 0:
                result.samples_per_s_after_first = (samples - first_samples) / rest or None
                result.tokens_per_s_after_first = (tokens - first_tokens) / rest or None
        if run.early is not None:
            result.best_step = run.early.best_step
            if self.monitor == "val_loss":  # the ranks' mean, as watched
                result.best_val_loss = run.early.best
            else:  # that step's validation loss, and the best of what was watched
                row = next((v for v in run.val_history if v["step"] == run.early.best_step),
                           {})
                result.best_val_loss = row.get("val_loss")
                result.best_metric = {self.monitor: run.early.best}
        result.predicted = predicted_vs_measured(self.plan, result)
        if getattr(self, "_calibration", None) is not None:
            self._check_plan(result)
        if result.predicted:
            rep.info(predicted_vs_measured=result.predicted)
        if run.stopped:
            rep.log(f"stopped at step {step} of {run.total} ({run.stopped})",
                    level="warning" if run.stopped == "cancelled" else "info")
        self.callbacks.train_end(self, result)
        return result

    # --------------------------------------------------------------------------------------
    def _make_optimizer(self, params):
        ours = self.optimizer_spec is None or isinstance(self.optimizer_spec, str)
        # a user's optimizer rebuilt on ZeRO's slice (its class and groups) is carried over
        # as ours is (round 48 h4: a second train() gave it a fresh state, 3e-3 off)
        rebuilt = not ours and getattr(self.optimizer, "_rebuilt_from", None) is \
            self.optimizer_spec
        if (ours or rebuilt) and self.optimizer is not None:
            built = [p for g in self.optimizer.param_groups for p in g["params"]]
            if ours and len(built) == len(params) and (
                    {id(a) for a in built} == {id(b) for b in params}
                    if len(self.optimizer.param_groups) > 1 else
                    all(a is b for a, b in zip(built, params))):
                return self.optimizer  # train() called again: keep the optimizer's moments
            if getattr(self.strategy, "shard", None) is not None and \
                    [tuple(a.shape) for a in built] == [tuple(b.shape) for b in params]:
                # train() again under ZeRO: a new flat shard of the same slice; the old one's
                # values (the float32 masters in mixed precision) and moments carry over, as
                # they do for one device and dp (they started afresh: 5e-4 off one device)
                for old, new in zip(built, params):
                    new._data[...] = old._data
                made = self._new_optimizer(params)
                made.load_state_dict(self.optimizer.state_dict())
                return made
        return self._new_optimizer(params)

    def _new_optimizer(self, params):
        spec = self.optimizer_spec
        if spec is None or spec in ("adamw", "adam", "sgd"):
            from .core.optim import SGD, Adam, AdamW

            # weight_decay left out: 0.01 for AdamW (torch's default), 0 for "adam" and
            # "sgd" (torch's); given, it reaches them too, as torch's Adam's and SGD's L2
            # (round 44 h5: optimizer="sgd", weight_decay=5e-4 trained without it, silently)
            given = self.weight_decay
            adamw = spec in (None, "adamw")
            decay = float(given) if given is not None else 0.01 if adamw else 0.0
            flat = None
            if decay and not getattr(self, "decay_bias_norm", True):
                from .trainer_optimizer import bias_norm_groups, flat_decay, zero_slice

                params = list(params)
                if zero_slice(params, self.strategy) is not None:  # ZeRO: one flat group,
                    flat, decay = decay, 0.0  # decayed by a mask (round 44 h11: refused)
                else:
                    params = bias_norm_groups(params, self.strategy)
            if spec == "sgd":
                made = SGD(params, lr=self.lr, momentum=0.9, weight_decay=decay)
            elif not adamw and (decay or flat):  # torch.optim.Adam(weight_decay=...): L2
                made = Adam(params, lr=self.lr, weight_decay=decay)
            else:
                made = AdamW(params, lr=self.lr, weight_decay=decay)  # "adam": AdamW of 0
            if flat:
                made = flat_decay(made, self.strategy,
                                  lambda q: flat if len(q.shape) >= 2 else 0.0,
                                  decoupled=adamw)
            return made
        if isinstance(spec, str):
            raise ValueError(f"unknown optimizer {spec!r}: choose from adamw, adam, sgd, or pass "
                             "one")
        if hasattr(spec, "step") and hasattr(spec, "param_groups"):
            # mixed precision's masters or ZeRO's slice: its class on them (round 41: it
            # stepped the model's parameters, which the strategy then wrote over)
            from .trainer_optimizer import optimizer_on

            before, params = self.optimizer, list(params)
            stepped = [p for g in getattr(before, "param_groups", ()) for p in g["params"]]
            if getattr(before, "_rebuilt_from", None) is spec and len(stepped) == len(params) \
                    and all(a is b for a, b in zip(stepped, params)):
                return before  # train() again on the same tensors: its moments go on
            mixed = self.mixed if self.mixed is not None and not self.mixed.owned else None
            from .trainer_optimizer import zero_slice

            return optimizer_on(spec, params, None if mixed is None else mixed.params,
                                getattr(self.strategy, "name", str(self.strategy_spec)),
                                names=getattr(self.strategy, "names", None),
                                spec_names=getattr(self, "_spec_names", None),
                                flat=self.strategy if zero_slice(params, self.strategy)
                                is not None else None)
        if callable(spec):
            try:
                return spec(params)
            except TypeError as exc:  # a torch optimizer on skiff parameters: say whose
                from .trainer_torch_habits import torch_optimizer_error

                clear = torch_optimizer_error(exc)
                if clear is None:
                    raise
                raise clear from exc
        raise TypeError(f"optimizer must be an Optimizer, a factory or a name, got {spec!r}")

    def _make_scheduler(self, total: int):

        if self.schedule == "constant":
            return None
        if callable(self.schedule):  # a torch-style scheduler of the user's, on our optimizer
            return _user_scheduler(self.schedule, self.optimizer)
        if is_scheduler(self.schedule):  # StepLR(opt, ...) made on optimizer=opt (Lightning's)
            from .trainer_optimizer import rebind_scheduler

            rebind_scheduler(self.schedule, self.optimizer_spec, self.optimizer)
            return bound_scheduler(self.schedule, self.optimizer)
        warmup = self.warmup_steps
        if warmup is None:
            warmup = min(100, total // 10)
        return make_schedule(self.schedule, self.optimizer, warmup, total, self.min_lr_ratio)

    def _current_lr(self) -> float:
        return float(self.optimizer.param_groups[0]["lr"])

    def _loss_fn(self):
        """``fn(model, batch) -> scalar Tensor`` for the configured loss."""
        if getattr(self, "class_weights_", None) is not None:
            from .trainer_class_weight import WeightedCE, ce_module

            own = self.loss_spec if ce_module(self.loss_spec) else None  # label_smoothing
            return loss_function(self.model, WeightedCE(self.class_weights_, own))
        return loss_function(self.model, self.loss_spec)

    def _set_class_weights(self, dataset) -> None:
        """``class_weight``'s weights for this run ("balanced": from the training targets,
        said in the log)."""
        spec = self.class_weight
        if isinstance(spec, str):
            from .trainer_class_weight import balanced_weights, ce_module, training_targets

            own = self.loss_spec if ce_module(self.loss_spec) else None  # its ignore_index
            spec = balanced_weights(training_targets(
                dataset, -100 if own is None else own.ignore_index))
            self.reporter.log("class weights (balanced): " + ", ".join(
                f"{c}: {w:.4g}" for c, w in spec.items()))
        self.class_weights_ = spec

    def _print_line(self, step, total, loader, losses, val_history, t_start) -> None:
        epoch = loader.epoch + loader.position / len(loader)
        parts = [f"epoch {epoch:.4g}", f"step {step}/{total}",
                 f"loss {sum(losses) / max(len(losses), 1):.4g}"]
        if val_history and val_history[-1]["step"] == step:
            parts += [f"{k} {v:.4g}" for k, v in val_history[-1].items()
                      if k.startswith("val_")]
        parts.append(f"{time.perf_counter() - t_start:.1f} s")
        print("  ".join(parts), flush=True)

    def _overflow_hint(self, what: str) -> str:
        """``what`` (a non-finite loss), naming the learning rate where the weights have
        overflowed or come near it (a float32 square past 3.4e38): the arithmetic gives NaN
        quietly, as torch's does, where it once raised."""
        try:
            big = max((float(np.max(np.abs(np.asarray(p.detach().numpy()
                                                     if hasattr(p, "detach") else p))))
                       for p in self.model.parameters()), default=0.0)
        except Exception:   # noqa: BLE001 -- a hint only
            return what
        if big <= 1e18:  # (a NaN weight fails this test: it is named too)
            return what
        return (f"{what}: the numbers overflowed (weights up to {big:.3g}); the learning "
                f"rate {self._current_lr():g} is likely far too large")

    def _diverged(self, step, what, run, all_ranks: bool = False) -> TrainingDiverged:
        """The error for a run that diverged at ``step``, naming the newest checkpoint from
        before the divergence began (not merely the last finite one). ``all_ranks``: every
        rank raises it at this step (agreed), so no rank alarms the others
        (:mod:`.parallel.rank_alarm`)."""
        msg = run.watch.failure(step, what)
        self.reporter.log(msg, level="error")
        exc = TrainingDiverged(msg)
        exc.all_ranks = bool(all_ranks)
        return exc

    def _on_divergence(self, run) -> None:
        """The loss trend says the run diverges: warn once, and stop when asked to."""
        self.reporter.info(divergence=run.watch.summary())
        if self.stop_on_divergence:
            raise self._diverged(run.step, run.watch.describe(), run, all_ranks=True)
        self.reporter.log(run.watch.warning(run.step), level="warning")


def balanced_accuracy(confusion) -> float | None:
    """The mean recall over the classes among the targets (scikit-learn's
    ``balanced_accuracy_score``) from a confusion matrix ``[true][predicted]``."""
    m = np.asarray(confusion, dtype=np.float64)
    support = m.sum(1)
    seen = support > 0
    return float((np.diag(m)[seen] / support[seen]).mean()) if seen.any() else None


def _frame_alone(data, model) -> None:
    """A DataFrame alone for a model without ``loss(batch)``: its features and target are
    one table, so say how to give them apart (it failed as 'batches of a Tensor')."""
    if not (type(data).__module__.startswith("pandas") and hasattr(data, "columns")) or \
            callable(getattr(model, "loss", None)):
        return
    cols = [str(c) for c in data.columns]
    last = cols[-1] if cols else "target"
    raise TypeError(f"a DataFrame alone holds the features and the target together: pass "
                    f"them apart, e.g. trainer.train((df.drop(columns=[{last!r}]), "
                    f"df[{last!r}])) (columns: {', '.join(cols[:8])}"
                    f"{' ...' if len(cols) > 8 else ''})")


def _user_scheduler(make, optimizer):
    """``make(optimizer)``, checked: a scheduler the Trainer can step and checkpoint."""
    try:
        scheduler = make(optimizer)
    except TypeError as exc:
        torch_class = _torch_scheduler_class(exc)
        if torch_class is None:
            raise
        from .core import lr_scheduler

        same = hasattr(lr_scheduler, torch_class)
        raise TypeError(
            f"schedule=... built torch.optim.lr_scheduler.{torch_class}, which takes torch "
            f"optimizers only ({exc}); the Trainer's optimizer is skiff's: "
            + (f"use skiff.optim.lr_scheduler.{torch_class} (the same arguments), e.g. "
               f"schedule=lambda opt: skiff.optim.lr_scheduler.{torch_class}(opt, ...)"
               if same else "build it from skiff.optim.lr_scheduler (LambdaLR takes any "
               "function of the step)")) from exc
    missing = [m for m in ("step", "state_dict", "load_state_dict")
               if not callable(getattr(scheduler, m, None))]
    if missing:
        raise TypeError(f"schedule=make(optimizer) must return an lr scheduler (step, "
                        f"state_dict, load_state_dict); got {type(scheduler).__name__}, "
                        f"without {', '.join(missing)}")
    return scheduler


def _torch_scheduler_class(exc: BaseException) -> str | None:
    """The torch lr scheduler class whose constructor raised ``exc`` (torch's "SGD is not an
    Optimizer" for skiff's optimizer), or None."""
    tb = exc.__traceback__
    while tb is not None:
        owner = tb.tb_frame.f_locals.get("self")
        if owner is not None and type(owner).__module__.startswith("torch.optim.lr_scheduler"):
            return type(owner).__name__
        tb = tb.tb_next
    return None


def _own_slices(weights, local: dict) -> bool:
    """Whether a checkpoint's early-stopping weights are this rank's slices of the model
    (same names and shapes as its own state)."""
    return isinstance(weights, dict) and set(weights) == set(local) and all(
        weights[k] is not None and np.shape(weights[k]) == np.shape(local[k]) for k in local)


def _keras_pair(method: str, second, rest: str) -> None:
    """``trainer.train(x, y)`` (Keras' ``fit(x, y)``): the targets landed in the second
    argument (it failed "The truth value of an array ... is ambiguous")."""
    if second is None or isinstance(second, (int, float, str, np.integer, np.floating)):
        return
    if hasattr(second, "__len__") or hasattr(second, "shape"):
        raise TypeError(f"{method}() takes the data as one argument: {method}((x, y), {rest}) "
                        f"(Keras' fit(x, y) form passed the targets as its second argument, "
                        f"got a {type(second).__name__})")


def _misplaced(kwargs: dict) -> None:
    """A TypeError for ``train(..., lr=...)``: the Trainer's own settings are given when it
    is made (as torch's optimizer takes lr), which the message says; anything else is named
    with the closest of ``train``'s arguments."""
    import difflib

    from .trainer_torch_habits import other_name_hint

    own = _own_settings()
    name = next(iter(kwargs))
    other = other_name_hint(name, "train")
    if other:
        raise TypeError(f"Trainer.train() got an unexpected keyword argument {name!r}{other}")
    if name in ("target", "target_column", "label_column", "y"):  # a table's column, as --target
        raise TypeError(f"Trainer.train() got an unexpected keyword argument {name!r}: the "
                        "data goes in as (X, y), so a DataFrame's target column is split off "
                        "first: train((df.drop(columns=[COLUMN]), df[COLUMN])) (the command "
                        "line's and %train's --target COLUMN reads a table file so)")
    if name in own:
        raise TypeError(f"{name} is a setting of the Trainer, given when it is made: "
                        f"Trainer(model, {name}={kwargs[name]!r}).train(data, ...)")
    args = ("dataset", "epochs", "steps", "val_dataset", "val_split")
    close = difflib.get_close_matches(name, args + tuple(own), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise TypeError(f"Trainer.train() got an unexpected keyword argument {name!r}{hint}")


def _own_settings() -> list[str]:
    import inspect

    return [n for n, p in inspect.signature(Trainer.__init__).parameters.items()
            if n not in ("self", "model") and p.kind is not p.VAR_KEYWORD]


def _unknown_setting(kwargs: dict) -> None:
    """A TypeError for ``Trainer(model, max_epochs=3)``: another library's name says skiff's
    (Python's own error said only "unexpected keyword argument"), else the closest."""
    import difflib

    from .trainer_torch_habits import other_name_hint

    name = next(iter(kwargs))
    hint = other_name_hint(name, "Trainer")
    if hint is None:
        if name in ("epochs", "steps", "val_dataset", "val_split"):
            hint = f" (it is given to train(): trainer.train(data, {name}=...))"
        else:
            close = difflib.get_close_matches(name, _own_settings(), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise TypeError(f"Trainer() got an unexpected keyword argument {name!r}{hint}")


def _class_names(dataset) -> list[str] | None:
    """The class names a dataset carries (``classes``: torchvision's ImageFolder and
    skiff's, a table's), as strings; None when it has none."""
    names = getattr(dataset, "classes", None)
    if isinstance(names, (list, tuple)) and names and all(
            isinstance(n, (str, int, np.integer)) for n in names):
        return [str(n) for n in names]
    return None


def _named(report: dict | None, names: list[str] | None) -> dict | None:
    """``class_metrics`` with its classes by name where the data names them all."""
    per = (report or {}).get("per_class")
    if not names or not per or len(names) != len(per.get("class", ())):
        return report
    return {**report, "per_class": {**per, "class": list(names)}}
