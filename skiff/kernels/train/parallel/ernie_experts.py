"""Expert parallelism for ERNIE-4.5 MoE models: the experts of every MoE layer spread over
the ep group, the reference's routing unchanged.

Each rank keeps experts ``[rank * E / ep, (rank + 1) * E / ep)`` of every MoE layer and
routes its own tokens exactly as :class:`~skiff.kernels.train.models.ernie.ErnieMoE` does
(float32 softmax router, top-k chosen by probability plus ``e_score_correction_bias``,
weights renormalised with ``moe_norm_min``). The (token, slot) rows go to their expert's
rank and the outputs come back by ``alltoallv`` (:class:`.alltoall.AllToAll`, whose backward sends
the gradients the reverse way); the shared experts, the router and everything outside the
experts stay whole on every rank. :class:`.moe.ExpertParallel` runs it: dense gradients
averaged over the group, expert gradients divided by it.
"""

from __future__ import annotations

import numpy as np

from skiff.kernels.backend import to_numpy
from skiff.kernels.train.core.nn.module import Module, ModuleList
from skiff.kernels.train.core.tensor import cat, is_grad_enabled
from skiff.kernels.train.models.ernie import ErnieMoE

from .alltoall import AllToAll
from .comm import Comm

__all__ = ["ErnieExpertParallelMoE", "shard_ernie_experts"]


class ErnieExpertParallelMoE(ErnieMoE):
    """An :class:`ErnieMoE` holding this rank's ``E / ep`` experts (``experts.j`` is the
    global expert ``first + j``); built by :meth:`from_moe`."""

    @classmethod
    def from_moe(cls, moe: ErnieMoE, comm: Comm) -> ErnieExpertParallelMoE:
        n = len(moe.experts)
        if n % comm.size:
            raise ValueError(f"ep={comm.size} must divide the {n} experts of this ERNIE model: "
                             "use an ep that divides them, or strategy='dp' or 'zero2'")
        new = cls.__new__(cls)
        Module.__init__(new)
        new.k, new.norm_min = moe.k, moe.norm_min
        new.gate, new.moe_statics = moe.gate, moe.moe_statics
        new.comm, new.num_experts = comm, n
        new.local = n // comm.size
        new.first = comm.rank * new.local
        new.experts = ModuleList([moe.experts[i]
                                  for i in range(new.first, new.first + new.local)])
        new.shared_experts = moe.shared_experts
        new.last_selection = new.last_router_logits = None
        return new

    def forward(self, x):
        shape = x.shape
        h = x.reshape(-1, shape[-1])  # (N, C)
        N, k, xp = h.shape[0], self.k, h.xp
        comm, p, local = self.comm, self.comm.size, self.local
        _, chosen, w = self.route(h)  # the reference's routing, on every rank's own tokens
        self.last_selection = chosen
        flat = to_numpy(chosen).reshape(-1)
        order = np.argsort(flat, kind="stable")  # (token, slot) rows grouped by expert
        per_expert = np.bincount(flat, minlength=self.num_experts)
        rows = h[xp.asarray(order // k)]  # (N*k, C); experts are contiguous by rank
        # how many rows of each of my experts every rank sends: (p, local)
        counts = comm.alltoallv(per_expert.reshape(p, local).astype(np.int64), [1] * p)[0]
        send = per_expert.reshape(p, local).sum(axis=1)
        got = AllToAll.apply(rows, comm=comm, send_counts=send.tolist())  # by source, expert
        offsets = np.concatenate([[0], np.cumsum(counts.reshape(-1))])
        outs, where = [], []
        for j, expert in enumerate(self.experts):
            idx = np.concatenate([np.arange(offsets[s * local + j], offsets[s * local + j + 1])
                                  for s in range(p)]).astype(np.int64)
            if idx.size:
                outs.append(expert(got[xp.asarray(idx)]))
                where.append(idx)
        if outs:
            y = cat(outs, axis=0)
            inverse = np.empty(got.shape[0], dtype=np.int64)
            inverse[np.concatenate(where)] = np.arange(got.shape[0])
            y = y[xp.asarray(inverse)]  # back in the order received
        else:
            y = got * 0.0
        idle = [q for j, e in enumerate(self.experts) if not counts[:, j].sum()
                for q in e.parameters() if q.requires_grad]
        if idle and is_grad_enabled():  # as ErnieMoE: an unchosen expert's adapter gets zeros
            y = y + sum(q.sum() for q in idle).astype(y.dtype) * 0.0
        back = AllToAll.apply(y, comm=comm, send_counts=counts.sum(axis=1).tolist())
        inverse = np.empty_like(order)
        inverse[order] = np.arange(order.shape[0])
        y = back[xp.asarray(inverse)].reshape(N, k, -1)  # (token, slot) order
        y = (y * w.astype(y.dtype).reshape(N, k, 1)).sum(axis=1)
        if self.shared_experts is not None:
            y = y + self.shared_experts(h)
        return y.reshape(*shape)


def shard_ernie_experts(model, comm: Comm) -> int:
    """Replace every MoE layer of an ERNIE model by its expert-parallel form over ``comm``
    (in place); returns the number of experts each rank keeps per layer."""
    if not model.config.is_moe:
        raise ValueError("expert parallel needs a mixture-of-experts model; this ERNIE model "
                         "is dense: use strategy='dp', 'zero2', 'tp' or 'pp'")
    local = 0
    for layer in model.model.layers:
        if isinstance(layer.mlp, ErnieMoE) and not isinstance(layer.mlp,
                                                             ErnieExpertParallelMoE):
            layer.mlp = ErnieExpertParallelMoE.from_moe(layer.mlp, comm)
            local = layer.mlp.local
    model.ep_comm = comm
    return local


# --- checkpoints: every rank writes its own experts under their single-device names --------
# (ERNIE's and, since round 29, a GPT MoE's under ep: its checkpoints held rank 0's local
# experts only, and a resume gave every rank rank 0's experts)
def global_name(name: str, first: int) -> str:
    """``...experts.<j>...`` of a rank whose first expert is ``first`` -> the global name."""
    head, sep, tail = name.partition(".experts.")
    if not sep:
        return name
    j, _, rest = tail.partition(".")
    return f"{head}.experts.{first + int(j)}.{rest}"


def _first(model) -> int:
    """The global index of this rank's first expert (ERNIE's expert-parallel layers, or a GPT
    MoE's layers sharded over an ep group)."""
    return next((m.first for m in model.modules() if isinstance(m, ErnieExpertParallelMoE)
                 or (hasattr(m, "first") and getattr(m, "ep_comm", None) is not None
                     and m.ep_comm.size > 1)), 0)  # .moe.MoE (not imported: a cycle)


def sliced_state(strategy):
    """A :class:`.sliced_state.SlicedState` of an expert-parallel ERNIE run: this rank's
    parameters under their single-device names; its experts written by it, the parameters
    every rank holds by rank 0."""
    from .sliced_state import SlicedState, tied_aliases

    first = _first(strategy.model)
    names = [global_name(n, first) for n in strategy.names]
    dense = [g for n, g in zip(strategy.names, names) if ".experts." not in n]
    order = getattr(strategy, "opt_order", None)  # an optimizer's groups' order (round 41 h9)
    return SlicedState(names, strategy.params, writes_whole=True,
                       skip=dense if strategy.comm.rank != 0 else (),
                       aliases=tied_aliases(strategy.model),
                       order=None if order is None else
                       [None if n is None else global_name(n, first) for n in order])


def save_checkpoint(strategy, directory, state: dict, *, step: int, keep):
    """Write this rank's pieces (its experts, and on rank 0 the rest) with no gather."""
    from .checkpoint import save_sharded
    from .data_parallel import split_state
    from .hybrid import frozen_per_rank

    state = dict(state)
    frozen_per_rank(state, _layout(strategy))
    first = _first(strategy.model)
    model_state = {global_name(n, first): v for n, v in state.pop("model").items()}
    opt = state.pop("optimizer", None)
    masters = None  # mixed precision's float32 masters: this rank's, in pieces (round 42)
    if isinstance(state.get("precision"), dict) and "master" in state["precision"]:
        state["precision"] = dict(state["precision"])
        masters = state["precision"].pop("master")
    sliced = sliced_state(strategy)
    pieces = sliced.pieces(model_state, opt, masters)
    state["optimizer_hyper"] = sliced.optimizer_hyper(opt)
    rep, sh = split_state(state)
    return save_sharded(directory, strategy.comm, replicated=rep, sharded=sh, step=step,
                        keep=keep, layout=_layout(strategy), pieces=pieces)


def _layout(strategy) -> dict:
    return {"ep": strategy.comm.size, "strategy": "ExpertParallel"}


def load_checkpoint(strategy, directory, on_corrupt=None) -> dict | None:
    """This rank's state from a checkpoint in pieces of any layout (its experts renamed
    back to this rank's local names)."""
    from .checkpoint import load_sharded
    from .sliced_state import has_pieces

    sliced = sliced_state(strategy)
    found = load_sharded(directory, strategy.comm, select=sliced.select, on_corrupt=on_corrupt)
    if found is None:
        return None
    if not has_pieces(found):
        raise ValueError(f"the checkpoint in {directory} was not written in pieces (layout "
                         f"{found['layout']}): expert parallel ERNIE runs resume from "
                         "checkpoints of tp, pp, ep or one-process runs")
    first = _first(strategy.model)
    local_state = strategy.model.state_dict()
    by_global = {global_name(n, first): v for n, v in local_state.items()}
    state = dict(found["replicated"])
    if found["layout"] == _layout(strategy) and found.get("sharded"):
        # per-rank state of the same layout (early stopping's best weights: this rank's
        # dense part and its own experts); another world reads none, said on resume
        from .data_parallel import merge_state

        state = merge_state(state, found["sharded"])
    model, opt, masters = sliced.restore(found["pieces"], by_global,
                                         state.pop("optimizer_hyper", None))
    state.update(model={n: model[global_name(n, first)] for n in local_state},
                 optimizer=opt)
    if masters is not None and isinstance(state.get("precision"), dict):
        state["precision"] = {**state["precision"], "master": masters}
    from .hybrid import frozen_read

    frozen_read(found, state, _layout(strategy))
    state.setdefault("step", found["step"])
    return state
