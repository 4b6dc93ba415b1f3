"""Mixture of experts: a top-k routed feed-forward layer, and expert parallelism.

:class:`MoE` sends each token to the ``top_k`` experts its router scores highest, weighting
each expert's output by the router probability. Each expert takes at most
``capacity = ceil(capacity_factor * tokens * top_k / n_experts)`` tokens (earlier tokens
first); the rest of its tokens are dropped for that expert (the residual connection around
the layer carries them). The Switch-Transformer load-balancing loss
``n_experts * sum_e f_e * P_e`` (``f_e`` the fraction of routed slots that went to expert
``e``, ``P_e`` its mean router probability) is kept in ``layer.aux_loss`` for the model to add.

With an expert-parallel group of ``ep`` ranks each rank holds ``n_experts / ep`` experts;
tokens travel to their experts' ranks and back with ``alltoallv`` (autograd-aware: the
backward pass sends the gradients the reverse way). Gradients of experts are summed over the
ranks that routed tokens to them; :class:`ExpertParallel` averages the dense parameters over
the data-parallel group and divides expert gradients by it, which gives the data-parallel
mean. It runs ERNIE-4.5 MoE models too, their layers and routing their own
(:mod:`.ernie_experts`, which also writes their checkpoints in pieces).

:func:`gpt_moe` builds the ``gpt-moe`` preset's runnable tiny variant: a GPT whose blocks'
MLPs are MoE layers (the full "21B-A3B" shape is a planner preset, far beyond a CPU).
"""

from __future__ import annotations

import math
import types

import numpy as np

from skiff.kernels.backend import to_numpy
from skiff.kernels.train.core.autograd import Function, xp_of
from skiff.kernels.train.core.nn import functional as F
from skiff.kernels.train.core.nn.layers import Linear
from skiff.kernels.train.core.nn.module import Module, ModuleList
from skiff.kernels.train.core.ops_shape import scatter_add

from .alltoall import AllToAll
from .comm import Comm, SelfComm
from .data_parallel import DataParallel
from .ep_resume import cut_expert_masters, cut_expert_moments
from .moe_batch import route_over, share_batch
from .relayout import newest_steps

__all__ = ["MoE", "Expert", "route", "gpt_moe", "gpt_moe_preset", "ExpertParallel",
           "AllToAll"]


class _Combine(Function):
    """``out[tok[i]] += gate[i] * y[i]`` for N output rows."""

    def forward(self, y, gate, tok=None, n=0):
        self.save_for_backward(y, gate, tok)
        xp = xp_of(y)
        out = xp.zeros((n, y.shape[1]), dtype=y.dtype)
        scatter_add(out, xp.asarray(tok), y * gate[:, None])
        return out

    def backward(self, g):
        y, gate, tok = self.saved
        gy = g[tok]
        return gy * gate[:, None], (gy * y).sum(axis=1)


class Expert(Module):
    """One expert: Linear(d, h) -> GELU(tanh) -> Linear(h, d)."""

    def __init__(self, d_model: int, hidden: int):
        super().__init__()
        self.fc = Linear(d_model, hidden)
        self.proj = Linear(hidden, d_model)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x), approximate="tanh"))


def route(probs: np.ndarray, top_k: int, capacity: int):
    """(token, expert, slot) assignments kept under ``capacity``, in token order.

    Returns arrays ``tok``, ``exp``, ``k`` (which of the top-k choices) of the kept slots,
    and the per-expert counts of all routed slots (before dropping)."""
    n, e = probs.shape
    top = np.argsort(-probs, axis=1, kind="stable")[:, :top_k]  # (N, k)
    tok = np.repeat(np.arange(n), top_k)
    exp = top.reshape(-1)
    kk = np.tile(np.arange(top_k), n)
    routed = np.bincount(exp, minlength=e)
    # position of each slot within its expert's queue, tokens in order
    order = np.argsort(exp, kind="stable")
    pos = np.empty_like(order)
    starts = np.concatenate([[0], np.cumsum(routed)[:-1]])
    pos[order] = np.arange(order.size) - np.repeat(starts, routed)
    keep = pos < capacity
    return tok[keep], exp[keep], kk[keep], routed


class MoE(Module):
    """Top-k routed mixture-of-experts feed-forward layer on ``(N, d)`` or ``(B, T, d)``.

    Parameters
    ----------
    d_model, hidden : int
        Width of the tokens and of each expert's hidden layer.
    n_experts, top_k : int
        Experts in all, and experts each token uses.
    capacity_factor : float
        Slack of each expert's capacity over a perfectly even load (1.25 is customary).
    ep_comm : Comm
        The expert-parallel group; this rank builds and holds its ``n_experts / ep`` experts.
    """

    def __init__(self, d_model: int, hidden: int, n_experts: int, top_k: int = 2, *,
                 capacity_factor: float = 1.25, ep_comm: Comm | None = None):
        super().__init__()
        if not 1 <= top_k <= n_experts:
            raise ValueError(f"top_k must be in 1..{n_experts}, got {top_k!r}")
        if not capacity_factor > 0:
            raise ValueError(f"capacity_factor must be positive, got {capacity_factor!r}")
        comm = ep_comm or SelfComm()
        if n_experts % comm.size:
            raise ValueError(f"ep={comm.size} must divide the {n_experts} experts")
        self.ep_comm = comm
        self.d_model, self.n_experts, self.top_k = d_model, n_experts, top_k
        self.capacity_factor = capacity_factor
        self.local = n_experts // comm.size
        self.first = comm.rank * self.local
        self.router = Linear(d_model, n_experts, bias=False)
        # every rank draws every expert (same seed: same weights) and keeps its own
        experts = [Expert(d_model, hidden) for _ in range(n_experts)]
        self.experts = ModuleList(experts[self.first:self.first + self.local])
        self.aux_loss = None
        self.last_dropped = 0

    def shard_experts(self, comm: Comm) -> None:
        """Keep only this rank's ``n_experts / ep`` experts of a layer that holds them all
        (a model built without an expert group, then run expert-parallel)."""
        if self.ep_comm.size != 1:
            raise ValueError("the experts of this layer are already split")
        if self.n_experts % comm.size:
            raise ValueError(f"ep={comm.size} must divide the {self.n_experts} experts")
        local = self.n_experts // comm.size
        first = comm.rank * local
        kept = [self.experts[i] for i in range(first, first + local)]
        self.experts = ModuleList(kept)
        self.ep_comm, self.local, self.first = comm, local, first

    batch_group = None  # _BatchGroup: the data-parallel ranks that share the batch

    def forward(self, x):
        shape = x.shape
        x2 = x.reshape(-1, shape[-1])  # (N, d)
        n, e, k = x2.shape[0], self.n_experts, self.top_k
        probs = F.softmax(self.router(x2), axis=-1)  # (N, E)
        group = self.batch_group
        if group is not None and group.comm.size > 1 and group.active():  # whole batch
            rows = shape[0] if len(shape) == 3 else n
            tok, exp, kk, routed, total, ghost = route_over(
                to_numpy(probs._data), k, self.capacity_factor, group, rows)
            w = group.weight()
            # this rank's tokens' share of the batch's mean probability, so that the ranks'
            # mean (data parallel averages losses) is the batch's loss; divided by the
            # weight the strategy scales this rank's loss by (uneven rows)
            scale = float(e) * group.comm.size / float(total) / w if w and not ghost else 0.0
            frac = routed / float(total * k)
            self.aux_loss = (probs.sum(axis=0) * frac.astype(np.float32)).sum() * scale
        else:
            capacity = max(1, math.ceil(self.capacity_factor * n * k / e))
            # routing is (N, k) integer book-keeping: on the host, indices stay host arrays
            tok, exp, kk, routed = route(to_numpy(probs._data), k, capacity)
            # load balancing: fraction routed (constant) times mean probability
            frac = routed / float(n * k)
            self.aux_loss = (probs.mean(axis=0) * frac.astype(np.float32)).sum() * float(e)
        self.last_dropped = int(n * k - tok.size)
        # group the kept slots by expert (= by destination rank, experts are contiguous)
        order = np.argsort(exp, kind="stable")
        tok, exp, kk = tok[order], exp[order], kk[order]
        gate = probs[tok, exp]  # (S,)
        rows = x2[tok]  # (S, d)
        comm = self.ep_comm
        per_expert = np.bincount(exp, minlength=e)
        if comm.size > 1:
            send = per_expert.reshape(comm.size, self.local).sum(axis=1)
            # tell each rank how many rows of each of its experts come
            counts = comm.alltoallv(per_expert.reshape(comm.size, self.local).astype(np.int64),
                                    [1] * comm.size)[0]  # (ep, local): from each rank
            rows = AllToAll.apply(rows, comm=comm, send_counts=send.tolist())
        else:
            counts = per_expert.reshape(1, e)
        # received rows are ordered by source rank, then expert: run each local expert
        offsets = np.concatenate([[0], np.cumsum(counts.reshape(-1))])
        pieces = [None] * self.local
        for j, expert in enumerate(self.experts):
            idx = np.concatenate([np.arange(offsets[src * self.local + j],
                                            offsets[src * self.local + j + 1])
                                  for src in range(counts.shape[0])]).astype(np.int64)
            if idx.size:
                pieces[j] = (idx, expert(rows[idx]))
        y_parts, y_idx = [], []
        for item in pieces:
            if item is not None:
                y_idx.append(item[0])
                y_parts.append(item[1])
        from skiff.kernels.train.core.tensor import cat

        if y_parts:
            y = cat(y_parts, 0)
            inv = np.empty(rows.shape[0], dtype=np.int64)
            inv[np.concatenate(y_idx)] = np.arange(rows.shape[0])
            y = y[inv]  # back in received order
        else:
            y = rows * 0.0
        if comm.size > 1:
            y = AllToAll.apply(y, comm=comm, send_counts=counts.sum(axis=1).tolist())
        out = _Combine.apply(y, gate, tok=tok, n=n)
        return out.reshape(*shape)


# --- the gpt-moe preset, tiny and runnable -------------------------------------------------------
class _MoEMLP(Module):
    def __init__(self, moe: MoE):
        super().__init__()
        self.moe = moe

    def forward(self, x):
        return self.moe(x)


def _moe_loss(self, batch):
    """The GPT's loss plus ``aux_coef`` times the load-balancing losses of its MoE layers."""
    value = type(self).loss(self, batch)
    for m in self.moe_layers:
        value = value + m.aux_loss * self.aux_coef
    return value


def gpt_moe(*, n_layer=2, n_embd=32, n_head=4, vocab_size=64, block_size=16, n_experts=4,
            top_k=2, expert_hidden=32, capacity_factor=1.25, aux_coef=0.01,
            ep_comm: Comm | None = None):
    """A GPT whose feed-forward layers are MoE layers (the ``gpt-moe-tiny`` shape by default).

    ``model.loss(batch)`` adds ``aux_coef`` times the load-balancing losses of all layers.
    """
    from skiff.kernels.train.models.gpt import GPT, GPTConfig

    cfg = GPTConfig(block_size=block_size, vocab_size=vocab_size, n_layer=n_layer,
                    n_head=n_head, n_embd=n_embd)
    model = GPT(cfg)
    moes = []
    for block in model.h:
        moe = MoE(n_embd, expert_hidden, n_experts, top_k, capacity_factor=capacity_factor,
                  ep_comm=ep_comm)
        block.mlp = _MoEMLP(moe)
        moes.append(moe)
    # a method bound to the model, not a closure over it: a copy of the model (the plan
    # check's micro-run deep-copies it) then adds its own layers' losses, where a closure
    # ran the original model and left gradients in it before the first step
    model.aux_coef = aux_coef
    model.loss = types.MethodType(_moe_loss, model)
    model.moe_layers = moes
    model.parallel_dims = ("ep",)
    model.config.n_experts = n_experts
    model.config.top_k = top_k
    model.config.expert_hidden = expert_hidden
    return model


def gpt_moe_preset():
    """``gpt-moe`` as a built-in model: the "many experts, few active" shape at a size a CPU
    trains (byte-level vocabulary, 8 experts of which 2 are active, 4 layers of width 64).
    All experts live on every rank until :class:`ExpertParallel` shares them out."""
    return gpt_moe(n_layer=4, n_embd=64, n_head=4, vocab_size=256, block_size=64,
                   n_experts=8, top_k=2, expert_hidden=64)


class ExpertParallel(DataParallel):
    """Data parallel over the ep group with experts split across it: dense gradients are
    averaged (buckets), expert gradients divided by the group size (their all-to-all
    backward already summed every rank's contribution)."""

    name = "ep"

    def setup(self, model, make_optimizer):
        comm = self._comm()
        if self.device is None:
            self.bind()
        from .ernie_tensor import is_ernie

        moes = [m for m in model.modules() if isinstance(m, MoE)]
        self.ernie = is_ernie(model)
        if self.ernie:  # ERNIE-4.5 MoE: its own layers, its own routing (.ernie_experts)
            from .ernie_experts import shard_ernie_experts

            shard_ernie_experts(model, comm)
        elif not moes:
            raise ValueError(f"expert parallel needs a model with MoE layers; got "
                             f"{type(model).__name__}: use strategy='dp' or 'zero2'")
        for m in moes:  # a model built with every expert: share them out now
            if m.ep_comm.size == 1 and comm.size > 1:
                m.shard_experts(comm)
        # frozen parameters (LoRA's base weights) are neither reduced nor optimised
        named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        if self.ernie:
            from .ernie_balance import balance_over

            balance_over(model, comm, self.loss_weight)
        self.model = model
        self.names = [n for n, _ in named]
        self.params = [p for _, p in named]
        self.expert = [p for n, p in named if ".experts." in n]
        dense = [p for n, p in named if ".experts." not in n]
        share_batch(model, comm, self)  # capacity and balancing over the whole batch
        if comm.size > 1:
            for p in dense:
                p._data[...] = comm.broadcast(p._data, root=0)
        from .data_parallel import BucketReducer

        self.reducer = BucketReducer(dense, comm, bucket_bytes=self.bucket_bytes,
                                     overlap=self.overlap)
        from .sliced_state import optimizer_order

        optimizer = make_optimizer(list(self.params))
        self.opt_order = optimizer_order(optimizer, self.names, self.params)  # round 41 h9
        return model, optimizer

    def reduce_gradients(self, model) -> None:
        self.reducer.finish()
        p = self.comm.size
        if p > 1:
            for q in self.expert:
                if q._grad is not None:
                    q._grad = q._grad / p

    def clip_grad_norm(self, model, max_norm: float) -> float:
        dense = sum(float((q._grad.astype(np.float64) ** 2).sum()) for q in self.params
                    if q._grad is not None and not any(q is e for e in self.expert))
        exp = sum(float((q._grad.astype(np.float64) ** 2).sum()) for q in self.expert
                  if q._grad is not None)
        exp = float(self.comm.allreduce(np.array([exp]))[0])
        total = math.sqrt(dense + exp)
        if total > max_norm:
            for q in self.params:
                if q._grad is not None:
                    q._grad = q._grad * (max_norm / (total + 1e-6))
        return total

    def grad_norm(self, grads) -> float:
        """Mixed precision's norm of the masters' gradients ``grads`` (in the order of
        ``self.params``): the dense ones counted once (equal on every rank after the
        all-reduce), the experts' squares summed over the group; non-finite on one rank:
        on all (round 42: ep ran float32 only, the base norm was this rank's alone)."""
        from skiff.kernels.train.precision import local_grad_norm

        is_expert = {id(q) for q in self.expert}
        dense = [g for q, g in zip(self.params, grads) if id(q) not in is_expert]
        mine = [g for q, g in zip(self.params, grads) if id(q) in is_expert]
        rep = local_grad_norm(dense) ** 2
        sums = self.comm.allreduce(
            np.array([local_grad_norm(mine) ** 2, 0.0 if np.isfinite(rep) else 1.0]))
        return float(np.sqrt(rep + sums[0])) if sums[1] == 0 else float("inf")

    ernie = False  # an ERNIE-4.5 model (set in setup)

    @property
    def frozen_base_checkpoints(self) -> bool:
        """ERNIE: checkpoints in pieces of what trains, with each rank's prints of its part
        of a frozen base (:mod:`.ernie_experts`); a GPT MoE keeps its whole model."""
        return bool(self.ernie)

    def full_state_dict(self, model) -> dict:
        comm = self._comm()
        whole = model.state_dict()  # the experts' frozen weights too (LoRA)
        mine = {n: v for n, v in whole.items() if ".experts." in n}
        state = {k: v for k, v in whole.items() if ".experts." not in k}
        local = next((m.local for m in model.modules() if isinstance(m, MoE)
                      or (self.ernie and hasattr(m, "first"))), 1)
        for rank, part in enumerate(comm.allgather_object(mine)):
            for name, value in part.items():
                # experts.<j> on rank r is the global expert r * local + j
                head, _, tail = name.partition(".experts.")
                j, _, rest = tail.partition(".")
                state[f"{head}.experts.{rank * local + int(j)}.{rest}"] = value
        return state

    def save_checkpoint(self, directory, state: dict, *, step: int, keep: int | None = 3):
        """Each rank writes its own experts under their single-device names, rank 0 the
        rest (:mod:`.ernie_experts`), for ERNIE and GPT MoE alike. A GPT MoE went through
        data parallel's writer, whose model state rank 0 writes alone: its checkpoints held
        rank 0's local experts only, and an ep resume gave rank 1 rank 0's experts (losses
        1e-3 off the uninterrupted run after 2 more steps)."""
        from . import ernie_experts

        return ernie_experts.save_checkpoint(self, directory, state, step=step, keep=keep)

    def load_checkpoint(self, directory) -> dict | None:
        from . import ernie_experts

        def corrupt(path, exc):
            if self.reporter is not None:
                self.reporter.log(f"skipping damaged checkpoint {path.name}: {exc}",
                                  level="warning")

        if self.ernie:
            return ernie_experts.load_checkpoint(self, directory, on_corrupt=corrupt)
        # a GPT MoE: an ep run's pieces (the newest sharded checkpoint) by their global
        # names; else a whole model (one process, dp, ZeRO), this rank's experts cut from it
        comm = self._comm()
        steps = comm.bcast_object(newest_steps(directory) if comm.rank == 0 else None, root=0)
        if steps[1] is not None and (steps[0] is None or steps[1] >= steps[0]):
            try:
                return ernie_experts.load_checkpoint(self, directory, on_corrupt=corrupt)
            except ValueError:  # not written in pieces: a dp or ZeRO run's
                pass
        state = super().load_checkpoint(directory)
        if state is not None and isinstance(state.get("model"), dict):
            first = ernie_experts._first(self.model)
            whole = state["model"]
            local = self.model.state_dict()
            if all(ernie_experts.global_name(n, first) in whole for n in local) and \
                    len(whole) != len(local):  # a whole model: this rank's experts of it
                state["model"] = {n: whole[ernie_experts.global_name(n, first)]
                                  for n in local}
                # its optimizer state is per parameter of the whole model (or ZeRO's flat
                # slices): this rank's experts' moments are cut from it by name
                # by this rank's optimizer's order (an instance's groups: its own order)
                at = self.opt_order if self.opt_order and all(self.opt_order) else self.names
                state["optimizer"] = cut_expert_moments(state, whole, list(at), first,
                                                        self._comm())
                prec = state.get("precision")
                if isinstance(prec, dict) and prec.get("master") is not None:
                    masters = cut_expert_masters(state, whole, self.names, first,
                                                 self._comm())
                    state["precision"] = {**prec, "master": masters,
                                          "names": list(self.names)}
                if state["optimizer"] is None:
                    self._note_reshard({"from": "a whole model", "to": "ep"})
                elif self.reporter is not None:
                    self.reporter.log("checkpoint of a whole model resharded onto ep: "
                                      "weights, optimizer state, data position and RNG "
                                      "restored")
        return state

    def _fit_masters(self, state):
        """A whole model's masters (one process, dp, ZeRO) are this rank's only once cut by
        name (:meth:`load_checkpoint`); fitted to this rank's parameters by size they were
        refused ("55 saved arrays for 39 parameters", round 42 h5)."""
        model = state.get("model") if isinstance(state, dict) else None
        if isinstance(model, dict) and len(model) != len(self.model.state_dict()):
            return state
        return super()._fit_masters(state)

    def evaluation_model(self, model):
        if not self.ernie:  # a gpt_moe split by ep: no single-device copy is built
            raise ValueError("held-out evaluation under ep needs an ERNIE-4.5 MoE model (a "
                             "whole copy is gathered for it); use dp or zero for this model")
        return self._gathered_copy(model)

    def whole_model(self, model, weights: dict):
        if not self.ernie:
            return super().whole_model(model, weights)
        from .ernie_tensor import whole_model

        return whole_model(model, weights)
