"""How a training step runs: the :class:`Strategy` hooks, and :class:`SingleDevice`.

The :class:`~skiff.kernels.train.trainer.Trainer` owns the loop (epochs, accumulation,
logging, checkpoints, validation). Everything that differs between one device and many ranks
goes through a strategy, one hook per concern, called in this order::

    model, optimizer = strategy.setup(model, optimizer_factory)   # once
    loader = strategy.make_loader(dataset, batch_size, ...)       # once per dataset
    loop over optimizer steps:
        for each micro-batch (grad_accum of them):
            batch = strategy.to_device(host_batch, dtype)
            loss = strategy.forward_backward(model, batch, loss_fn, scale=1/grad_accum)
        strategy.reduce_gradients(model)
        norm = strategy.clip_grad_norm(model, max_norm)            # when clipping
        strategy.optimizer_step(optimizer)
        optimizer.zero_grad()
        metrics = strategy.reduce_metrics({"loss": ...})
    strategy.save_checkpoint(directory, state, step=..., keep=...)  # every N and at the end
    strategy.load_checkpoint(directory)                            # resume
    weights = strategy.full_state_dict(model)                       # the trained model
    whole = strategy.whole_model(model, weights)                    # to save, on the root

Subclasses (data parallel, ZeRO, tensor and pipeline parallel) override the hooks they
change; a hook they leave alone keeps the single-device behaviour. A strategy is built
unconfigured and takes its device and reporter in :meth:`Strategy.bind`.
"""

from __future__ import annotations

import math

import numpy as np

from skiff.kernels.backend.devices import DEFAULT_DEVICE

from . import checkpoint as ckpt
from .data import DataLoader, PackedBatch

__all__ = ["Strategy", "SingleDevice", "NonFiniteLoss"]


class NonFiniteLoss(FloatingPointError):
    """The loss became NaN or infinite; the step is named in the message."""


class Strategy:
    """Base class of the ways to run a training step (one device, or many ranks).

    Attributes
    ----------
    name : str
        Short name shown in plans and results (``"single"``, ``"dp"``, ``"zero2"``, ...).
    rank, world_size : int
        This process in the job's world (1 process: 0 and 1).
    device : skiff Device
        Where this rank's arrays live; set by :meth:`bind`.
    """

    name = "base"
    # a checkpoint of a model with a frozen base holds only what trains (trainer_frozen);
    # a strategy that splits the model keeps its own layout of every weight
    frozen_base_checkpoints = False

    def __init__(self):
        self.device = None
        self.reporter = None
        self.rank = 0
        self.world_size = 1

    # lifecycle ------------------------------------------------------------------------------
    def bind(self, *, device=None, reporter=None) -> Strategy:
        """Attach the device and reporter before :meth:`setup` (the Trainer calls it)."""
        from skiff.kernels.backend import resolve_device

        self.device = resolve_device(device or DEFAULT_DEVICE)
        if self.device.is_gpu:  # new cupy arrays (activations, grads) land on this GPU
            from skiff.kernels.backend import cupy

            cupy().cuda.Device(self.device.index).use()
        self.reporter = reporter
        return self

    @property
    def is_root(self) -> bool:
        """True on the rank that reports, writes results and owns single-file checkpoints."""
        return self.rank == 0

    def setup(self, model, make_optimizer):
        """Place ``model`` on the device and build its optimizer; return ``(model, optimizer)``.

        ``make_optimizer(params)`` builds the optimizer for an iterable of parameters (the
        Trainer's choice of optimizer and learning rate); a sharded strategy hands it only this
        rank's parameters, or wraps the result. Data parallel registers its gradient hooks here.
        """
        raise NotImplementedError

    def teardown(self) -> None:
        """Release what :meth:`setup` acquired (hooks, communicators). Called at the end."""

    def describe(self) -> dict:
        """A plain, JSON-able description of how this strategy runs (the plan's record)."""
        return {"strategy": self.name, "world_size": self.world_size,
                "device": str(self.device)}

    # data --------------------------------------------------------------------------------------
    def data_shard(self) -> tuple[int, int]:
        """``(index, count)`` of this rank among the ranks that see different data."""
        return 0, 1

    def make_loader(self, dataset, batch_size: int, *, shuffle: bool = True, seed: int = 0,
                    drop_last: bool = False) -> DataLoader:
        """The loader for this rank: global ``batch_size``, sharded by :meth:`data_shard`.
        A batch size the ranks do not divide is split as evenly as it goes (rank ``r`` takes
        items ``r::count``), and each rank's loss is weighted by its share of the rows
        (:attr:`row_weight`), so the step is one device's."""
        index, count = self.data_shard()
        loader = DataLoader(dataset, batch_size, shuffle=shuffle, seed=seed,
                            drop_last=drop_last)
        loader.rank, loader.world_size = index, count
        return loader

    def to_device(self, batch, dtype=None, *, targets: bool = False):
        """Host batch -> Tensors on this device. Float arrays take ``dtype`` (the model's
        parameter dtype); integer arrays stay integer. A :class:`PackedBatch` keeps its
        ``cu_seqlens`` and ``positions`` as host int64 arrays. ``targets=True``: the last
        array of an ``(x, ..., y)`` batch is the targets, whose floats stay float32 under a
        16-bit ``dtype`` (a regression's targets rounded to bfloat16 lost all but 3 digits,
        and the MSE refused them), as ``torch.autocast`` leaves them."""
        from skiff.kernels.backend import get_array_module

        from .core.tensor import Tensor, _as_dtype

        def move(a):
            if isinstance(a, tuple) or (isinstance(a, list) and any(
                    isinstance(b, (tuple, dict)) for b in a)):
                # a nested field, (x, (y1, y2)) (round 44 h5); a list of numbers or of
                # equal arrays is one array, as before
                return type(a)(move(b) for b in a)
            if isinstance(a, dict):
                return {k: move(v) for k, v in a.items()}
            if isinstance(a, list):
                try:
                    np.asarray(a)
                except ValueError:  # arrays of other shapes: each its own
                    return [move(b) for b in a]
            if isinstance(a, Tensor):
                return a if a.device == self.device else a.to(self.device)
            arr = a if get_array_module(a) is not np else np.asarray(a)  # cupy stays put
            if np.issubdtype(arr.dtype, np.floating) and dtype is not None:
                # the model's float64 kept (Tensor(float64) is the default float, float32)
                return Tensor(arr.astype(dtype, copy=False), device=self.device, dtype=dtype)
            return Tensor(arr, device=self.device)

        if isinstance(batch, PackedBatch):
            return PackedBatch(move(batch.tokens), move(batch.targets),
                               np.asarray(batch.cu_seqlens), np.asarray(batch.positions))
        if isinstance(batch, (tuple, list)) and targets and len(batch) >= 2 \
                and dtype is not None and _as_dtype(dtype).itemsize < 4:
            last = batch[-1]
            kind = getattr(getattr(last, "dtype", None), "kind", None)
            if not isinstance(last, Tensor) and kind == "f":
                kept = self.to_device(last, np.float32)
                moved = [move(a) for a in batch[:-1]] + [kept]
                return tuple(moved) if isinstance(batch, tuple) else moved
        if isinstance(batch, tuple):
            return tuple(move(a) for a in batch)
        if isinstance(batch, list):
            return [move(a) for a in batch]
        if isinstance(batch, dict):
            return {k: move(v) for k, v in batch.items()}
        return move(batch)

    # one step ----------------------------------------------------------------------------------
    def forward_backward(self, model, batch, loss_fn, *, scale: float = 1.0) -> float:
        """Run ``loss_fn(model, batch)``, backpropagate ``scale * loss``, return the loss value
        of this micro-batch (before scaling, this rank only). Gradients accumulate into
        ``param.grad``. A non-finite loss raises :class:`NonFiniteLoss` before backward; where
        other ranks wait for this rank's gradients (:meth:`others_wait_in_backward`) backward
        runs and the value is returned, for :meth:`agree_finite` to fail the step on every
        rank."""
        loss = loss_fn(model, batch)
        value = float(loss.item())
        if not np.isfinite(value):
            if not self.others_wait_in_backward():
                raise NonFiniteLoss(f"loss is {value}")
            with np.errstate(all="ignore"):  # its gradients are never applied
                (loss * scale).backward() if scale != 1.0 else loss.backward()
            return value
        (loss * scale).backward() if scale != 1.0 else loss.backward()
        return value

    def reduce_gradients(self, model) -> None:
        """Make every rank's gradients the full-batch gradients (DP: wait for the
        all-reduce of the last buckets; one device: nothing to do)."""

    def clip_grad_norm(self, model, max_norm: float) -> float:
        """Scale gradients so their global norm is at most ``max_norm``; return the norm
        before clipping (over all ranks' shards for sharded strategies)."""
        from .core.optim import clip_grad_norm_

        return float(clip_grad_norm_(list(model.parameters()), max_norm))

    def optimizer_step(self, optimizer) -> None:
        """Apply one optimizer update (ZeRO: on this rank's shard, then all-gather)."""
        optimizer.step()

    # this rank's rows of the micro-batch being run times the data-parallel ranks, over the
    # global batch's rows (set by the Trainer before each forward_backward; None: an even
    # split or one rank). Data parallel weighs each rank's mean loss by it, so that a batch
    # that does not split evenly (the last of an epoch, a batch size the ranks do not divide)
    # gives one device's mean; 0 on a rank left without rows (it runs a stand-in row).
    row_weight: float | None = None

    # mixed precision ---------------------------------------------------------------------------
    precision = "32"  # the Trainer's choice, set before setup
    owns_masters = False  # True: the optimizer's parameters are float32 slices it keeps (ZeRO)

    def grad_norm(self, grads) -> float:
        """The global L2 norm of the gradients ``grads`` of the optimizer's parameters (None
        skipped), over every rank that holds other parameters; an inf or nan on any rank
        makes it non-finite on every rank (so that all skip an overflowing step together)."""
        from .precision import local_grad_norm

        return local_grad_norm(grads)

    def reduce_metrics(self, values: dict) -> dict:
        """Average scalar metrics over the data-parallel ranks (one device: as they are)."""
        return dict(values)

    def agree_names(self, names) -> tuple[list, bool]:
        """Every rank's ``names`` (a loss function's dict's keys this step) joined, sorted,
        the same on every rank, and whether every rank had them all (one process: its own,
        True)."""
        return sorted(names), True

    def others_wait_in_backward(self) -> bool:
        """True where backward holds collectives of several ranks (the gradient all-reduce
        of data parallelism): a rank that raised before backward would leave them waiting."""
        return False

    def agree_finite(self, loss: float) -> str | None:
        """None when this step's loss is finite on every rank, else what failed, the same
        on every rank (called after :meth:`reduce_gradients`, before the optimizer step)."""
        return None if math.isfinite(loss) else f"loss is {loss}"

    def mean_over_ranks(self, value: float) -> float:
        """``value`` averaged over the ranks that stop together (early stopping's validation
        loss, so that every rank keeps the same best step; one process: ``value``)."""
        return float(value)

    def agree_stop(self, flag: bool) -> bool:
        """Whether to stop, the same on every rank: True when any rank's ``flag`` is (a
        callback's or early stopping's decision; one process: ``flag``)."""
        return bool(flag)

    def barrier(self) -> None:
        """Wait for every rank (one device: returns at once)."""

    # state -------------------------------------------------------------------------------------
    def full_state_dict(self, model) -> dict:
        """The model's complete weights as host arrays (gathered from shards if sharded)."""
        return model.state_dict()

    def whole_model(self, model, weights: dict):
        """The trained model whole on this rank, holding ``weights`` (from
        :meth:`full_state_dict`): what a job saves in the model's own layout. A strategy that
        keeps every parameter whole and current on every rank returns ``model`` itself."""
        return model

    def stale_elsewhere(self) -> bool:
        """Whether, during a run, this rank's model object holds weights another rank keeps
        current (pp: the other stages), so that it cannot be scored alone."""
        return False

    def sync_for_evaluation(self, model) -> None:
        """Before the loop's validation (every rank calls it): the model object holds every
        current weight on this rank. Nothing to do where each rank steps every parameter
        it computes with (one device, dp, ZeRO, tp's slices, ep's experts); pp's ranks step
        one stage each and gather the others' here."""

    def evaluation_model(self, model):
        """The model the reporting rank evaluates (None on the other ranks); every rank
        calls it. A strategy that keeps the model whole on every rank gives ``model``; one
        that splits it gathers a whole copy (:meth:`full_state_dict`, a collective, then
        :meth:`whole_model`) or, when it cannot make one, raises ValueError."""
        return model

    def whole_outputs(self, model, out: np.ndarray) -> np.ndarray:
        """One batch's outputs of ``model`` (host arrays, for ``predict``) as one device's:
        where the model's output layer is split over ranks (tp of a GPT: each rank holds a
        slice of the vocabulary) the ranks' slices are joined, a collective, as the split
        model's forward already is. As they are elsewhere."""
        return out

    def _gathered_copy(self, model):
        weights = self.full_state_dict(model)
        return self.whole_model(model, weights) if self.is_root else None

    def optimizer_state_dict(self, optimizer) -> dict:
        """This rank's optimizer state for a checkpoint."""
        return optimizer.state_dict()

    _fresh_optimizer = False  # a checkpoint of a split model read without its moments

    def load_optimizer_state_dict(self, optimizer, state: dict) -> None:
        if state is None and self._fresh_optimizer:
            return  # resharded from a model-splitting layout: the moments start at zero
        if isinstance(state, dict) and "hyper" in state:  # a split model's pieces, by name
            from .parallel.sliced_state import load_optimizer_from_pieces

            load_optimizer_from_pieces(optimizer, state)
            return
        params = [p for g in optimizer.param_groups for p in g["params"]]
        if isinstance(state, dict) and "param_groups" in state:  # ZeRO's flat slice, joined
            from .parallel.relayout import fit_optimizer_state

            state = fit_optimizer_state(state, sizes=[int(p.size) for p in params],
                                        shapes=[tuple(p.shape) for p in params])
            if state is None:
                return
        optimizer.load_state_dict(state)

    def save_checkpoint(self, directory, state: dict, *, step: int, keep: int | None = 3):
        """Write ``state`` (model, optimizer, rng, data, step, ...) durably; a partial write
        must never be mistaken for a checkpoint. One device: an atomic npz on the root."""
        if self.is_root:
            return ckpt.save_checkpoint(directory, state, step=step, keep=keep)
        return None

    def load_checkpoint(self, directory) -> dict | None:
        """The newest complete checkpoint's state in ``directory`` (None: nothing to resume).
        A damaged checkpoint is reported and the one before it used."""
        def corrupt(path, exc):
            if self.reporter is not None:
                self.reporter.log(f"skipping damaged checkpoint {path.name}: {exc}",
                                  level="warning")

        found = ckpt.load_latest(directory, on_corrupt=corrupt)
        from .parallel.relayout import newest_steps

        npz, sharded = newest_steps(directory)
        if sharded is not None and (npz is None or sharded > npz):
            return self._load_sharded_checkpoint(directory)
        return None if found is None else found[1]

    def _load_sharded_checkpoint(self, directory) -> dict | None:
        """A checkpoint written on several ranks (``step-N/`` with one shard per rank), read
        in this one process as a one-rank data-parallel group reads it (ZeRO's flat slices
        joined, a split model's pieces put together); the optimizer state is cut back to
        one entry per parameter when it is loaded."""
        from .parallel.one_process import read_sharded

        model = getattr(self, "model", None)
        if model is None:
            return None
        state, self._fresh_optimizer = read_sharded(model, directory, device=self.device,
                                                    reporter=self.reporter)
        return state


class SingleDevice(Strategy):
    """Everything on one device in this process: the default, and what ``"auto"`` gives
    with one rank."""

    name = "single"
    frozen_base_checkpoints = True

    def setup(self, model, make_optimizer):
        if self.device is None:
            self.bind()
        if hasattr(model, "to"):
            moved = model.to(self.device)
            model = moved if moved is not None else model
        # frozen parameters (a LoRA fine-tune's base weights) are not optimised
        optimizer = make_optimizer([p for p in model.parameters() if p.requires_grad])
        self.model = model  # a checkpoint of several ranks is read against it
        return model, optimizer
