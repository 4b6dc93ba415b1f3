"""The Trainer: three lines from a model and a data set to a trained model.

::

    trainer = skiff.Trainer(model, strategy="auto")
    result = trainer.train(dataset, epochs=10)

The loop reads top to bottom: pick a strategy (one device, or what the planner chose), build
the optimizer and schedule, resume if asked, then for each optimizer step run ``grad_accum``
micro-batches forward and backward, reduce gradients, clip, step, report, and checkpoint every
N steps and at the end. Everything that differs between one device and many ranks is a hook
of :class:`~skiff.kernels.train.strategy.Strategy`.

The loss is the model's own ``loss(batch)`` when it has one; otherwise a batch is ``(x, y)``
and integer targets mean cross-entropy, float targets mean squared error; ``loss=`` overrides
both. A run is seeded: the same seed, model and data give the same weights, and a run that is
stopped and resumed from its checkpoint ends with the same weights as one that never stopped.
"""

from __future__ import annotations

import base64
import html
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .core import random as train_random
from .data import PackedBatch, as_dataset, batch_size_of, split_off, token_count
from .strategy import NonFiniteLoss, SingleDevice, Strategy

__all__ = ["Trainer", "TrainResult", "TrainingDiverged", "resolve_strategy"]

LOSSES = ("auto", "cross_entropy", "mse", "bce")
SCHEDULES = ("cosine", "constant")


class TrainingDiverged(FloatingPointError):
    """The loss became NaN or infinite; the message names the step."""


# ------------------------------------------------------------------------------------------
@dataclass
class TrainResult:
    """What a training run did: loss curve, validation metrics, throughput, checkpoint.

    ``model`` is the trained model itself (not part of :meth:`to_json`).
    """

    steps: int
    epochs: float
    final_loss: float | None
    history: list[dict] = field(default_factory=list)  # one row per logged step
    val_history: list[dict] = field(default_factory=list)  # one row per epoch
    time_s: float = 0.0
    samples_per_s: float | None = None
    tokens_per_s: float | None = None
    peak_memory_bytes: int | None = None
    checkpoint: str | None = None
    strategy: dict = field(default_factory=dict)
    stopped: str | None = None  # why it ended early ("cancelled"), else None
    num_parameters: int | None = None
    weights: str | None = None  # the final full weights (npz), written by a job
    step_time_s: float | None = None  # median seconds per optimizer step (first one left out)
    predicted: dict = field(default_factory=dict)  # the plan's estimates against measurements
    model: object = field(default=None, repr=False)

    def to_json(self) -> dict:
        return {
            "steps": self.steps, "epochs": self.epochs, "final_loss": self.final_loss,
            "history": self.history, "val_history": self.val_history,
            "time_s": round(self.time_s, 4), "samples_per_s": self.samples_per_s,
            "tokens_per_s": self.tokens_per_s, "peak_memory_bytes": self.peak_memory_bytes,
            "checkpoint": self.checkpoint, "strategy": self.strategy, "stopped": self.stopped,
            "num_parameters": self.num_parameters, "weights": self.weights,
            "step_time_s": self.step_time_s, "predicted": self.predicted,
        }

    @property
    def losses(self) -> list[float]:
        return [row["loss"] for row in self.history]

    def loss_curve_png(self) -> bytes:
        """The training (and validation) loss curve as PNG bytes."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        fig = Figure(figsize=(5, 2.6), dpi=90)
        FigureCanvasAgg(fig)
        ax = fig.add_subplot(1, 1, 1)
        if self.history:
            ax.plot([r["step"] for r in self.history], self.losses, lw=1.2, label="train")
        if self.val_history:
            ax.plot([r["step"] for r in self.val_history],
                    [r["val_loss"] for r in self.val_history], "o-", ms=3, label="validation")
        ax.set_xlabel("step")
        ax.set_ylabel("loss")
        ax.grid(alpha=0.3)
        if self.val_history:
            ax.legend(fontsize=8)
        from skiff.kernels.backend.figures import render_png

        return render_png(fig)

    def _repr_html_(self) -> str:
        rows = [("steps", self.steps), ("epochs", f"{self.epochs:.2f}"),
                ("final loss", _fmt(self.final_loss)), ("time", f"{self.time_s:.1f} s"),
                ("samples/s", _fmt(self.samples_per_s)), ("tokens/s", _fmt(self.tokens_per_s)),
                ("strategy", self.strategy.get("strategy")),
                ("checkpoint", self.checkpoint), ("stopped", self.stopped)]
        if self.val_history:
            last = self.val_history[-1]
            rows.insert(3, ("validation", ", ".join(f"{k} {_fmt(v)}" for k, v in last.items()
                                                    if k.startswith("val_"))))
        cells = "".join(f"<tr><th style='text-align:left'>{html.escape(str(k))}</th>"
                        f"<td>{html.escape(str(v))}</td></tr>" for k, v in rows if v is not None)
        img = ""
        if self.history:
            data = base64.b64encode(self.loss_curve_png()).decode("ascii")
            img = f"<img src='data:image/png;base64,{data}' alt='loss curve'/>"
        return (f"<div class='skiff-train-result'><b>TrainResult</b>"
                f"<table>{cells}</table>{img}</div>")

    def __repr__(self) -> str:
        return (f"TrainResult(steps={self.steps}, final_loss={_fmt(self.final_loss)}, "
                f"time_s={self.time_s:.2f}, stopped={self.stopped!r})")


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


# ------------------------------------------------------------------------------------------
def resolve_strategy(spec, model, *, world_size: int = 1, reporter=None, global_batch=None,
                     seq_len=None) -> tuple[Strategy, dict]:
    """(strategy, plan record) for ``spec``: a Strategy instance is used as given; a name
    goes through the planner (``skiff.kernels.train.plan.resolve``) when it is installed."""
    if isinstance(spec, Strategy):
        return spec, spec.describe() | {"explicit": True,
                                        "reasons": ["strategy object given by the caller"]}
    if not isinstance(spec, str):
        raise TypeError(f"strategy must be a name or a Strategy, got {spec!r}")
    try:
        from .plan import resolve as plan_resolve
    except ImportError:
        plan_resolve = None
    record: dict
    if plan_resolve is not None and (world_size > 1 or spec != "single"):
        plan = plan_resolve(spec, model, world_size=world_size, global_batch=global_batch,
                            seq_len=seq_len)
        record = plan.to_json()
        record.pop("table", None)
        kind = plan.strategy
    else:
        kind = "single" if spec in ("auto", "single") else spec
        why = ("one process: the whole model and its optimizer state on this device"
               if spec == "auto" else "explicit strategy kept as given")
        record = {"spec": spec, "strategy": kind, "reasons": [why]}
    if kind == "single":
        if world_size > 1:
            raise ValueError(f"strategy {spec!r} runs on one device, but the job has "
                             f"{world_size} ranks")
        return SingleDevice(), record
    try:
        from .parallel import strategy_from_plan
    except ImportError:
        strategy_from_plan = None
    if strategy_from_plan is not None:
        return strategy_from_plan(plan), record
    # until dist provides strategy_from_plan: the data-parallel family directly
    if kind in ("dp", "zero1", "zero2"):
        from .parallel.data_parallel import DataParallel, ZeRO

        return (DataParallel() if kind == "dp" else ZeRO(stage=int(kind[-1]))), record
    raise ValueError(f"strategy {kind!r} ({record.get('label', spec)}) needs a distributed "
                     "strategy that skiff.kernels.train.parallel does not provide yet")


# ------------------------------------------------------------------------------------------
class Trainer:
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
        Peak learning rate (default: ``model.config.lr`` when the model has one, else 3e-4).
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
    clip : float or None
        Clip the global gradient norm to this (None: no clipping).
    schedule : {"cosine", "constant"}
        Learning-rate schedule: linear warmup over ``warmup_steps`` then cosine to
        ``min_lr_ratio * lr``, or constant.
    checkpoint_dir, checkpoint_every, keep_checkpoints
        Where, how often (optimizer steps), and how many checkpoints to keep. A checkpoint is
        always written at the end when ``checkpoint_dir`` is set (or the reporter has a run
        folder, then ``run_dir/checkpoints``).
    resume : bool
        Continue from the newest checkpoint in ``checkpoint_dir``.
    seed : int
        Seeds the data order and dropout.
    reporter : Reporter or None
        Where loss, learning rate, throughput and memory go (default: nowhere).
    log_every : int
        Report metrics every this many steps.
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
    (8, ['epoch', 'step', 'val_accuracy', 'val_loss'])
    >>> trainer.predict(x).shape                    # outputs as numpy, in eval mode
    (64, 2)
    """

    def __init__(self, model, *, strategy="auto", optimizer=None, lr: float | None = None,
                 batch_size: int = 32, loss="auto", device="auto", grad_accum: int = 1,
                 clip: float | None = 1.0, schedule: str = "cosine",
                 warmup_steps: int | None = None, min_lr_ratio: float = 0.1,
                 weight_decay: float = 0.01, checkpoint_dir=None,
                 checkpoint_every: int | None = None, keep_checkpoints: int = 3,
                 resume: bool = False, seed: int = 0, reporter=None, log_every: int = 1,
                 shuffle: bool = True, drop_last: bool = False, verbose: bool = False):
        if not hasattr(model, "parameters") or type(model).__module__.split(".")[0] in (
                "torch", "tensorflow", "keras", "jax", "flax", "sklearn"):
            raise TypeError(f"Trainer needs a skiff nn.Module (build it from skiff.nn), got "
                            f"{type(model).__module__}.{type(model).__qualname__}")
        _positive_int("batch_size", batch_size)
        _positive_int("grad_accum", grad_accum)
        _positive_int("log_every", log_every)
        if checkpoint_every is not None:
            _positive_int("checkpoint_every", checkpoint_every)
        if lr is not None and not lr > 0:
            raise ValueError(f"lr must be positive, got {lr!r}")
        if clip is not None and not clip > 0:
            raise ValueError(f"clip must be positive or None, got {clip!r}")
        if schedule not in SCHEDULES:
            raise ValueError(f"unknown schedule {schedule!r}: choose from {', '.join(SCHEDULES)}")
        if isinstance(loss, str) and loss not in LOSSES and loss != "ce":
            raise ValueError(f"unknown loss {loss!r}: choose from {', '.join(LOSSES)} "
                             "or pass a callable loss(output, target)")
        if resume and checkpoint_dir is None:
            raise ValueError("resume=True needs checkpoint_dir (where the checkpoints are)")
        from skiff.kernels.backend.report import NullReporter

        self.model = model
        self.strategy_spec = strategy
        self.optimizer_spec = optimizer
        self.lr = lr if lr is not None else float(getattr(getattr(model, "config", None),
                                                          "lr", 3e-4) or 3e-4)
        self.batch_size = int(batch_size)
        self.loss_spec = "cross_entropy" if loss == "ce" else loss
        self.device = device
        self.grad_accum = int(grad_accum)
        self.clip = clip
        self.schedule = schedule
        self.warmup_steps = warmup_steps
        self.min_lr_ratio = min_lr_ratio
        self.weight_decay = weight_decay
        self.reporter = reporter if reporter is not None else NullReporter()
        if checkpoint_dir is None and getattr(self.reporter, "run_dir", None) is not None:
            checkpoint_dir = Path(self.reporter.run_dir) / "checkpoints"
        self.checkpoint_dir = None if checkpoint_dir is None else Path(checkpoint_dir)
        self.checkpoint_every = checkpoint_every
        self.keep_checkpoints = keep_checkpoints
        self.resume = resume
        self.seed = int(seed)
        self.log_every = int(log_every)
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.verbose = bool(verbose)
        self.strategy: Strategy | None = None
        self.optimizer = None
        self.scheduler = None
        self.plan: dict = {}

    # --------------------------------------------------------------------------------------
    def train(self, dataset, epochs: float | None = None, steps: int | None = None,
              val_dataset=None, *, val_split: float | None = None) -> TrainResult:
        """Train on ``dataset`` for ``epochs`` passes or ``steps`` optimizer steps (neither:
        one epoch); evaluate ``val_dataset`` after each epoch (and after the last step).
        ``val_split=0.2`` keeps the last fifth of ``dataset`` apart as the validation set
        instead. Returns a :class:`TrainResult`.
        """
        if epochs is not None and steps is not None:
            raise ValueError(f"give epochs or steps, not both (got epochs={epochs!r}, "
                             f"steps={steps!r})")
        if epochs is not None and not epochs > 0:
            raise ValueError(f"epochs must be positive, got {epochs!r}")
        if steps is not None:
            _positive_int("steps", steps)
        dataset = as_dataset(dataset)
        if val_dataset is not None:
            val_dataset = as_dataset(val_dataset, what="validation dataset")
        if len(dataset) == 0:
            raise ValueError("the dataset is empty: nothing to train on")
        if val_split is not None:
            if val_dataset is not None:
                raise ValueError("give val_dataset or val_split, not both")
            dataset, val_dataset = split_off(dataset, val_split)
        rep = self.reporter

        # 1. strategy: one device, or the planner's layout over the job's ranks
        seq_len = getattr(getattr(self.model, "config", None), "block_size", None)
        strategy, self.plan = resolve_strategy(
            self.strategy_spec, self.model, world_size=getattr(rep, "world_size", 1),
            reporter=rep, global_batch=self.batch_size, seq_len=seq_len)
        strategy.bind(device=self.device, reporter=rep)
        self.strategy = strategy
        rep.info(plan=self.plan)
        for reason in self.plan.get("reasons", []):
            rep.log(f"plan: {reason}")

        # 2. model on the device, optimizer, data loader, schedule
        self.model, self.optimizer = strategy.setup(self.model, self._make_optimizer)
        loader = strategy.make_loader(dataset, self.batch_size, shuffle=self.shuffle,
                                      seed=self.seed, drop_last=self.drop_last)
        if len(loader) == 0:
            raise ValueError(f"the dataset has {len(dataset)} items, fewer than one batch of "
                             f"{self.batch_size} with drop_last=True")
        per_epoch = max(1, len(loader) // self.grad_accum)
        total = int(steps) if steps is not None else max(1, round((epochs or 1) * per_epoch))
        self.scheduler = self._make_scheduler(total)
        dtype = _param_dtype(self.model)
        loss_fn = self._loss_fn()
        train_random.seed(self.seed)
        n_params = _num_parameters(self.model)
        rep.info(num_parameters=n_params, total_steps=total, batch_size=self.batch_size,
                 grad_accum=self.grad_accum, device=str(strategy.device))

        # 3. resume: weights, optimizer, schedule, RNG, data position, step, curve
        step, history, val_history = 0, [], []
        if self.resume:
            state = strategy.load_checkpoint(self.checkpoint_dir)
            if state is None:
                rep.log(f"no checkpoint in {self.checkpoint_dir}: starting from step 0")
            else:
                step, history, val_history = self._restore(state, loader)
                rep.log(f"resumed from step {step} (epoch {loader.epoch}, batch "
                        f"{loader.position})")

        # 4. the loop
        last_ckpt = None
        stopped = None
        t_start = time.perf_counter()
        samples = tokens = 0
        window_t, window_samples, window_tokens = time.perf_counter(), 0, 0
        peak = 0
        self.model.train()
        rep.progress(step, total, unit="step")
        step_times: list[float] = []
        line_losses: list[float] = []
        while step < total:
            if rep.should_stop():
                stopped = "cancelled"
                break
            t_step = time.perf_counter()
            loss_sum = 0.0
            for _ in range(self.grad_accum):
                host_batch = _next_batch(loader)
                batch = strategy.to_device(host_batch, dtype)
                try:
                    loss_sum += strategy.forward_backward(self.model, batch, loss_fn,
                                                          scale=1.0 / self.grad_accum)
                except NonFiniteLoss as exc:
                    raise self._diverged(step + 1, str(exc), last_ckpt) from None
                n = batch_size_of(host_batch) * loader.world_size
                samples += n
                window_samples += n
                t = token_count(host_batch)
                if t is not None:
                    tokens += t * loader.world_size
                    window_tokens += t * loader.world_size
            strategy.reduce_gradients(self.model)
            grad_norm = None
            if self.clip is not None:
                grad_norm = strategy.clip_grad_norm(self.model, self.clip)
                if not math.isfinite(grad_norm):
                    raise self._diverged(step + 1, f"gradient norm is {grad_norm}", last_ckpt)
            lr = self._current_lr()
            strategy.optimizer_step(self.optimizer)
            self.optimizer.zero_grad()
            if self.scheduler is not None:
                self.scheduler.step()
            step += 1
            step_times.append(time.perf_counter() - t_step)
            loss = loss_sum / self.grad_accum
            metrics = strategy.reduce_metrics({"loss": loss})

            # report
            peak = max(peak, _memory_in_use(strategy.device))
            if step % self.log_every == 0 or step == total:
                now = time.perf_counter()
                dt = max(now - window_t, 1e-9)
                row = {"step": step, "loss": metrics["loss"], "lr": lr,
                       "epoch": loader.epoch + loader.position / len(loader),
                       "samples_per_s": window_samples / dt}
                if window_tokens:
                    row["tokens_per_s"] = window_tokens / dt
                if grad_norm is not None:
                    row["grad_norm"] = grad_norm
                history.append(row)
                for name in ("loss", "lr", "samples_per_s", "tokens_per_s", "grad_norm"):
                    if name in row:
                        rep.metric(name, row[name], step=step)
                rep.metric("memory_bytes", peak, step=step)
                window_t, window_samples, window_tokens = now, 0, 0
            rep.progress(step, total, unit="step", message=f"loss {metrics['loss']:.4f}")

            # validation at each epoch's end, and after the last step when that is mid-epoch
            if val_dataset is not None and (loader.position >= len(loader) or step == total):
                val = self.evaluate(val_dataset)
                val = {"step": step, "epoch": round(loader.epoch + loader.position / len(loader),
                                                    4), **val}
                val_history.append(val)
                for k, v in val.items():
                    if k.startswith("val_"):
                        rep.metric(k, v, step=step)
                self.model.train()

            if self.verbose:
                line_losses.append(metrics["loss"])
                if loader.position >= len(loader) or step == total:
                    self._print_line(step, total, loader, line_losses, val_history, t_start)
                    line_losses = []

            # checkpoint every N steps
            if self.checkpoint_dir is not None and self.checkpoint_every and \
                    step % self.checkpoint_every == 0 and step < total:
                last_ckpt = self._save(step, loader, history, val_history)
        elapsed = time.perf_counter() - t_start

        # 5. final checkpoint (also when cancelled, so the run can be resumed)
        if self.checkpoint_dir is not None and step > 0:
            last_ckpt = self._save(step, loader, history, val_history)
        strategy.teardown()
        result = TrainResult(
            steps=step, epochs=round(loader.epoch + loader.position / len(loader), 4),
            final_loss=history[-1]["loss"] if history else None, history=history,
            val_history=val_history, time_s=elapsed,
            samples_per_s=samples / elapsed if elapsed > 0 and samples else None,
            tokens_per_s=tokens / elapsed if elapsed > 0 and tokens else None,
            peak_memory_bytes=peak or None,
            checkpoint=None if last_ckpt is None else str(last_ckpt),
            strategy=self.plan, stopped=stopped, num_parameters=n_params, model=self.model)
        result.step_time_s = _median(step_times[1:] or step_times)
        result.predicted = _predicted_vs_measured(self.plan, result)
        if result.predicted:
            rep.info(predicted_vs_measured=result.predicted)
        if stopped:
            rep.log(f"stopped at step {step} of {total} ({stopped})", level="warning")
        return result

    # --------------------------------------------------------------------------------------
    def evaluate(self, dataset, batch_size: int | None = None) -> dict:
        """Mean loss (and accuracy for classification) over ``dataset`` without gradients."""
        from .core.tensor import no_grad
        from .data import DataLoader

        if self.strategy is None:
            self.strategy = SingleDevice().bind(device=self.device, reporter=self.reporter)
        dataset = as_dataset(dataset, what="validation dataset")
        if len(dataset) == 0:
            raise ValueError("the validation dataset is empty")
        loader = DataLoader(dataset, batch_size or self.batch_size, shuffle=False)
        dtype = _param_dtype(self.model)
        loss_fn = self._loss_fn()
        if hasattr(loss_fn, "keep"):
            loss_fn.keep = True
        total = count = correct = 0.0
        classify = None
        self.model.eval()
        with no_grad():
            for host_batch in loader:
                batch = self.strategy.to_device(host_batch, dtype)
                n = batch_size_of(host_batch)
                total += float(loss_fn(self.model, batch).item()) * n
                count += n
                last = getattr(loss_fn, "last", None)
                acc = None if last is None else _accuracy(*last, self.loss_spec)
                if acc is not None:
                    classify = True
                    correct += acc * n
        out = {"val_loss": total / count}
        if classify:
            out["val_accuracy"] = correct / count
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
        dataset = as_dataset(data, what="data to predict on")
        if len(dataset) == 0:
            raise ValueError("the data to predict on is empty")
        loader = DataLoader(dataset, batch_size or max(self.batch_size, 256), shuffle=False)
        dtype = _param_dtype(self.model)
        was_training = getattr(self.model, "training", False)
        outs = []
        self.model.eval()
        try:
            with no_grad():
                for host_batch in loader:
                    if isinstance(host_batch, PackedBatch):
                        raise TypeError("predict takes arrays of inputs, got packed sequences")
                    if isinstance(host_batch, dict):
                        host_batch = next((host_batch[k] for k in _INPUT_KEYS
                                           if k in host_batch), None)
                        if host_batch is None:
                            raise TypeError("predict on dict items needs an input key "
                                            f"({', '.join(_INPUT_KEYS)})")
                    xs = tuple(host_batch[:inputs]) if isinstance(host_batch, (tuple, list)) \
                        else (host_batch,)
                    out = self.model(*self.strategy.to_device(xs, dtype))
                    outs.append(np.asarray(out.numpy()) if hasattr(out, "numpy")
                                else np.asarray(out))
        finally:
            if was_training:
                self.model.train()
        return np.concatenate(outs, axis=0)

    # --------------------------------------------------------------------------------------
    def _make_optimizer(self, params):
        ours = self.optimizer_spec is None or isinstance(self.optimizer_spec, str)
        if ours and self.optimizer is not None:
            built = [p for g in self.optimizer.param_groups for p in g["params"]]
            if len(built) == len(params) and all(a is b for a, b in zip(built, params)):
                return self.optimizer  # train() called again: keep the optimizer's moments
        spec = self.optimizer_spec
        if spec is None or spec in ("adamw", "adam"):
            from .core.optim import AdamW

            decay = 0.0 if spec == "adam" else self.weight_decay  # Adam: AdamW without decay
            return AdamW(params, lr=self.lr, weight_decay=decay)
        if spec == "sgd":
            from .core.optim import SGD

            return SGD(params, lr=self.lr, momentum=0.9)
        if isinstance(spec, str):
            raise ValueError(f"unknown optimizer {spec!r}: choose from adamw, adam, sgd, or pass "
                             "one")
        if hasattr(spec, "step") and hasattr(spec, "param_groups"):
            return spec
        if callable(spec):
            return spec(params)
        raise TypeError(f"optimizer must be an Optimizer, a factory or a name, got {spec!r}")

    def _make_scheduler(self, total: int):
        from .core import optim

        if self.schedule == "constant":
            return None
        warmup = self.warmup_steps
        if warmup is None:
            warmup = min(100, total // 10)
        return optim.WarmupCosine(self.optimizer, warmup_steps=warmup, total_steps=total,
                                  min_lr_ratio=self.min_lr_ratio)

    def _current_lr(self) -> float:
        return float(self.optimizer.param_groups[0]["lr"])

    def _loss_fn(self):
        """``fn(model, batch) -> scalar Tensor`` for the configured loss."""
        spec = self.loss_spec
        model_loss = getattr(self.model, "loss", None)
        if spec == "auto" and callable(model_loss):
            if _positional_arity(model_loss) != 2:
                return lambda model, batch: model.loss(batch)
            spec = model_loss  # loss(output, target): a criterion written as a method

        checked = []  # class ids are range-checked on the first batch only (a host sync)

        def fn(model, batch):
            if isinstance(batch, dict):
                batch = _pair_of(batch)
            if isinstance(batch, PackedBatch) or not isinstance(batch, (tuple, list)) or \
                    len(batch) < 2:
                what = type(batch).__name__
                if isinstance(batch, (tuple, list)):
                    what += f" of {len(batch)}"
                raise TypeError("without a model.loss(batch), the data must be (x, y) pairs, "
                                f"e.g. trainer.train((X, y)); got batches of a {what}")
            *xs, y = batch  # (x1, ..., xk, y): a model of k inputs
            out = model(*xs)
            if fn.keep:  # evaluate reads the output for accuracy (never kept in training)
                fn.last = (out, y)
            if callable(spec):
                return spec(out, y)
            loss = _supervised_loss(out, y, spec, check_ids=not checked)
            checked.append(True)
            return loss

        fn.keep, fn.last = False, None
        return fn

    def _state(self, step, loader, history, val_history) -> dict:
        st = self.strategy
        return {
            "model": self.model.state_dict(),
            "optimizer": st.optimizer_state_dict(self.optimizer),
            "scheduler": None if self.scheduler is None else self.scheduler.state_dict(),
            "rng": {"train": train_random.get_state()},
            "data": loader.state_dict(),
            "step": step,
            "history": history,
            "val_history": val_history,
            "plan": {"strategy": self.plan.get("strategy"), "world_size": st.world_size},
        }

    def _save(self, step, loader, history, val_history):
        path = self.strategy.save_checkpoint(
            self.checkpoint_dir, self._state(step, loader, history, val_history), step=step,
            keep=self.keep_checkpoints)
        if path is not None:
            self.reporter.log(f"checkpoint {Path(path).name} at step {step}")
            self.reporter.info(checkpoint=str(path), checkpoint_step=step)
        return path

    def _restore(self, state, loader):
        self.model.load_state_dict(state["model"])
        self.strategy.load_optimizer_state_dict(self.optimizer, state["optimizer"])
        if self.scheduler is not None and state.get("scheduler") is not None:
            self.scheduler.load_state_dict(state["scheduler"])
        train_random.set_state(state["rng"]["train"])
        loader.load_state_dict(state["data"])
        return int(state["step"]), list(state.get("history", [])), \
            list(state.get("val_history", []))

    def _print_line(self, step, total, loader, losses, val_history, t_start) -> None:
        epoch = loader.epoch + loader.position / len(loader)
        parts = [f"epoch {epoch:.4g}", f"step {step}/{total}",
                 f"loss {sum(losses) / max(len(losses), 1):.4g}"]
        if val_history and val_history[-1]["step"] == step:
            parts += [f"{k} {v:.4g}" for k, v in val_history[-1].items()
                      if k.startswith("val_")]
        parts.append(f"{time.perf_counter() - t_start:.1f} s")
        print("  ".join(parts), flush=True)

    def _diverged(self, step, what, last_ckpt) -> TrainingDiverged:
        keep = (f"; the last good checkpoint is {Path(last_ckpt).name}" if last_ckpt
                else "; no checkpoint was written before it")
        msg = f"training diverged at step {step}: {what}{keep}"
        self.reporter.log(msg, level="error")
        return TrainingDiverged(msg)


# ------------------------------------------------------------------------------------------
_INPUT_KEYS = ("x", "input", "inputs", "features", "image", "images")
_TARGET_KEYS = ("y", "target", "targets", "label", "labels")


def _pair_of(batch: dict) -> tuple:
    """``(x, y)`` from a dict batch with an input key and a target key (``{"x", "y"}``,
    ``{"image", "label"}``, ...)."""
    x = next((batch[k] for k in _INPUT_KEYS if k in batch), None)
    y = next((batch[k] for k in _TARGET_KEYS if k in batch), None)
    if x is None or y is None:
        raise TypeError(f"a dict batch needs an input key ({', '.join(_INPUT_KEYS)}) and a "
                        f"target key ({', '.join(_TARGET_KEYS)}); got keys {sorted(batch)}")
    return x, y


def _next_batch(loader):
    """The next host batch, moving to the next epoch when this one is used up."""
    if loader.position >= len(loader):
        loader.epoch += 1
        loader.position = 0
    index = loader.batch_indices(loader.epoch, loader.position)
    loader.position += 1
    return loader.make_batch(index)


def _supervised_loss(out, y, spec: str, *, check_ids: bool = True):
    from .core.nn import functional as F

    ydt = np.dtype(str(y.dtype))
    if ydt == np.bool_:  # True/False labels are class ids 1/0 (or 1.0/0.0 for MSE and BCE)
        y = y.astype(np.int64)
        ydt = np.dtype(np.int64)
    if spec == "auto":
        if np.issubdtype(ydt, np.integer):
            spec = "cross_entropy"
        elif np.issubdtype(ydt, np.floating):
            spec = "mse"
        else:
            raise TypeError(f"targets must be integer class ids (cross-entropy) or floats "
                            f"(MSE), got dtype {ydt}")
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
    if y.dtype != out.dtype:
        y = y.astype(out.dtype)
    if spec == "bce":
        from .core.nn.loss import binary_cross_entropy_with_logits

        return binary_cross_entropy_with_logits(out, y)
    return F.mse_loss(out, y)


def _accuracy(out, y, spec) -> float | None:
    """Accuracy of the outputs ``out`` against targets ``y`` (None where it has no meaning:
    regression, or shapes that do not line up)."""
    if spec == "bce":  # one score per binary label: positive means class 1
        o, yv = out.numpy(), y.numpy()
        if o.size != yv.size:
            return None
        return float(((o.reshape(yv.shape) > 0) == (yv > 0.5)).mean())
    if not np.issubdtype(np.dtype(str(y.dtype)), np.integer) and str(y.dtype) != "bool":
        return None
    if not hasattr(out, "shape") or out.ndim < 1:
        return None
    if y.ndim >= 2 and y.shape[-1] == 1 and tuple(out.shape[:-1]) == tuple(y.shape[:-1]):
        y = y.reshape(*y.shape[:-1])
    if tuple(out.shape[:-1]) != tuple(y.shape) or out.shape[-1] < 2:
        return None
    pred = out.numpy().argmax(axis=-1)
    return float((pred == y.numpy()).mean())


def _positional_arity(fn) -> int | None:
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


def _median(values):
    if not values:
        return None
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def _predicted_vs_measured(plan: dict, result: TrainResult) -> dict:
    """The planner's step time and peak memory next to what this run measured (memory on
    the CPU is the process's resident set, so it includes the interpreter and libraries)."""
    est = plan.get("estimate") if isinstance(plan, dict) else None
    if not isinstance(est, dict):
        return {}
    out = {}
    if est.get("step_time") is not None and result.step_time_s is not None:
        out["step_time_s"] = {"predicted": est["step_time"], "measured": result.step_time_s}
    if est.get("peak_memory") is not None and result.peak_memory_bytes:
        out["peak_memory_bytes"] = {"predicted": est["peak_memory"],
                                    "measured": result.peak_memory_bytes}
    return out


def _param_dtype(model):
    for p in model.parameters():
        return p.dtype
    return None


def _num_parameters(model) -> int:
    if hasattr(model, "num_parameters"):
        return int(model.num_parameters())
    return int(sum(int(np.prod(p.shape)) for p in model.parameters()))


def _memory_in_use(device) -> int:
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


def _positive_int(name, value):
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
