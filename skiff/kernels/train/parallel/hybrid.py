"""Strategies that split the model itself: tensor parallel (with data parallel around it).

:class:`TensorParallel` takes a layout ``dp x tp``: ranks of one tp group share a batch and
split every layer of a GPT (:func:`.tensor_parallel.parallelize_gpt`) or an ERNIE-4.5 model
(:func:`.ernie_tensor.parallelize_ernie`); the dp groups average
the gradients as :class:`.data_parallel.DataParallel` does, in overlapped buckets.
"""

from __future__ import annotations

import numpy as np

from .checkpoint import PerRank
from .comm import Comm
from .data_parallel import BucketReducer, DataParallel, merge_state, split_state
from .ernie_balance import balance_over_ranks
from .groups import Layout, ProcessGroups
from .relayout import one_process_is_newest, read_one_process, whole_by_name
from .sliced_state import (
    SlicedState,
    has_pieces,
    optimizer_order,
    tensor_parallel_slicing,
    tied_aliases,
)
from .tensor_parallel import (
    ColumnParallelLinear,
    ParallelAttention,
    RowParallelLinear,
    VocabParallelEmbedding,
    _cat,
    gather_full_state,
    parallelize_gpt,
    shard_from_full,
)
from .world import world

__all__ = ["TensorParallel"]


def frozen_per_rank(state: dict, layout: dict) -> None:
    """A frozen base's record in a checkpoint of a split model: each rank fingerprints its
    own slices of the base, so the prints are kept per rank, with the layout they fit."""
    record = state.get("frozen")
    if isinstance(record, dict):
        state["frozen"] = {"source": record.get("source"), "layout": layout,
                           "fingerprints": PerRank(record.get("fingerprints"))}


def frozen_read(found: dict, state: dict, layout: dict) -> None:
    """The record :func:`frozen_per_rank` wrote, for this rank: its prints when the layout
    is the writer's, else none (another layout's slices do not compare: the source folder
    is checked alone)."""
    record = state.get("frozen")
    if not isinstance(record, dict):
        return
    sharded = found.get("sharded")
    mine = sharded.get("frozen") if isinstance(sharded, dict) else None
    prints = mine.get("fingerprints") if isinstance(mine, dict) else None
    if record.get("layout") != layout:
        prints = None
    state["frozen"] = {"source": record.get("source"), "fingerprints": prints}


def _is_split(name: str, model) -> set:
    """Names of parameters that are slices (the rest are replicated across tp)."""
    out = set()
    for mname, mod in model.named_modules():
        prefix = f"{mname}." if mname else ""
        if isinstance(mod, (ColumnParallelLinear, VocabParallelEmbedding)):
            out.add(prefix + "weight")
            if getattr(mod, "bias", None) is not None:
                out.add(prefix + "bias")
        elif isinstance(mod, RowParallelLinear):
            out.add(prefix + "weight")
    return out


class TensorParallel(DataParallel):
    """``dp x tp`` hybrid for GPT models (heads, MLP width and vocabulary split over tp) and
    ERNIE-4.5 models (heads, SwiGLU widths, experts and LoRA adapters: :mod:`.ernie_tensor`)."""

    name = "tp"
    copies = None  # ERNIE: {parameter name: tp ranks holding it}, set in setup
    # a frozen base stays out of the checkpoints (only the trained parameters are pieces),
    # and each rank's prints of its slices of it go in (checked on resume)
    frozen_base_checkpoints = True

    def __init__(self, layout: Layout, world_comm: Comm | None = None, **kw):
        super().__init__(None, **kw)
        self.layout = layout
        self.world_comm = world_comm
        self.groups: ProcessGroups | None = None
        self.name = "tp" if layout.dp == 1 else "hybrid"

    def _groups(self) -> ProcessGroups:
        if self.groups is None:
            w = self.world_comm or world(device=self.device)
            self.groups = ProcessGroups(w, self.layout)
            self.comm = self.groups.dp
            self.rank, self.world_size = w.rank, w.size
        return self.groups

    def _comm(self) -> Comm:
        return self._groups().dp

    def _stop_comm(self) -> Comm:
        return self._groups().world

    def setup(self, model, make_optimizer):
        g = self._groups()
        if self.device is None:
            self.bind()
        from .ernie_tensor import is_ernie, parallelize_ernie

        # a second train() sets up the model this strategy split already: it stays as it is
        # (splitting it again cut slices out of slices: IndexError in from_linear)
        if getattr(self, "_split_model", None) is not model:
            self.copies = None  # ERNIE: how many tp ranks hold each parameter
            if is_ernie(model):
                self.copies = parallelize_ernie(model, g.tp)["copies"]
                # the tp ranks of a dp replica see one batch: the loss is over the dp group's
                balance_over_ranks(model, g.dp, self.loss_weight)
            elif not hasattr(model, "h") or not hasattr(model, "lm_head"):
                raise ValueError(f"tensor parallel splits GPT and ERNIE-4.5 models; got "
                                 f"{type(model).__name__}: use strategy='dp' or 'zero2'")
            else:
                parallelize_gpt(model, g.tp)
            self._split_model = model
        self.model = model
        self._broadcast_params(model)
        # frozen parameters (LoRA's base weights) are neither reduced nor optimised
        named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        self.names = [n for n, _ in named]
        self.params = [p for _, p in named]
        self.split = _is_split("", model)
        self.reducer = BucketReducer(self.params, g.dp, bucket_bytes=self.bucket_bytes,
                                     overlap=self.overlap)
        self.rank = g.world.rank
        optimizer = make_optimizer(list(self.params))
        self.opt_order = optimizer_order(optimizer, self.names, self.params)  # round 41 h9
        return model, optimizer

    def data_shard(self):
        g = self._groups()
        return g.coords["dp"], g.layout.dp

    def _weighted_square(self, names, grads) -> float:
        """This rank's sum of squared gradients, each parameter's divided by the number of
        tp ranks holding it (summed over the group: every parameter counted once)."""
        total = 0.0
        for n, gr in zip(names, grads):
            if gr is not None:
                total += float((gr.astype(np.float64) ** 2).sum()) / self.copies[n]
        return total

    def clip_grad_norm(self, model, max_norm: float) -> float:
        g = self._groups()
        if self.copies is not None:
            grads = [p._grad for p in self.params]
            total = float(np.sqrt(g.tp.allreduce(
                np.array([self._weighted_square(self.names, grads)]))[0]))
            if total > max_norm:
                for p in self.params:
                    if p._grad is not None:
                        p._grad *= max_norm / (total + 1e-6)
            return total
        rep = split = 0.0
        for n, p in zip(self.names, self.params):
            if p._grad is None:
                continue
            s = float((p._grad.astype(np.float64) ** 2).sum())
            if n in self.split:
                split += s
            else:
                rep += s
        split = float(g.tp.allreduce(np.array([split]))[0])
        total = float(np.sqrt(rep + split))
        if total > max_norm:
            scale = max_norm / (total + 1e-6)
            for p in self.params:
                if p._grad is not None:
                    p._grad *= scale
        return total

    def grad_norm(self, grads) -> float:
        """Split parameters' squares summed over the tp group, replicated ones counted once
        (their gradients are equal on every tp rank); non-finite on one rank: on all."""
        from skiff.kernels.train.precision import local_grad_norm

        if self.copies is not None:
            sq = self._weighted_square(self.names, grads)
            total = self._groups().tp.allreduce(np.array([sq if np.isfinite(sq) else np.inf]))
            return float(np.sqrt(total[0]))
        split = [g for n, g in zip(self.names, grads) if n in self.split]
        whole = [g for n, g in zip(self.names, grads) if n not in self.split]
        rep = local_grad_norm(whole) ** 2
        sums = self._groups().tp.allreduce(
            np.array([local_grad_norm(split) ** 2, 0.0 if np.isfinite(rep) else 1.0]))
        return float(np.sqrt(rep + sums[0])) if sums[1] == 0 else float("inf")

    def full_state_dict(self, model) -> dict:
        if getattr(self, "copies", None) is not None:
            from .ernie_tensor import gather_full

            return gather_full(model, self._groups().tp)
        return gather_full_state(model)

    def evaluation_model(self, model):
        if self.copies is None:  # a GPT split by tp: no single-device copy is built
            raise ValueError("held-out evaluation under tp needs an ERNIE-4.5 model (a whole "
                             "copy is gathered for it); use dp or zero for this model")
        return self._gathered_copy(model)

    def whole_outputs(self, model, out):
        """A GPT split by tp ends in a vocabulary-split head: each rank's outputs are its
        slice of the logits (``predict`` after a tp run gave rank 0 columns 0..V/2 alone,
        shape (5, 16, 128) for a vocabulary of 256); joined in rank order here."""
        head = getattr(model, "lm_head", None)
        if isinstance(head, ColumnParallelLinear) and head.comm.size > 1 and \
                out.ndim >= 1 and out.shape[-1] * head.comm.size == head.full_out:
            return np.asarray(_cat(head.comm, np.asarray(out), out.ndim - 1))
        return out

    def whole_model(self, model, weights: dict):
        if self.copies is None:
            return super().whole_model(model, weights)
        from .ernie_tensor import whole_model

        return whole_model(model, weights)

    # --- checkpoints: each rank writes and reads only its own pieces -----------------------
    def _sliced(self) -> SlicedState:
        """This rank's parameters as slices of the single-device model's, and which of them
        it writes: the first dp replica its slices, and the arrays every tp rank holds
        whole only from tp rank 0."""
        c = self._groups().coords
        return SlicedState(self.names, self.params, tensor_parallel_slicing(self.model),
                           writes_split=c["dp"] == 0, writes_whole=c["dp"] == 0 and c["tp"] == 0,
                           skip=getattr(self.model, "tp_not_written", ()),
                           aliases=tied_aliases(self.model),
                           order=getattr(self, "opt_order", None))

    def save_checkpoint(self, directory, state: dict, *, step: int, keep: int | None = 3):
        """Write this rank's pieces (weights, optimizer state, masters) with no gather; the
        replicated rest (step, RNG, data position, scaler) from rank 0."""
        from .checkpoint import save_sharded

        state = dict(state)
        frozen_per_rank(state, self._layout_record())
        model_state, opt = state.pop("model"), state.pop("optimizer", None)
        masters = None
        if isinstance(state.get("precision"), dict) and "master" in state["precision"]:
            state["precision"] = dict(state["precision"])
            masters = state["precision"].pop("master")
        sliced = self._sliced()
        pieces = sliced.pieces(model_state, opt, masters)
        state["optimizer_hyper"] = sliced.optimizer_hyper(opt)
        state.update(self._extra_state())
        rep, sh = split_state(state)
        return save_sharded(directory, self._groups().world, replicated=rep, sharded=sh,
                            step=step, keep=keep, layout=self._layout_record(), pieces=pieces)

    def _layout_record(self) -> dict:
        return {**self.layout.to_json(), "strategy": type(self).__name__}

    def _model_state_from_full(self, full: dict) -> dict:
        return shard_from_full(self.model, full)

    def _with_own_frozen(self, full: dict, state: dict) -> dict:
        """A whole-model checkpoint of a run whose base was frozen (dp, ZeRO, one device)
        lacks the base: ``(full state with stand-ins, this model's own slices of the base)``
        (its record is checked on resume), the rest is cut from the checkpoint (it failed:
        'the full state lacks model.embed_tokens.weight')."""
        own = self.model.state_dict()
        absent = [n for n in own if n not in full]
        if not absent or not isinstance(state.get("frozen"), dict):
            return full, {}
        slicing = tensor_parallel_slicing(self.model)
        stand_in = {n: np.broadcast_to(np.zeros((), np.asarray(own[n]).dtype),
                                       slicing[n][0]) if n in slicing else own[n]
                    for n in absent}
        return {**full, **stand_in}, {n: own[n] for n in absent}

    def load_checkpoint(self, directory) -> dict | None:
        """Read the pieces of this rank's parameters, from a checkpoint of any layout (other
        layouts: resharded, optimizer state included)."""
        from .checkpoint import load_sharded

        def corrupt(path, exc):
            if self.reporter is not None:
                self.reporter.log(f"skipping damaged checkpoint {path.name}: {exc}",
                                  level="warning")

        sliced = self._sliced()
        comm = self._groups().world
        if one_process_is_newest(directory, comm):  # the whole model: pieces cut from it
            found = self._one_process_checkpoint(directory, corrupt)
        else:
            found = load_sharded(directory, comm, select=sliced.select, on_corrupt=corrupt)
        if found is None:
            return None
        state = dict(found["replicated"])
        if has_pieces(found) and found["layout"] == self._layout_record() and \
                found.get("sharded"):  # per-rank state (early stopping's best slices)
            state = merge_state(state, found["sharded"])
        if has_pieces(found):
            model, opt, masters = sliced.restore(found["pieces"], self.model.state_dict(),
                                                 state.pop("optimizer_hyper", None))
            state.update(model=model, optimizer=opt)
            if masters is not None and isinstance(state.get("precision"), dict):
                state["precision"] = {**state["precision"], "master": masters}
            if found["layout"] != self._layout_record() and self.reporter is not None:
                self.reporter.log(f"checkpoint of layout {found['layout']} resharded onto this "
                                  "layout: weights, optimizer state, data position and RNG "
                                  "restored")
        else:  # an older checkpoint: per-rank state plus the gathered weights
            if found["layout"] == self._layout_record():
                state = merge_state(found["replicated"], found["sharded"])
            else:
                full = state.pop("full_model", None) or state.get("model")
                if full is None:
                    raise ValueError(f"the checkpoint of layout {found['layout']} holds no "
                                     "full model to reshard from")
                full, own = self._with_own_frozen(full, state)
                state["model"] = {**self._model_state_from_full(full), **own}
                state["optimizer"] = None
                # a split layout's older checkpoint keeps its moments per rank: not readable
                if "full_model" in (found["replicated"] or {}) \
                        or not self._cut_from_whole(found, state, full):
                    self._note_reshard(found["layout"])
            state.pop("full_model", None)
        frozen_read(found, state, self._layout_record())
        state.setdefault("step", found["step"])
        return state

    def _one_process_checkpoint(self, directory, corrupt) -> dict | None:
        """The newest ``step-N.npz`` one process wrote, read by every rank
        (:func:`.relayout.read_one_process`, dp's reader too), as
        :func:`.checkpoint.load_sharded` gives a dp checkpoint: the layout's reader cuts this
        rank's pieces from it (:meth:`_cut_from_whole`). It was refused ("resume with one
        process, dp or zero1/zero2"; round 42 h13)."""
        got = read_one_process(directory, self._groups().world, strategy=self.name,
                               corrupt=corrupt, reporter=self.reporter)
        if got is None:
            return None
        path, whole = got
        return {"step": whole.get("step"), "replicated": whole, "sharded": None,
                "pieces": None, "world_size": 1, "path": str(path),
                "layout": {"strategy": "single", "world_size": 1}}

    def _cut_from_whole(self, found: dict, state: dict, full: dict) -> bool:
        """This rank's pieces of the moments (and mixed precision's masters) of a checkpoint
        that dp, ZeRO or one rank wrote whole (ZeRO: flat slices, gathered over the world
        that read them), put in ``state``. False when it holds no moments for every
        parameter (they then start afresh, as the warning says)."""
        merged = merge_state(found["replicated"], found["sharded"])
        prec = merged.get("precision") if isinstance(merged, dict) else None
        masters = prec.get("master") if isinstance(prec, dict) else None
        # the writer's order of the parameters (a split model registers its layers in
        # another order): saved with the checkpoint, else its weights' order
        mine = {n for n, p in self.model.named_parameters() if p.requires_grad}
        order = merged.get("param_names") or [n for n in full if n in mine]
        if set(order) != mine or any(n not in full for n in order):
            return False
        # the moments by the optimizer's index: an instance's groups' own order (round 42
        # h5: taken in the model's order, they went onto other parameters of other shapes)
        named = merged.get("optimizer_names")
        at = list(named) if named and set(named) == set(order) else order
        moments, hyper, _ = whole_by_name(
            merged.get("optimizer"), None, names=at,
            shapes=[tuple(np.shape(full[n])) for n in at], comm=self._groups().world)
        _, _, whole = whole_by_name(
            None, masters, names=order,
            shapes=[tuple(np.shape(full[n])) for n in order], comm=self._groups().world)
        sliced = self._sliced()

        def cut(name, array):
            if name not in sliced.slicing or np.ndim(array) == 0:
                return array
            shape, axis, index = sliced.slicing[name]
            if tuple(np.shape(array)) != tuple(shape):
                return array
            return np.asarray(array)[(slice(None),) * axis + (index,)].copy()

        if whole is not None and isinstance(state.get("precision"), dict):
            state["precision"] = {**state["precision"],
                                  "master": [cut(n, whole[n]) for n in self.names]}
        if moments is None:
            return False
        state["optimizer"] = {
            "state": {i: {k: cut(n, v) for k, v in moments[n].items()}
                      for i, n in enumerate(sliced.order) if n is not None},
            "hyper": hyper}
        if self.reporter is not None:
            self.reporter.log(f"checkpoint of layout {found['layout']} resharded onto this "
                              "layout: weights, optimizer state, masters, data position and "
                              "RNG restored")
        return True

    def describe(self) -> dict:
        d = super().describe()
        d.update(layout=self.layout.to_json())
        return d


_ = ParallelAttention  # re-exported for readers of this module
