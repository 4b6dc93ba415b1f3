"""Data parallelism: gradient buckets all-reduced during backward, and ZeRO-1/2 sharding.

Every rank holds the whole model and sees its own share of the global batch. Gradients are
averaged over the ranks in *buckets*: parameters are grouped in reverse registration order
(roughly the order backward finishes them) into flat buffers of about ``bucket_mb``; the
moment the engine reports the last gradient of a bucket complete
(``param.register_grad_ready_hook``), the bucket's non-blocking all-reduce starts, so
communication of the late layers overlaps the backward pass of the early ones.
:meth:`DataParallel.reduce_gradients` waits for what is still in flight.

Each backward pass (each micro-batch of gradient accumulation) launches its buckets; the
averaged buffers are summed at the end, which equals averaging the accumulated sums. Overlap
assumes every rank runs the same graph (the same parameters reached in the same order); with
``overlap=False`` all buckets go at the end of the step, in a fixed order.

ZeRO-1 keeps the optimizer state of a 1/dp slice of the flat parameter vector on each rank.
ZeRO-2 also shards the gradients: each bucket is reduce-scattered from the backward hooks
straight into the slices of the ranks that own its elements (:class:`.buckets.ShardReducer`),
and the bucket's full gradients are freed at once, so a rank never holds more than one
bucket of full gradients plus its 1/dp slice. After the optimizer step of its slice each
rank all-gathers the parameters. Element-wise optimizers
(SGD, AdamW) give the same update as the unsharded run.
"""

from __future__ import annotations

import math
import zlib

import numpy as np

from skiff.kernels.backend import to_numpy
from skiff.kernels.backend.launch_env import launch_env
from skiff.kernels.train.strategy import Strategy

from .buckets import BucketReducer, ShardReducer
from .checkpoint import FlatShard, PerRank, flat_range, load_sharded, save_sharded
from .comm import Comm
from .compression import NoCompression, make_compressor
from .ernie_balance import balance_over_ranks
from .moe_batch import share_batch, unshare_batch
from .relayout import (
    fit_masters,
    fit_optimizer_state,
    one_process_is_newest,
    read_one_process,
)
from .sliced_state import SlicedState, has_pieces, load_optimizer_from_pieces
from .sync_buffers import average_buffers, float_buffers
from .world import choose_engine, world
from .zero_groups import every_groups_scalars
from .zero_unreached import UnreachedSteps

__all__ = ["BucketReducer", "DataParallel", "ZeRO", "split_state", "merge_state"]


def split_state(state):
    """(replicated, sharded) trees: leaves wrapped in FlatShard/PerRank go to the second."""
    def has_wrapper(obj):
        if isinstance(obj, (FlatShard, PerRank)):
            return True
        if isinstance(obj, dict):
            return any(has_wrapper(v) for v in obj.values())
        if isinstance(obj, (list, tuple)):
            return any(has_wrapper(v) for v in obj)
        return False

    if not isinstance(state, dict):
        return state, None
    rep, sh = {}, {}
    for k, v in state.items():
        if isinstance(v, (FlatShard, PerRank)):
            sh[k] = v
        elif isinstance(v, dict) and has_wrapper(v):
            r, s = split_state(v)
            rep[k], sh[k] = r, s
        elif isinstance(v, (list, tuple)) and has_wrapper(v):
            sh[k] = v  # every rank keeps the whole list; its wrapped items reshard
        else:
            rep[k] = v
    return rep, sh


def merge_state(rep, sh):
    """Inverse of :func:`split_state` (after loading)."""
    if not isinstance(sh, dict):
        return rep if sh is None else sh
    out = dict(rep or {})
    for k, v in sh.items():
        if k in out and isinstance(out[k], dict) and isinstance(v, dict):
            out[k] = merge_state(out[k], v)
        else:
            out[k] = v
    return out


class DataParallel(Strategy):
    """Every rank holds the model; gradients are averaged in overlapped buckets.

    Parameters
    ----------
    comm : Comm, optional
        The data-parallel group (default: the whole world).
    bucket_mb : float
        Bucket size in MiB (25, as is customary; smaller buckets start earlier).
    overlap : bool
        Start each bucket's all-reduce from the backward hooks (True) or at the step's end.
    compression : str, optional
        ``fp16``, ``bf16``, ``powersgd:rank=R`` or ``topk:ratio=F`` (see
        :mod:`.compression`); compressed gradients are reduced at the step's end.
    """

    name = "dp"

    def __init__(self, comm: Comm | None = None, *, bucket_mb: float = 25.0,
                 overlap: bool = True, compression: str | None = None):
        super().__init__()
        if not bucket_mb > 0:
            raise ValueError(f"bucket_mb must be positive, got {bucket_mb!r}")
        self.comm = comm
        self.bucket_bytes = int(bucket_mb * 2**20)
        self.overlap = overlap
        self.compressor = make_compressor(compression)
        self.reducer: BucketReducer | None = None
        self.params: list = []
        self.names: list[str] = []

    # --- set-up -----------------------------------------------------------------------------
    def bind(self, *, device=None, reporter=None):
        """Attach device and reporter; with several ranks the reporter's ``should_stop``
        becomes the flag the ranks agreed at the last step boundary (any rank's request), so
        every rank stops at the same step and none is left waiting in a collective (undone
        in :meth:`teardown`)."""
        super().bind(device=device, reporter=reporter)
        comm = self._stop_comm()
        if reporter is not None:  # which engine moves the arrays, and why (the job's info)
            engine, why = choose_engine(self.device, comm.size,
                                        local_size=launch_env().local_size)
            reporter.info(communicator=self._comm().backend,
                          communicator_why=why if engine == self._comm().backend
                          else "the communicator given to the strategy")
        if comm.size > 1:
            from .groups import limit_threads

            limit_threads()  # this rank's share of the node's cores, never more
        if reporter is not None and comm.size > 1 and self._own_stop is None:
            self._own_stop = reporter.should_stop
            reporter.should_stop = lambda: self._stop_agreed
        return self

    _own_stop = None
    _stop_agreed = False

    @property
    def frozen_base_checkpoints(self) -> bool:
        """dp and ZeRO keep the model whole: a frozen base's weights stay out of their
        checkpoints; the layouts that split the model keep theirs."""
        return type(self) in (DataParallel, ZeRO)

    def _stop_comm(self) -> Comm:
        """The ranks that must stop together: the whole job (the dp group here)."""
        return self._comm()

    def _comm(self) -> Comm:
        if self.comm is None:
            self.comm = world(device=self.device)  # NCCL for GPU ranks, else MPI
        self.rank, self.world_size = self.comm.rank, self.comm.size
        return self.comm

    def _broadcast_params(self, model) -> None:
        """Start every rank from rank 0's weights."""
        comm = self._comm()
        if comm.size == 1:
            return
        for p in model.parameters():
            p._data[...] = comm.broadcast(p._data, root=0)

    def setup(self, model, make_optimizer):
        if self.device is None:
            self.bind()
        self._comm()
        if hasattr(model, "to"):
            moved = model.to(self.device)
            model = moved if moved is not None else model
        self.model = model
        self._broadcast_params(model)
        named = list(model.named_parameters()) if hasattr(model, "named_parameters") else \
            [(str(i), p) for i, p in enumerate(model.parameters())]
        # frozen parameters (a LoRA fine-tune's base weights) are neither reduced nor
        # optimised: in a ZeRO shard AdamW's decoupled weight decay would move them
        named = [(n, p) for n, p in named if p.requires_grad]
        balance_over_ranks(model, self.comm, self.loss_weight)
        share_batch(model, self.comm, self)  # MoE capacity and balancing: the whole batch
        self.names = [n for n, _ in named]
        self.params = [p for _, p in named]
        self._float_buffers = float_buffers(model)  # BatchNorm's running statistics
        compressed = not isinstance(self.compressor, NoCompression)
        self.reducer = BucketReducer(self.params, self.comm, bucket_bytes=self.bucket_bytes,
                                     overlap=self.overlap and not compressed)
        return model, self._make_optimizer(model, make_optimizer)

    def _make_optimizer(self, model, make_optimizer):
        return make_optimizer(list(self.params))

    def _tick(self) -> None:
        """Called once per step (from reduce_metrics): keeps the step times."""
        import time

        now = time.perf_counter()
        if self._last_tick is not None:
            self._step_times.append(now - self._last_tick)
        self._last_tick = now

    _last_tick = None
    plan = None  # set by strategy_from_plan: the prediction this run is checked against

    def measured(self) -> dict:
        """Measured step time (median after the first) and this process's peak RSS."""
        import resource

        times = getattr(self, "_step_times", [])[1:]
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        return {"step_s": float(np.median(times)) if times else None, "peak_rss_bytes": rss}

    def teardown(self) -> None:
        # the plan's check (prediction, measured fixed costs, measurement) is the Trainer's:
        # skiff.kernels.train.plan.check
        if self.reducer is not None:
            self.reducer.remove()
        model = getattr(self, "model", None)
        if model is not None:  # the whole-batch balancing loss is a collective: back to own
            vars(model).pop("load_balancing_loss", None)
            unshare_batch(model)
        if self._own_stop is not None and self.reporter is not None:
            try:
                del self.reporter.should_stop  # back to the class's method
            except AttributeError:
                pass
            self._own_stop = None

    def describe(self) -> dict:
        d = super().describe()
        d.update(bucket_mb=self.bucket_bytes / 2**20, overlap=self.overlap,
                 compression=self.compressor.name,
                 buckets=len(self.reducer.buckets) if self.reducer else None)
        return d

    def data_shard(self):
        comm = self._comm()
        return comm.rank, comm.size

    # --- one step ---------------------------------------------------------------------------
    _float_buffers: list = []

    def _sync_buffers(self) -> None:
        """The ranks' running statistics averaged, weighted by their rows (see
        :mod:`.sync_buffers`)."""
        average_buffers(self._float_buffers, self.comm, self.row_weight)

    def reduce_gradients(self, model) -> None:
        self._sync_buffers()
        if isinstance(self.compressor, NoCompression):
            self.reducer.finish()
            return
        xp = self.params[0].xp
        grads = [p._grad if p._grad is not None else xp.zeros_like(p._data) for p in self.params]
        if xp is not np:  # the compressors are host code (bit tricks, argpartition, QR)
            grads = [to_numpy(g) for g in grads]
        for p, g in zip(self.params, self.compressor.reduce(self.comm, grads, self.names)):
            p._grad = g if xp is np else xp.asarray(g)

    def forward_backward(self, model, batch, loss_fn, *, scale: float = 1.0) -> float:
        """As one device; for packed sequences (chat data, the loss on some tokens only) each
        rank's mean is weighted by its share of the learned tokens of all ranks, so that the
        ranks' averaged gradient and loss are the mean over every learned token of the global
        batch (as one device computes it), however the tokens fall on the ranks. Other
        batches that do not split evenly over the ranks (``row_weight``, set by the Trainer:
        the last batch of an epoch, a batch size the ranks do not divide) are weighted by the
        rank's share of the rows; a rank without rows runs a stand-in row at weight 0."""
        weight = self._token_weight(batch)
        if weight is None and self.row_weight is not None and self.row_weight != 1.0:
            weight = float(self.row_weight)
        scale = scale * self._fp16_share()
        self.stepping = True  # MoE layers route over the whole batch of the ranks
        try:
            if weight is None:
                value = super().forward_backward(model, batch, loss_fn, scale=scale)
            else:
                self._weight = weight
                value = weight * super().forward_backward(model, batch, loss_fn,
                                                          scale=scale * weight)
            end = getattr(self.reducer, "end_backward", None)
            if end is not None:  # the buckets this rank's graph did not reach, in order
                end()
            return value
        finally:
            self._weight = 1.0
            self.stepping = False

    _weight = 1.0
    stepping = False  # inside forward_backward (an evaluation is not a step of the batch)

    def _fp16_share(self) -> float:
        """fp16-mixed: backward runs on this rank's loss divided by the ranks and the reducer
        multiplies the averaged gradients back (``post_scale``). The 16-bit gradients of a
        rank's mean over its rows were up to ``ranks`` times one device's, so 2 ranks skipped
        steps for overflow that one device took (a regression: 1, 2, 3, 8 against 1, 2, 5); as its
        share of the batch's mean they overflow where one device's would."""
        reducer = getattr(self, "reducer", None)
        size = getattr(getattr(reducer, "comm", None), "size", 1)
        if self.precision != "fp16-mixed" or size <= 1 or reducer is None:
            return 1.0
        reducer.post_scale = float(size)
        return 1.0 / size

    balance_weight = None  # set by the Trainer for a window of a token loss (trainer_accum)

    def loss_weight(self) -> float:
        """The factor this rank's loss is scaled by in the micro-batch being run (1 but for
        packed sequences: see :meth:`forward_backward`), relative to one device's weight of
        that micro-batch: what an MoE balancing term is divided by. In a window of a token
        loss the Trainer sets it (``balance_weight``: this rank's share of the micro-batch's
        scored targets times the ranks), as one device weighs the term by the micro-batch's
        scored targets, not this rank's."""
        if self.balance_weight is not None:
            return self.balance_weight
        return self._weight

    def _token_weight(self, batch) -> float | None:
        from skiff.kernels.train.data import PackedBatch

        comm = self._comm()
        if not isinstance(batch, PackedBatch) or comm.size == 1:
            return None
        targets = getattr(batch.targets, "_data", batch.targets)  # a Tensor's array
        mine = float((to_numpy(targets) != -100).sum())
        if self.row_weight == 0:  # a stand-in row: this rank has no sequences of the batch
            mine = 0.0
        total = float(comm.allreduce(np.array([mine]))[0])
        return mine * comm.size / total if total > 0 else None

    def reduce_metrics(self, values: dict) -> dict:
        if not hasattr(self, "_step_times"):
            self._step_times = []
        self._tick()
        comm, everyone = self._comm(), self._stop_comm()
        if everyone.size == 1:
            return dict(values)
        keys = sorted(values)
        # every rank's own stop request counts (a cancel seen on rank 1 only stops them all)
        mine = self._own_stop is not None and bool(self._own_stop())
        if everyone is comm:
            # the stop flags ride along: their mean is above 0 when any rank asked
            arr = np.array([float(values[k]) for k in keys] + [float(mine)],
                           dtype=np.float64)
            arr = comm.allreduce(arr, "mean")
            self._stop_agreed = bool(arr[-1] > 0)
            return {k: float(v) for k, v in zip(keys, arr[:-1])}
        self._stop_agreed = self.agree_stop(mine)
        arr = np.array([float(values[k]) for k in keys], dtype=np.float64)
        if comm.size > 1:
            arr = comm.allreduce(arr, "mean")
        return {k: float(v) for k, v in zip(keys, arr)}

    def others_wait_in_backward(self) -> bool:
        return self._stop_comm().size > 1

    def agree_names(self, names) -> tuple[list, bool]:
        """One small all-reduce (the max of a checksum of the names and of its negation: the
        same on every rank only when the names are); where they differ (a loss dict with a
        key some ranks' batches lack), every rank's names gathered and joined."""
        names = sorted(names)
        everyone = self._stop_comm()
        if everyone.size == 1:
            return names, True
        mark = float(zlib.crc32("\0".join(names).encode()) & 0xFFFFF)
        high, low = everyone.allreduce(np.array([mark, -mark]), "max")
        if high == -low:
            return names, True
        return sorted({n for theirs in everyone.allgather_object(names) for n in theirs}), False

    def agree_finite(self, loss: float) -> str | None:
        """Each rank's loss checked on every rank (one small all-reduce): a bad batch on one
        rank fails the step on all, with the same message naming that rank."""
        everyone = self._stop_comm()
        if everyone.size == 1:
            return super().agree_finite(loss)
        codes = np.zeros(everyone.size, dtype=np.float64)  # 1 nan, 2 inf, 3 -inf
        if not math.isfinite(loss):
            codes[everyone.rank] = 1.0 if math.isnan(loss) else (2.0 if loss > 0 else 3.0)
        codes = everyone.allreduce(codes, "max")
        bad = [(r, int(c)) for r, c in enumerate(codes) if c > 0]
        if not bad:
            return None
        names = {1: "nan", 2: "inf", 3: "-inf"}
        where = ", ".join(f"{names[c]} on rank {r}" for r, c in bad)
        if len(bad) < everyone.size:
            where += " (finite on the other ranks: look at that rank's batch)"
        return f"loss is {where}"

    def mean_over_ranks(self, value: float) -> float:
        everyone = self._stop_comm()
        if everyone.size == 1:
            return float(value)
        return float(everyone.allreduce(np.array([float(value)]), "mean")[0])

    def agree_stop(self, flag: bool) -> bool:
        """True on every rank when any rank's ``flag`` is (one small allreduce over the
        ranks that must stop together)."""
        everyone = self._stop_comm()
        if everyone.size == 1:
            return bool(flag)
        return bool(everyone.allreduce(np.array([1.0 if flag else 0.0]), "max")[0] > 0)

    def barrier(self) -> None:
        self._comm().barrier()

    # --- checkpoints ------------------------------------------------------------------------
    def _note_reshard(self, layout) -> None:
        self._fresh_optimizer = True
        if self.reporter is not None:
            self.reporter.log(f"checkpoint of layout {layout} resharded onto this layout: "
                              "weights, data position and RNG restored; the optimizer state "
                              "starts afresh", level="warning")

    _fresh_optimizer = False

    def load_optimizer_state_dict(self, optimizer, state) -> None:
        if state is None and self._fresh_optimizer:
            return  # after resharding from a model-splitting layout: moments start at zero
        if isinstance(state, dict) and "hyper" in state:  # read from pieces, by name
            load_optimizer_from_pieces(optimizer, state)
            return
        if isinstance(state, dict) and "param_groups" in state:  # dp <-> ZeRO, 1 <-> N ranks
            state = self._fit_optimizer_state(state, self._groups_of(optimizer))
            if state is None:
                if self.reporter is not None:
                    self.reporter.log("the checkpoint's optimizer state does not cover every "
                                      "parameter: the moments start afresh", level="warning")
                return
            state = self._own_settings(state, optimizer)
        optimizer.load_state_dict(state)

    def _own_settings(self, state: dict, optimizer) -> dict:
        """A saved state of other groups than ``optimizer``'s (one group written by a ZeRO
        run before round 47, its settings the first group's): the moments in the
        optimizer's groups, each with its own settings as built (said)."""
        groups, mine = state["param_groups"], optimizer.param_groups
        same = len(groups) == len(mine) and all(len(a["params"]) == len(b["params"])
                                                for a, b in zip(groups, mine))
        if same or type(self) not in (DataParallel, ZeRO):  # tp, pp, ep: as before
            return state
        index = {id(p): k for k, p in enumerate(q for g in mine for q in g["params"])}
        if sum(len(g["params"]) for g in groups) != len(index):
            return state  # load_state_dict says what does not fit
        if self.reporter is not None:
            self.reporter.log(f"the checkpoint's optimizer has {len(groups)} parameter "
                              f"group(s), this one {len(mine)}: the moments are read, each "
                              "group's settings are this optimizer's", level="warning")
        return {**state, "param_groups": [
            {**{k: v for k, v in g.items() if k != "params"},
             "params": [index[id(p)] for p in g["params"]]} for g in mine]}

    def _groups_of(self, optimizer) -> list[list[int]] | None:
        """The optimizer's groups as positions in :attr:`params` (each group's in its
        order), or None where its tensors are not the parameters (nor stand for them)."""
        groups = getattr(optimizer, "param_groups", None)
        if groups is None or type(self) is not DataParallel:  # tp, pp, ep: their own order
            return None
        pos = {id(q): k for k, q in enumerate(self.params)}
        known = getattr(optimizer, "_positions", None)  # mixed precision's masters
        if known is not None and len(known) == sum(len(g["params"]) for g in groups):
            it = iter(known)
            out = [[int(next(it)) for _ in g["params"]] for g in groups]
        elif all(id(p) in pos for g in groups for p in g["params"]):
            out = [[pos[id(p)] for p in g["params"]] for g in groups]
        else:
            return None
        return out if sorted(p for g in out for p in g) == list(range(len(self.params))) \
            else None

    def _fit_optimizer_state(self, state: dict, groups=None) -> dict | None:
        """A saved optimizer state in this strategy's layout: per parameter (dp)."""
        return fit_optimizer_state(state, sizes=[int(p.size) for p in self.params],
                                   shapes=[tuple(p.shape) for p in self.params],
                                   comm=self._comm(), groups=groups)

    def optimizer_state_dict(self, optimizer) -> dict:
        """This rank's optimizer state, with the position of each of its tensors in the
        model's trainable parameters where they are not in that order (a user's groups:
        round 47 h3), so that ZeRO resuming it joins each parameter's moments in place."""
        state = optimizer.state_dict()
        groups = self._groups_of(optimizer)
        order = None if groups is None else [p for g in groups for p in g]
        if order is not None and order != list(range(len(order))):
            state = {**state, "param_positions": order}
        return state

    def _extra_state(self) -> dict:
        if isinstance(self.compressor, NoCompression):
            return {}
        return {"compression": PerRank(self.compressor.state_dict())}

    def save_checkpoint(self, directory, state: dict, *, step: int, keep: int | None = 3):
        state = dict(state)
        state.update(self._extra_state())
        # the order of the optimizer's parameters (ZeRO's flat vector): a layout that splits
        # the model (tp, pp) holds them in another order and reads the moments by name
        state["param_names"] = list(self.names)
        rep, sh = split_state(state)
        return save_sharded(directory, self._comm(), replicated=rep, sharded=sh, step=step,
                            keep=keep, layout={"dp": self.comm.size, "strategy": self.name})

    def load_checkpoint(self, directory) -> dict | None:
        def corrupt(path, exc):
            if self.reporter is not None:
                self.reporter.log(f"skipping damaged checkpoint {path.name}: {exc}",
                                  level="warning")

        comm = self._comm()
        if one_process_is_newest(directory, comm):  # the whole model; cut when it is loaded
            found = read_one_process(directory, comm, strategy=self.name, corrupt=corrupt,
                                     reporter=self.reporter)
            return None if found is None else self._fit_masters(found[1])
        found = load_sharded(directory, comm, on_corrupt=corrupt)
        if found is None:
            return None
        layout = found.get("layout") or {}
        if has_pieces(found):  # written by a split model: its pieces, read whole
            state = dict(found["replicated"])
            sliced = SlicedState(self.names, self.params)
            model, opt, masters = sliced.restore(found["pieces"], self.model.state_dict(),
                                                 state.pop("optimizer_hyper", None))
            if isinstance(self, ZeRO):  # one flat slice of the moments and the masters
                opt, masters = self._flat_slices(opt, masters)
                if opt is None:
                    self._note_reshard(layout)
            state.update(model=model, optimizer=opt)
            if masters is not None and isinstance(state.get("precision"), dict):
                state["precision"] = {**state["precision"], "master": masters,
                                      "names": self._master_names()}
            state.setdefault("step", found["step"])
            return state
        if "full_model" in (found["replicated"] or {}):
            # written by a strategy that splits the model: start from its gathered weights
            state = dict(found["replicated"])
            state["model"] = state.pop("full_model")
            state["optimizer"] = None
            self._note_reshard(layout)
            state.setdefault("step", found["step"])
            return state
        state = merge_state(found["replicated"], found["sharded"])
        if isinstance(state, dict):
            comp = state.pop("compression", None)
            if comp is not None:
                self.compressor.load_state_dict(comp)
            state.setdefault("step", found["step"])
        return self._fit_masters(state)

    def _master_range(self) -> tuple[int, int] | None:
        """Where this rank's masters lie in the flat vector of all parameters (ZeRO: its
        slice); None: one master per parameter."""
        return None

    def _fit_masters(self, state):
        """The checkpoint's float32 masters (mixed precision) in this layout: per parameter
        for dp and one process, this rank's flat slice for ZeRO (a dp run resumed as ZeRO or
        the reverse used to fail "could not broadcast input array from shape (41,) into
        shape (16, 3)"). A collective call: a ZeRO slice is gathered from every rank."""
        prec = state.get("precision") if isinstance(state, dict) else None
        if not isinstance(prec, dict) or prec.get("master") is None:
            return state
        masters = fit_masters(prec["master"], sizes=[int(p.size) for p in self.params],
                              shapes=[tuple(p.shape) for p in self.params],
                              flat_range=self._master_range(), comm=self._comm())
        return {**state, "precision": {**prec, "master": masters, "names": self._master_names()}}

    def _master_names(self) -> list | None:
        """The parameter names of the masters as this strategy lays them out (None for
        ZeRO's flat slice): a float32 run resumed from them takes each by its name."""
        return list(self.names) if self._master_range() is None else None


class ZeRO(DataParallel):
    """ZeRO stage 1 (optimizer state sharded) or 2 (gradients too) over the dp group.

    The optimizer sees one flat parameter: this rank's slice ``flat_range(N, dp, rank)`` of
    all parameters concatenated. Its state is saved as flat shards, so a checkpoint loads on
    another number of ranks.
    """

    def __init__(self, stage: int = 1, comm: Comm | None = None, **kw):
        if stage not in (1, 2):
            raise ValueError(f"ZeRO stage must be 1 or 2, got {stage!r}")
        super().__init__(comm, **kw)
        self.stage = stage
        self.name = f"zero{stage}"
        self.shard = None

    def _make_optimizer(self, model, make_optimizer):
        from skiff.kernels.train.core.tensor import Tensor

        xp = self.params[0].xp
        self.sizes = [p._data.size for p in self.params]
        self.total = int(sum(self.sizes))
        self.lo, self.hi = flat_range(self.total, self.comm.size, self.comm.rank)
        flat = xp.concatenate([p._data.reshape(-1) for p in self.params])
        if self.owns_masters:  # mixed precision: the slice is the float32 master
            flat = flat.astype(np.float32)
        # in the parameters' dtype: Tensor(array) takes the default float32 (torch's legacy
        # constructor's rule), so a float64 model was stepped in float32 under ZeRO: its
        # weights 7e-8 off torch's and dp's after 6 steps (round 44 h11)
        self.shard = Tensor(flat[self.lo:self.hi].copy(), requires_grad=True,
                            dtype=flat.dtype)
        del flat
        if self.stage == 2:  # gradients reduce-scattered into the slices, bucket by bucket
            if self.reducer is not None:
                self.reducer.remove()
            ranges = [flat_range(self.total, self.comm.size, r) for r in range(self.comm.size)]
            self.reducer = ShardReducer(self.params, self.comm, ranges, self.shard,
                                        bucket_bytes=self.bucket_bytes)
        return self._guard_unreached(make_optimizer([self.shard]))

    def _guard_unreached(self, optimizer):
        """``optimizer.step`` made to leave the pieces of parameters no rank reached as
        they are (:mod:`.zero_unreached`), whoever calls it: :meth:`optimizer_step`, or
        mixed precision's step of the float32 masters (this flat slice)."""
        inner = optimizer.step

        def step(closure=None):
            if closure is not None:
                return inner(closure)
            if self._unreached is None:
                self._unreached = UnreachedSteps(len(self.params))
            index = {id(q): k for k, q in enumerate(self.params)}
            pieces = [(index[id(q)], a - self.lo, a - self.lo + j - i)
                      for q, a, i, j in self._pieces(self.lo, self.hi)]
            reached, self._reached = self._reached, None
            self._unreached.step(inner, optimizer, self.shard, pieces, reached)
            return None

        try:
            optimizer.step = step
        except AttributeError:  # an optimizer class with __slots__: stepped as it is
            pass
        return optimizer

    def reduce_gradients(self, model) -> None:
        if self.stage == 1:
            super().reduce_gradients(model)
            # a parameter no rank reached keeps grad None (the reducer's flags): not stepped
            self._reached = np.array([q._grad is not None for q in self.params])
            grad = self.shard.xp.zeros_like(self.shard._data)  # this rank's slice only
            for q, a, i, j in self._pieces(self.lo, self.hi):
                if q._grad is not None:
                    grad[a - self.lo:a - self.lo + j - i] = q._grad.reshape(-1)[i:j]
            self.shard._grad = grad
        else:  # the buckets not reduced from the hooks yet; shard.grad is then complete
            self._sync_buffers()
            self.reducer.finish()
            self._reached = self.reducer.reached
        for q in self.params:  # the full gradients are not needed any more
            q._grad = None

    def _master_range(self) -> tuple[int, int] | None:
        return (self.lo, self.hi)

    @property
    def owns_masters(self) -> bool:
        """In mixed precision the optimizer's flat slice is the float32 master of this
        rank's part of the 16-bit parameters: the masters are sharded as the moments are."""
        return self.precision != "32"

    def grad_norm(self, grads) -> float:
        from skiff.kernels.train.precision import local_grad_norm

        local = local_grad_norm(grads)  # this rank's slice
        return float(np.sqrt(self.comm.allreduce(np.array([local * local]), "sum")[0]))

    def clip_grad_norm(self, model, max_norm: float) -> float:
        g = self.shard._grad
        local = np.array([float((g.astype(np.float64) ** 2).sum())])
        total = float(np.sqrt(self.comm.allreduce(local, "sum")[0]))
        if total > max_norm:
            self.shard._grad = g * (max_norm / (total + 1e-6))
        return total

    def _pieces(self, lo: int, hi: int):
        """``(param, flat start, piece start, piece stop)`` for the parameters that overlap
        the flat range ``[lo, hi)`` (piece bounds within the parameter)."""
        off = 0
        for q, n in zip(self.params, self.sizes):
            a, b = max(lo, off), min(hi, off + n)
            if a < b:
                yield q, a, a - off, b - off
            off += n

    def optimizer_step(self, optimizer) -> None:
        # the parameters are the truth (a checkpoint may have loaded them since set-up)
        for q, a, i, j in self._pieces(self.lo, self.hi):
            self.shard._data[a - self.lo:a - self.lo + j - i] = q._data.reshape(-1)[i:j]
        optimizer.step()  # unreached parameters' pieces left as they are (_guard_unreached)
        self.gather_params()

    _reached = None  # per parameter: whether any rank had its gradient this step
    _unreached = None  # per parameter: the steps no rank reached it (its step count behind)

    def gather_params(self) -> None:
        """Every rank's updated slice into the parameters (cast to their dtype)."""
        # all-gather the updated slices a bucket's worth at a time, so no rank holds a full
        # flat copy of the parameters on top of them
        step = max(1, self.bucket_bytes // max(1, self.shard._data.itemsize))
        for c_lo in range(0, self.total, step):
            c_hi = min(self.total, c_lo + step)
            a, b = max(c_lo, self.lo), min(c_hi, self.hi)
            mine = self.shard._data[max(0, a - self.lo):max(0, b - self.lo)]
            chunk, _ = self.comm.allgatherv(self.shard.xp.ascontiguousarray(mine))
            for q, f, i, j in self._pieces(c_lo, c_hi):
                q._data.reshape(-1)[i:j] = chunk[f - c_lo:f - c_lo + j - i]

    def save_checkpoint(self, directory, state: dict, *, step: int, keep: int | None = 3):
        prec = state.get("precision")
        if self.owns_masters and isinstance(prec, dict) and prec.get("master") is not None:
            state = dict(state)  # the masters are this rank's flat slice: they reshard
            state["precision"] = {**prec, "master": [FlatShard(m, self.total)
                                                     for m in prec["master"]]}
        return super().save_checkpoint(directory, state, step=step, keep=keep)

    def flat_slice(self, arrays) -> np.ndarray:
        """This rank's slice of per-parameter host ``arrays`` (in parameter order) joined."""
        return np.concatenate([np.asarray(a).reshape(-1) for a in arrays])[self.lo:self.hi]

    def _flat_slices(self, opt: dict | None, masters: list | None):
        """Per-parameter optimizer state and masters (read from a split model's pieces) as
        this rank's slice of the flat vector; the optimizer state is None when some
        parameter has none (it then starts afresh)."""
        flat = self.flat_slice
        if masters is not None:
            masters = [flat(masters)]
        if opt is not None:
            per = [opt["state"].get(i) for i in range(len(self.params))]
            if any(st is None for st in per):
                return None, masters
            first = {k: (flat([st[k] for st in per]) if np.ndim(v) > 0 else v)
                     for k, v in per[0].items()}
            opt = {"state": {0: first}, "hyper": opt["hyper"]}
        return opt, masters

    def _groups_of(self, optimizer) -> list[list[int]] | None:
        """A grouped slice's groups (:mod:`.zero_groups`), as positions in :attr:`params`."""
        return getattr(optimizer, "_flat_groups", None)

    def _fit_optimizer_state(self, state: dict, groups=None) -> dict | None:
        """A saved optimizer state as this rank's flat slice (from per-parameter moments)."""
        return fit_optimizer_state(state, sizes=self.sizes,
                                   shapes=[tuple(p.shape) for p in self.params],
                                   flat_range=(self.lo, self.hi), comm=self._comm(),
                                   groups=groups)

    def optimizer_state_dict(self, optimizer) -> dict:
        """This rank's optimizer state, its flat arrays as shards of the whole vector; a
        grouped slice's names each group's parameters (``flat_groups``: positions in the
        flat vector's order), so that dp or one process resuming it gives each its moments
        in its group."""
        n = self.hi - self.lo
        groups = self._groups_of(optimizer)

        def wrap(obj):
            if isinstance(obj, np.ndarray) and obj.ndim == 1 and obj.size == n:
                return FlatShard(obj, self.total)
            if isinstance(obj, dict):
                return {k: wrap(v) for k, v in obj.items()}
            if isinstance(obj, list):
                return [wrap(v) for v in obj]
            return obj

        state = wrap(optimizer.state_dict())
        if groups is not None:
            state["flat_groups"] = [list(g) for g in groups]
        # every group's scalar state from the ranks that hold it (rank 0 saves the scalars;
        # its slice may hold one group only): round 47 h18
        scalars = every_groups_scalars(optimizer, self._comm())
        saved = state.get("state") if isinstance(state, dict) else None
        if scalars and isinstance(saved, dict) and saved:
            key = next(iter(saved))
            own = {k: v for k, v in (saved.get(key) or {}).items() if "@" not in str(k)}
            saved[key] = {**own, **scalars}
        return state

    def describe(self) -> dict:
        d = super().describe()
        if self.shard is not None:  # after set-up
            d.update(shard=[self.lo, self.hi], total=self.total)
        d.update(zero=self.stage)
        return d
