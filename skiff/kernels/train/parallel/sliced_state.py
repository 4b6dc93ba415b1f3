"""A rank's training state as pieces of the single-device model's named arrays.

Tensor- and pipeline-parallel ranks each hold part of the model: a tensor-parallel rank a
slice of every split layer (rows of a column-parallel weight, columns of a row-parallel one,
a range of the vocabulary), a pipeline stage the whole arrays of its blocks. Their
checkpoints are written without gathering anything: each rank writes, as
:class:`~.checkpoint.Piece` s named after the single-device parameters,

* ``model/<name>``: its slice of the parameter,
* ``optim/<name>/<key>``: the optimizer state of that parameter (moments sliced the same
  way; step counts whole),
* ``master/<name>``: the float32 master copy in mixed precision,

and only the ranks that own a piece write it: the first data-parallel replica, and for the
arrays every tensor-parallel rank holds whole (layer norms, position embeddings), only its
first tensor-parallel rank. A load in any layout asks for the positions this rank's
parameters hold (:meth:`SlicedState.select`), so a rank reads its own slices and nothing
else, and the optimizer moments and masters come back resharded too (element-wise
optimizers: the same update as on the old layout).
"""

from __future__ import annotations

import numpy as np

from .checkpoint import Piece

__all__ = ["SlicedState", "tensor_parallel_slicing", "has_pieces", "load_optimizer_from_pieces"]


def tensor_parallel_slicing(model) -> dict:
    """``{name: (global shape, axis, index)}`` for the parameters a tensor-parallel GPT
    splits (:mod:`.tensor_parallel`); the others are held whole."""
    from .tensor_parallel import ColumnParallelLinear, RowParallelLinear, VocabParallelEmbedding

    if getattr(model, "tp_slicing", None) is not None:  # an ERNIE model (.ernie_tensor)
        return dict(model.tp_slicing)
    out = {}
    for mname, mod in model.named_modules():
        prefix = f"{mname}." if mname else ""
        if isinstance(mod, ColumnParallelLinear):
            w = mod.weight.shape
            out[prefix + "weight"] = ((mod.full_out, w[1]), 0, mod.rows)
            if mod.bias is not None:
                out[prefix + "bias"] = ((mod.full_out,), 0, mod.rows)
        elif isinstance(mod, RowParallelLinear):
            w = mod.weight.shape
            out[prefix + "weight"] = ((w[0], w[1] * mod.comm.size), 1, mod.cols)
        elif isinstance(mod, VocabParallelEmbedding):
            n, d = mod.weight.shape
            out[prefix + "weight"] = ((mod.full_rows, d), 0, np.arange(mod.lo, mod.lo + n))
    return out


def tied_aliases(model) -> dict:
    """``{other name: first name}`` of the parameters a model holds under two names (tied
    embedding and output weights), so that a restored state sets both alike."""
    first = {id(p): n for n, p in model.named_parameters()}
    return {n: first[id(p)] for n, p in model.named_parameters(remove_duplicate=False)
            if first[id(p)] != n}


def has_pieces(found: dict) -> bool:
    """Whether a loaded checkpoint was written as pieces (by a split model)."""
    return any(k.startswith("model/") for k in (found.get("pieces") or {}))


class SlicedState:
    """This rank's parameters (``names``, ``params``) as pieces of the single-device model.

    ``slicing`` maps the split parameters to ``(global shape, axis, index)``; the rest are
    held whole. ``writes_split`` / ``writes_whole``: whether this rank writes its slices /
    the arrays it holds whole (so that each piece is written once over the job).
    """

    def __init__(self, names, params, slicing: dict | None = None, *,
                 writes_split: bool = True, writes_whole: bool = True, skip=(),
                 aliases: dict | None = None, order: list | None = None):
        self.skip = set(skip)  # parameters another rank holding the same values writes
        self.aliases = dict(aliases or {})  # tied names -> the name they are trained under
        self.names = list(names)
        self.params = list(params)
        # the parameter of each optimizer index (None: one this rank does not train); the
        # names' order unless an optimizer's groups put them in another (round 41 h9)
        self.order = list(self.names) if order is None else list(order)
        self.slicing = dict(slicing or {})
        self.writes_split = writes_split
        self.writes_whole = writes_whole
        self.shapes = {n: tuple(self.slicing[n][0]) if n in self.slicing else tuple(p.shape)
                       for n, p in zip(self.names, self.params)}

    # --- saving ---------------------------------------------------------------------------
    def _piece(self, name: str, array) -> Piece | None:
        if name in self.skip:
            return None
        if name in self.slicing:
            shape, axis, index = self.slicing[name]
            return Piece(array, shape, axis, index) if self.writes_split else None
        return Piece(array, np.shape(array)) if self.writes_whole else None

    def pieces(self, model_state: dict, optimizer_state: dict | None,
               masters: list | None = None) -> dict:
        """The pieces this rank writes: its parameters, their optimizer state and masters."""
        out = {}
        for name in self.names:
            out[f"model/{name}"] = self._piece(name, model_state[name])
        for i, st in (optimizer_state or {}).get("state", {}).items():
            name = self.order[int(i)] if int(i) < len(self.order) else None
            if name is None:
                continue
            for key, value in st.items():
                value = np.asarray(value)
                if value.shape == np.shape(model_state[name]):  # a moment: sliced alike
                    out[f"optim/{name}/{key}"] = self._piece(name, value)
                elif name in self.skip:
                    continue
                elif self.writes_split if name in self.slicing else self.writes_whole:
                    out[f"optim/{name}/{key}"] = Piece(value, value.shape)
        for name, m in zip(self.names, masters or []):
            out[f"master/{name}"] = self._piece(name, m)
        return {k: v for k, v in out.items() if v is not None}

    @staticmethod
    def optimizer_hyper(optimizer_state: dict | None) -> list | None:
        """The optimizer's hyper-parameters per group (the same on every rank)."""
        if optimizer_state is None:
            return None
        return [{k: v for k, v in g.items() if k != "params"}
                for g in optimizer_state.get("param_groups", [])]

    # --- loading --------------------------------------------------------------------------
    def select(self, key: str, shape) -> object:
        """What this rank needs of the saved array ``key`` (see ``load_sharded``)."""
        kind, _, rest = key.partition("/")
        name = rest.rsplit("/", 1)[0] if kind == "optim" else rest
        if name not in self.shapes:
            return False
        if name in self.slicing and tuple(shape) == self.shapes[name]:
            _, axis, index = self.slicing[name]
            return axis, index
        return None

    def restore(self, pieces: dict, model_state: dict, hyper: list | None):
        """``(model state, optimizer state, masters)`` for this rank from the pieces read
        with :meth:`select`; ``model_state`` gives the arrays this rank does not train."""
        model = dict(model_state)
        for name in self.names:
            model[name] = pieces[f"model/{name}"]
        for alias, name in self.aliases.items():  # a tied weight: its trained value
            if name in self.names:
                model[alias] = model[name]
        state = {}
        for i, name in enumerate(self.order):
            if name is None:
                continue
            prefix = f"optim/{name}/"
            st = {k[len(prefix):]: (v.item() if v.ndim == 0 else v)
                  for k, v in pieces.items() if k.startswith(prefix)}
            if st:
                state[i] = st
        optimizer = None if hyper is None else {"state": state, "hyper": hyper}
        masters = None
        if all(f"master/{n}" in pieces for n in self.names) and self.names:
            masters = [pieces[f"master/{n}"] for n in self.names]
        return model, optimizer, masters


def optimizer_order(optimizer, names, params) -> list | None:
    """The name of the parameter at each index of ``optimizer`` (its groups in order), or
    None when it is the names' order: an optimizer instance given with groups steps them
    group by group (decay, no decay), not in the model's order, and its indices named the
    wrong parameters in a split model's checkpoint (round 41 h9)."""
    built = getattr(optimizer, "_stepped_names", None)  # rebuilt by name (trainer_optimizer)
    if built is not None:
        return list(built)
    stepped = [p for g in getattr(optimizer, "param_groups", ()) for p in g["params"]]
    if [id(p) for p in stepped] == [id(p) for p in params]:
        return None
    name_of = {id(p): n for n, p in zip(names, params)}
    if not any(id(p) in name_of for p in stepped):  # masters of mixed precision: by position
        return None
    return [name_of.get(id(p)) for p in stepped]


def load_optimizer_from_pieces(optimizer, state: dict) -> None:
    """Load what :meth:`SlicedState.restore` made into ``optimizer`` (this rank's groups)."""
    groups, n = [], 0
    for hyper, group in zip(state["hyper"], optimizer.param_groups):
        k = len(group["params"])  # indices run over all groups in order
        groups.append({**hyper, "params": list(range(n, n + k))})
        n += k
    optimizer.load_state_dict({"state": state["state"], "param_groups": groups})
