"""Pipeline parallelism: a GPT or an ERNIE-4.5 model cut into stages, micro-batches on a
1F1B schedule.

The model is a chain of units: the embeddings, each transformer block, and the head (final
norm, output layer, loss). :func:`partition` cuts the chain into ``pp`` contiguous stages of
about equal *measured* cost (rank 0 times one forward of every unit on a sample micro-batch
and broadcasts the cut). Each rank keeps only its stage's parameters in its optimizer.

One optimizer step runs ``m`` micro-batches through the one-forward-one-backward schedule
(Narayanan et al. 2021): stage ``s`` first runs ``min(pp - s - 1, m)`` forwards (warm-up),
then alternates one forward and one backward, then drains the remaining backwards. At most
``pp - s`` micro-batches' activations are alive on stage ``s`` (GPipe would keep ``m``).
Activations go forward and their gradients backward over ``isend``/``recv`` between
neighbouring stages; sends are non-blocking, so two neighbours sending to each other never
deadlock.
"""

from __future__ import annotations

import time

import numpy as np

from skiff.kernels.backend import to_numpy
from skiff.kernels.train.core.nn import functional as F
from skiff.kernels.train.core.tensor import Tensor, no_grad
from skiff.kernels.train.data import PackedBatch
from skiff.kernels.train.precision import float32_outputs

from .comm import Comm
from .data_parallel import BucketReducer, DataParallel
from .groups import Layout, ProcessGroups
from .hybrid import TensorParallel
from .sliced_state import SlicedState, optimizer_order, tied_aliases

__all__ = ["gpt_units", "ernie_units", "model_units", "partition", "schedule_1f1b",
           "PipelineParallel"]


_ACT_DTYPES = ("float32", "float16", "bfloat16", "float64")
_DTYPE_TAG = 20_000  # the message that says in which dtype a stage's activations come


def _act_dtype(code: int):
    from skiff.kernels.train.core.tensor import _as_dtype

    return _as_dtype(_ACT_DTYPES[code])


def gpt_units(model) -> list:
    """The GPT as a chain of (name prefix(es), callable) units for pipelining. The head's
    16-bit logits are cast to float32 for the cross-entropy, as ``torch.autocast`` and the
    one-device Trainer take it (in float16 the loss scale overflowed where one device's did
    not: a GPT skipped 6 steps on 2 stages, 3 on one device)."""

    def embed(idx):
        idx = to_numpy(idx._data if isinstance(idx, Tensor) else idx)  # ids: host indices
        pos = np.arange(idx.shape[1], dtype=np.int64)
        return model.drop(model.wte(Tensor(idx)) + model.wpe(Tensor(pos)))

    def head(x, y):
        logits = float32_outputs(model.lm_head(model.ln_f(x)))  # the loss in float32
        b, t, v = logits.shape
        yy = to_numpy(y._data if isinstance(y, Tensor) else y).reshape(b * t)
        return F.cross_entropy(logits.reshape(b * t, v), yy)

    units = [(("wte.", "wpe."), embed)]
    for i, block in enumerate(model.h):
        units.append(((f"h.{i}.",), block))
    units.append((("ln_f.", "lm_head."), head))
    return units


def ernie_units(model, context: dict | None = None) -> list:
    """An ERNIE-4.5 model (dense or MoE, LoRA or not) as a chain of units for pipelining:
    the token embedding, each decoder layer, and the head (final norm, output layer,
    cross-entropy). ``context`` holds the micro-batch being run: for packed sequences its
    ``cu_seqlens`` and ``positions`` (the layers then attend within each sequence, with the
    rotary angles of each token's position); empty for (B, T) blocks (positions 0..T-1)."""
    context = {} if context is None else context
    if model.config.is_moe and model.config.output_router_logits:
        raise ValueError("pipeline parallel does not add the MoE load-balancing loss "
                         "(output_router_logits): use strategy='ep', 'dp' or 'zero2'")

    def embed(idx):
        idx = to_numpy(idx._data if isinstance(idx, Tensor) else idx)  # ids: host indices
        return model.model.embed_tokens(Tensor(idx))

    def layer_unit(layer):
        def run(h):
            if context.get("cu_seqlens") is not None:  # packed: (N, C)
                cos, sin = model.rotary(context["positions"])
                return layer.forward_packed(h, cos, sin, context["cu_seqlens"])
            cos, sin = model.rotary(np.arange(h.shape[1]))
            return layer(h, cos, sin)
        return run

    def head(x, y):
        logits = float32_outputs(model.lm_head(model.model.norm(x)))  # the loss in float32
        v = logits.shape[-1]
        yy = to_numpy(y._data if isinstance(y, Tensor) else y).reshape(-1)
        return F.cross_entropy(logits.reshape(-1, v), yy)

    units = [(("model.embed_tokens.",), embed)]
    for i, layer in enumerate(model.model.layers):
        units.append(((f"model.layers.{i}.",), layer_unit(layer)))
    units.append((("model.norm.", "lm_head."), head))
    return units


def model_units(model, context: dict | None = None) -> list:
    """The chain of units of a GPT or an ERNIE-4.5 model (``context``: see
    :func:`ernie_units`); anything else is one clear error."""
    from .ernie_tensor import is_ernie

    if is_ernie(model):
        return ernie_units(model, context)
    if hasattr(model, "h") and hasattr(model, "wte"):
        return gpt_units(model)
    raise ValueError(f"pipeline parallel cuts GPT and ERNIE-4.5 models into stages; got "
                     f"{type(model).__name__}: use strategy='dp' or 'zero2'")


def packed_micro_batches(batch, m: int):
    """Cut a :class:`~skiff.kernels.train.data.PackedBatch` into at most ``m`` micro-batches
    of whole sequences (as many sequences each), every one with tokens to learn: returns
    ``[(tokens, targets, cu_seqlens, positions)]`` and each one's share of the learned
    tokens (its weight in the batch's mean loss)."""
    cu = np.asarray(batch.cu_seqlens, dtype=np.int64)
    tok = to_numpy(batch.tokens._data if isinstance(batch.tokens, Tensor) else batch.tokens)
    tgt = to_numpy(batch.targets._data if isinstance(batch.targets, Tensor) else batch.targets)
    pos = np.asarray(batch.positions)
    seqs = len(cu) - 1
    learned = [int((tgt[cu[j]:cu[j + 1]] != -100).sum()) for j in range(seqs)]
    for d in range(max(1, min(m, seqs)), 0, -1):
        q = seqs // d
        counts = [sum(learned[i * q:(i + 1) * q]) for i in range(d)]
        if seqs % d == 0 and (all(counts) or d == 1):
            break
    micro = []
    for i in range(d):
        a, b = cu[i * q], cu[(i + 1) * q]
        micro.append((tok[a:b], tgt[a:b], cu[i * q:(i + 1) * q + 1] - a, pos[a:b]))
    total = sum(counts)
    return micro, [c / total if total else 1.0 / d for c in counts]


def partition(costs: list[float], parts: int) -> list[tuple[int, int]]:
    """Contiguous ``[start, stop)`` ranges of ``costs`` into ``parts`` non-empty groups that
    minimize the largest group's total (exact, by dynamic programming)."""
    n = len(costs)
    if not 1 <= parts <= n:
        raise ValueError(f"cannot cut {n} units into {parts} pipeline stages")
    prefix = np.concatenate([[0.0], np.cumsum(costs)])
    inf = float("inf")
    best = [[inf] * (n + 1) for _ in range(parts + 1)]
    cut = [[0] * (n + 1) for _ in range(parts + 1)]
    best[0][0] = 0.0
    for k in range(1, parts + 1):
        for j in range(k, n + 1):
            for i in range(k - 1, j):
                v = max(best[k - 1][i], prefix[j] - prefix[i])
                if v < best[k][j]:
                    best[k][j], cut[k][j] = v, i
    ranges, j = [], n
    for k in range(parts, 0, -1):
        i = cut[k][j]
        ranges.append((i, j))
        j = i
    return ranges[::-1]


def schedule_1f1b(stage: int, stages: int, micro: int) -> list[tuple[str, int]]:
    """The order of ("F", i) and ("B", i) steps on ``stage`` for ``micro`` micro-batches."""
    warm = min(stages - stage - 1, micro)
    order = [("F", i) for i in range(warm)]
    f, b = warm, 0
    while f < micro:
        order.append(("F", f))
        f += 1
        order.append(("B", b))
        b += 1
    order += [("B", i) for i in range(b, micro)]
    return order


class PipelineParallel(DataParallel):
    """``dp x pp`` for GPT models: stages of blocks on a 1F1B schedule, gradients of each
    stage averaged over its dp group.

    Parameters
    ----------
    layout : Layout
        ``dp`` and ``pp`` (``tp`` must be 1 here).
    micro_batches : int
        Micro-batches per optimizer step (the batch each call gets is cut into this many).
    """

    name = "pp"

    def __init__(self, layout: Layout, world_comm: Comm | None = None, *,
                 micro_batches: int = 4, **kw):
        super().__init__(None, **kw)
        if layout.tp != 1:
            raise ValueError(f"PipelineParallel runs dp x pp layouts, got tp={layout.tp}")
        self.layout = layout
        self.world_comm = world_comm
        self.micro = int(micro_batches)
        self.groups: ProcessGroups | None = None
        self.peak_in_flight = 0

    # the process groups of the layout, as the tensor-parallel strategy builds them
    _groups = TensorParallel._groups
    _comm = TensorParallel._comm
    _stop_comm = TensorParallel._stop_comm

    # stages hold different parameters: checkpoints go per rank over the whole world
    save_checkpoint = TensorParallel.save_checkpoint
    frozen_base_checkpoints = True  # as tp: the trained parameters' pieces only
    load_checkpoint = TensorParallel.load_checkpoint
    _cut_from_whole = TensorParallel._cut_from_whole
    _one_process_checkpoint = TensorParallel._one_process_checkpoint
    _with_own_frozen = TensorParallel._with_own_frozen
    _layout_record = TensorParallel._layout_record

    def _sliced(self) -> SlicedState:
        """This stage's parameters, held whole; the first dp replica of the stage writes."""
        # a tied weight two stages hold (and update alike): written by the first of them
        later = [n for n, p in zip(self.names, self.params) if id(p) in self.norm_skip]
        return SlicedState(self.names, self.params, writes_split=False,
                           writes_whole=self._groups().coords["dp"] == 0, skip=later,
                           aliases=tied_aliases(self.model),
                           order=getattr(self, "opt_order", None))

    def _model_state_from_full(self, full: dict) -> dict:
        return dict(full)  # every stage holds the whole model object

    def data_shard(self):
        g = self._groups()
        return g.coords["dp"], g.layout.dp

    def setup(self, model, make_optimizer, sample=None):
        """Cut ``model`` into stages (timing each unit on ``sample`` = (x, y) when given,
        else by parameter count) and keep this stage's parameters."""
        g = self._groups()
        if self.device is None:
            self.bind()
        self.model = model
        self.context: dict = {}  # the micro-batch being run, for units that need it
        self.units = model_units(model, self.context)
        cfg = model.config
        self.width = getattr(cfg, "n_embd", None) or cfg.hidden_size  # activations' last axis
        costs = self._measure(sample) if sample is not None else self._param_costs(model)
        # one partition for the whole world: each data-parallel replica timing its own units
        # could cut the model elsewhere, and the replicas of a stage would then hold
        # different parameters (seen under load as a truncated broadcast)
        costs = g.world.bcast_object(costs, root=0)
        self.ranges = partition(costs, g.layout.pp)
        self.stage = g.coords["pp"]
        self._in_dtype, self._sent_dtype = None, False  # told by the first activation sent
        named = self._stage_params(model, self.stage)
        # a parameter that two stages use (tied embedding and output weights) is held by
        # both, its gradient summed over the pp group after backward, and counted once in
        # the gradient norm (on the first stage holding it)
        holders: dict = {}
        for t in range(g.layout.pp):
            for _, p in self._stage_params(model, t):
                holders.setdefault(id(p), []).append(t)
        self.tied = [p for _, p in model.named_parameters()
                     if p.requires_grad and len(holders.get(id(p), ())) > 1]
        self.norm_skip = {id(p) for _, p in named if holders[id(p)][0] != self.stage}
        self.names = [n for n, _ in named]
        self.params = [p for _, p in named]
        self._broadcast_params_of(self.params)
        self.reducer = BucketReducer(self.params, g.dp, bucket_bytes=self.bucket_bytes,
                                     overlap=self.overlap)
        optimizer = make_optimizer(list(self.params))
        self.opt_order = optimizer_order(optimizer, self.names, self.params)  # round 41 h9
        return model, optimizer

    def _stage_params(self, model, stage: int) -> list:
        """(name, trainable parameter) pairs the units of ``stage`` use (tied ones under
        their first name)."""
        a, b = self.ranges[stage]
        prefixes = tuple(p for names, _ in self.units[a:b] for p in names)
        canonical = {id(p): n for n, p in model.named_parameters()}
        out, seen = [], set()
        for n, p in model.named_parameters(remove_duplicate=False):
            if n.startswith(prefixes) and p.requires_grad and id(p) not in seen:
                seen.add(id(p))
                out.append((canonical[id(p)], p))
        return out

    def reduce_gradients(self, model) -> None:
        super().reduce_gradients(model)
        g = self._groups()
        for p in self.tied:  # every stage takes part; those without it add zeros
            mine = any(p is q for q in self.params)
            grad = p._grad if mine and p._grad is not None else p.xp.zeros_like(p._data)
            total = g.pp.allreduce(p.xp.ascontiguousarray(grad))
            if mine:
                p._grad = total

    def _broadcast_params_of(self, params) -> None:
        if self.comm.size > 1:
            for p in params:
                p._data[...] = self.comm.broadcast(p._data, root=0)

    def _param_costs(self, model) -> list[float]:
        sizes = []
        named = list(model.named_parameters())
        for names, _ in self.units:
            sizes.append(float(sum(p.size for n, p in named if n.startswith(names))) or 1.0)
        return sizes

    def _measure(self, sample) -> list[float]:
        x, y = sample
        costs = []
        with no_grad():
            h = x
            for i, (_, fn) in enumerate(self.units):
                t0 = time.perf_counter()
                h = fn(h, y) if i == len(self.units) - 1 else fn(h)
                costs.append(time.perf_counter() - t0)
        return costs

    # --- one step: the 1F1B schedule ---------------------------------------------------------
    def _run_stage(self, h, y):
        a, b = self.ranges[self.stage]
        last = b == len(self.units)
        for i in range(a, b):
            fn = self.units[i][1]
            h = fn(h, y) if (last and i == len(self.units) - 1) else fn(h)
        return h

    def forward_backward(self, model, batch, loss_fn=None, *, scale: float = 1.0) -> float:
        """Run the whole batch as ``micro_batches`` micro-batches through the pipeline;
        return the mean loss (on every stage). A batch that does not split evenly over the
        data-parallel groups (``row_weight``) is weighted by this group's share of its rows."""
        w = self.row_weight
        if w is not None and w != 1.0 and not isinstance(batch, PackedBatch):
            self.row_weight = None
            try:
                return w * self.forward_backward(model, batch, loss_fn, scale=scale * w)
            finally:
                self.row_weight = w
        g = self._groups()
        pp, s = g.layout.pp, self.stage
        xp = self.params[0].xp  # activations and their gradients live on the device
        weights, contexts = None, None
        if isinstance(batch, PackedBatch):  # whole sequences per micro-batch
            if not getattr(self.model, "config", None) or not hasattr(self.model.config,
                                                                       "hidden_size"):
                raise ValueError("pipeline parallel runs packed sequences for ERNIE-4.5 "
                                 "models only: use (x, y) blocks, or strategy='dp' or 'zero2'")
            micro, weights = packed_micro_batches(batch, self.micro)
            m = len(micro)
            xs, ys = [t for t, _, _, _ in micro], [y for _, y, _, _ in micro]
            contexts = [{"cu_seqlens": cu, "positions": p} for _, _, cu, p in micro]
            shapes = [(len(t), self.width) for t in xs]
        elif isinstance(batch, tuple):
            x, y = batch
            xa = to_numpy(x._data if isinstance(x, Tensor) else x)  # token ids, on the host
            ya = to_numpy(y._data if isinstance(y, Tensor) else y)
            m = self.micro
            if xa.shape[0] % m:  # a smaller last batch: the most micro-batches that cut it
                m = max(d for d in range(1, m + 1) if xa.shape[0] % d == 0)  # evenly
            k = xa.shape[0] // m
            xs = [xa[i * k:(i + 1) * k] for i in range(m)]
            ys = [ya[i * k:(i + 1) * k] for i in range(m)]
            shapes = [(k, xa.shape[1], self.width)] * m
        else:
            raise ValueError(f"pipeline parallel runs (x, y) token blocks or packed "
                             f"sequences, got {type(batch).__name__}")
        first, last = s == 0, s == pp - 1
        inputs, outputs, losses, sends = {}, {}, [], []
        for kind, i in schedule_1f1b(s, pp, m):
            if kind == "F":
                if first:
                    h_in = xs[i]
                else:
                    if self._in_dtype is None:  # what the stage before sends (once)
                        code = g.pp.recv(np.zeros(1, np.int64), s - 1, tag=_DTYPE_TAG)
                        self._in_dtype = _act_dtype(int(code[0]))
                    h_in = Tensor(g.pp.recv(xp.empty(shapes[i], self._in_dtype), s - 1,
                                            tag=i), requires_grad=True,  # in the dtype sent:
                                  dtype=self._in_dtype)  # a float64 model's stays float64
                inputs[i] = h_in
                self.context.clear()
                self.context.update(contexts[i] if contexts else {})
                out = self._run_stage(h_in, ys[i])
                if last:
                    losses.append(float(out.item()))
                    if out.dtype != np.float32:  # mixed: scaled in float32, cannot overflow
                        out = out.astype(np.float32)
                    outputs[i] = out * (scale * (weights[i] if weights else 1.0 / m))
                else:
                    outputs[i] = out
                    if not self._sent_dtype:  # activations travel in their own dtype:
                        code = np.array([_ACT_DTYPES.index(out.dtype.name)])  # say which
                        sends.append(g.pp.isend(code, s + 1, tag=_DTYPE_TAG))
                        self._sent_dtype = True
                    sends.append(g.pp.isend(xp.ascontiguousarray(out._data), s + 1, tag=i))
                self.peak_in_flight = max(self.peak_in_flight, len(outputs))
            else:
                out = outputs.pop(i)
                if last:
                    out.backward()
                else:
                    grad = g.pp.recv(xp.empty(shapes[i], out.dtype), s + 1, tag=10_000 + i)
                    out.backward(grad)
                self.reducer.end_backward()  # this micro-batch's buckets, in order
                h_in = inputs.pop(i)
                if not first:
                    sends.append(g.pp.isend(xp.ascontiguousarray(h_in._grad), s - 1,
                                            tag=10_000 + i))
        for h in sends:
            h.wait()
        if not losses:
            mean = np.array([0.0])
        elif weights:  # the mean over the learned tokens of the whole batch
            mean = np.array([float(np.dot(weights, losses))])
        else:
            mean = np.array([np.mean(losses)])
        return float(g.pp.broadcast(mean, root=pp - 1)[0])

    def grad_norm(self, grads) -> float:
        """The stages' squares summed over the pp group (dp replicas hold the same)."""
        from skiff.kernels.train.precision import local_grad_norm

        local = local_grad_norm([gr for p, gr in zip(self.params, grads)
                                 if id(p) not in self.norm_skip])
        return float(np.sqrt(self._groups().pp.allreduce(np.array([local * local]))[0]))

    def clip_grad_norm(self, model, max_norm: float) -> float:
        g = self._groups()
        local = sum(float((p._grad.astype(np.float64) ** 2).sum()) for p in self.params
                    if p._grad is not None and id(p) not in self.norm_skip)
        total = float(np.sqrt(g.pp.allreduce(np.array([local]))[0]))
        if total > max_norm:
            for p in self.params:
                if p._grad is not None:
                    p._grad *= max_norm / (total + 1e-6)
        return total

    def full_state_dict(self, model) -> dict:
        g = self._groups()
        mine = {n: p._data.copy() for n, p in zip(self.names, self.params)}
        merged = {}
        for part in g.pp.allgather_object(mine):
            merged.update(part)
        full = model.state_dict()
        full.update(merged)
        return full

    def teardown(self) -> None:
        """At the end of ``train`` every rank's model takes every stage's trained weights:
        each rank stepped only its stage's parameters, so rank 0's ``trainer.model.save()``
        after a pp run wrote the later stages' initial weights (the head 9e-3 off one
        process after 3 SGD steps) and loaded into one process without a word."""
        model = getattr(self, "model", None)
        if model is not None and self._groups().pp.size > 1:
            self.whole_model(model, self.full_state_dict(model))
        super().teardown()

    def stale_elsewhere(self) -> bool:
        return self._groups().pp.size > 1

    def sync_for_evaluation(self, model) -> None:
        """Every stage's current weights into this rank's model object, which the loop's
        validation runs whole on each rank: each rank steps only its stage, so the others
        were their initial weights there, and the validation loss was of a model half
        trained (gpt-mini, 6 steps on 2 ranks: 5.05 against one process's 4.35; round
        35). A collective over the stages, as at :meth:`teardown`."""
        if self._groups().pp.size > 1:
            self.whole_model(model, self.full_state_dict(model))

    def evaluation_model(self, model):
        """The model object with every stage's current weights (gathered on every rank, as
        before a validation): the evaluator scores it on the reporting rank. It was
        refused ("pp holds one stage per rank"), though the model object is whole on each
        rank and only its other stages are stale."""
        self.sync_for_evaluation(model)
        return model

    def whole_model(self, model, weights: dict):
        """Every stage's trained weights into this rank's model object."""
        model.load_state_dict(weights)
        return model

    def describe(self) -> dict:
        d = super().describe()
        d.update(layout=self.layout.to_json(), stages=getattr(self, "ranges", None),
                 micro_batches=self.micro)
        return d
