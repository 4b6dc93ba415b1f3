"""Gradients that are themselves in the graph (``create_graph=True``): the engine behind
``skiff.autograd.grad(..., create_graph=True)`` and ``backward(create_graph=True)``, for
gradients of gradients (physics-informed losses on u_xx, gradient penalties, Hessian-vector
products, MAML inner steps).

It walks the graph as :func:`.autograd.run_backward` does (dependency counts, reverse creation
order), but the gradients it passes are tensors and each node runs its ``backward_t`` rule
(:mod:`.double_rules`, :mod:`.nn.functional.double_rules_nn`) with grad mode on, so every
gradient op is recorded. Only nodes on a path to an input asked for run; one of those without a
rule stops the pass with its name. Saved arrays are kept (a graph built by this pass refers to
the nodes it came from). First-order backward does not come here and pays nothing for it.
"""

from __future__ import annotations

import heapq

from . import autograd as _ag
from . import (
    double_rules,  # noqa: F401  (installs the core ops' rules)
    double_rules_complex,  # noqa: F401  (the complex ops' and the transforms')
    double_rules_r44,  # noqa: F401  (cumprod's, the round-32 special functions')
    double_rules_r45,  # noqa: F401  (xlog1py's, gammainc's, fmod's/remainder's)
    double_rules_r45h17,  # noqa: F401  (cholesky's, eigh's, matrix_exp's, index_add's)
    double_rules_r46h8,  # noqa: F401  (eig's, svd's, angle's, index_put's, rotary's)
    double_rules_r47h5,  # noqa: F401  (einsum's, the n-d pools', ctc_loss's)
)
from . import tensor as _tensor
from .autograd import Function, enable_grad
from .nn.functional import double_rules_nn  # noqa: F401  (installs the nn ops' rules)
from .tensor import Tensor
from .tensor_more import _Clone

__all__ = ["grad_graph", "backward_graph", "leaves_of", "NoDoubleBackward"]


class NoDoubleBackward(NotImplementedError):
    """An op on the path has no double-backward rule."""


def _sum(a, b):
    return b if a is None else a + b


def _const(array):
    return Tensor._make(array, False, None, 0)


# what to write instead, for the nodes that will not get a rule
_HINTS = {
    "LinearCrossEntropyFn": "that fused head-and-loss keeps no logits; write "
                            "cross_entropy(linear(x, weight, bias), target) there",
    "PackedAttentionFn": "use scaled_dot_product_attention (padded batches) there",
    "_Recompute": "run that part without recompute (activation checkpointing)",
    "_HookIn": "remove the module's full backward hooks for this pass",
    "_HookOut": "remove the module's full backward hooks for this pass",
}


def grad_graph(outputs, grads, inputs):
    """Tensors d(outputs)/d(inputs) weighted by ``grads`` (tensors or None, for ones), each in
    the graph; None for an input that no output depends on."""
    leaf_at = {}  # id(leaf) -> positions in inputs
    node_at = {}  # (node, idx) -> positions in inputs
    for k, t in enumerate(inputs):
        if t._node is None:
            leaf_at.setdefault(id(t), []).append(k)
        else:
            node_at.setdefault((t._node, t._idx), []).append(k)
    result = [None] * len(inputs)
    roots = []
    for o, g in zip(outputs, grads):
        if g is None:
            g = _const(o.xp.ones(o.shape, dtype=o.dtype))
        elif not isinstance(g, Tensor):
            g = _const(_tensor.as_array(g, dtype=o.dtype))
        if o._node is None:
            for k in leaf_at.get(id(o), ()):
                result[k] = _sum(result[k], g)
        else:
            roots.append((o._node, o._idx, g))
    # 1. every node reachable from the outputs, and which of them lead to an input asked for
    nodes, stack = set(), [n for n, _, _ in roots]
    while stack:
        n = stack.pop()
        if n in nodes:
            continue
        nodes.add(n)
        stack.extend(p for p in n._parents if isinstance(p, Function) and p not in nodes)
    targets = {n for n, _ in node_at}
    useful = set()
    for n in sorted(nodes, key=lambda n: n._seq):  # producers before consumers
        if n in targets or any(p in useful if isinstance(p, Function) else
                               p is not None and id(p) in leaf_at for p in n._parents):
            useful.add(n)
    deps = dict.fromkeys(useful, 0)
    for n in useful:
        for p in n._parents:
            if p in useful:
                deps[p] += 1
    pending = {}
    for n, idx, g in roots:
        if n in useful:
            slot = pending.setdefault(n, [None] * n._nout)
            slot[idx] = _sum(slot[idx], g)
    heap = [(-n._seq, n) for n in useful if deps[n] == 0]
    heapq.heapify(heap)
    # 2. run the rules in reverse creation order, recording the graph of the gradients
    with enable_grad():
        while heap:
            _, n = heapq.heappop(heap)
            gouts = pending.pop(n, None)
            if gouts is not None and "_watch" in n.__dict__:
                gouts = _watched_t(n, gouts)  # register_hook / retain_grad, as first order
            for i in range(n._nout):
                for k in node_at.get((n, i), ()):
                    if gouts is not None and gouts[i] is not None:
                        result[k] = _sum(result[k], gouts[i])
            want = tuple(p in useful if isinstance(p, Function) else
                         p is not None and id(p) in leaf_at for p in n._parents)
            grads_in = (None,) * len(n._parents)
            if gouts is not None and any(g is not None for g in gouts) and any(want):
                grads_in = _run_rule(n, gouts, want)
            for p, idx, g, w in zip(n._parents, n._pidx, grads_in, want):
                if not w:
                    continue
                if isinstance(p, Function):
                    if g is not None:
                        slot = pending.setdefault(p, [None] * p._nout)
                        slot[idx] = _sum(slot[idx], g)
                    deps[p] -= 1
                    if deps[p] == 0:
                        heapq.heappush(heap, (-p._seq, p))
                elif g is not None:
                    for k in leaf_at[id(p)]:
                        result[k] = _sum(result[k], g)
        for k, t in enumerate(inputs):  # a leaf's hooks see its whole gradient, once
            if t._node is None and t._grad_hooks and result[k] is not None \
                    and leaf_at[id(t)][0] == k:
                hooked = _hooks_t(t._grad_hooks, result[k])
                for j in leaf_at[id(t)]:
                    result[j] = hooked
    return result


def _hooks_t(hooks, g):
    """``register_hook`` functions on a gradient in the graph (a tensor one returns replaces
    the gradient, and stays in the graph)."""
    for fn in list(hooks):
        out = fn(g)
        if out is not None:
            g = out if isinstance(out, Tensor) else _const(_tensor.as_array(out, dtype=g.dtype))
    return g


def _watched_t(n, gouts):
    """The output watchers of node ``n`` on tensor gradients: the tensor hooks run on the
    graph's tensors; another watcher (retain_grad) sees the array."""
    gouts = list(gouts)
    for idx, ref, fn in n._watch:
        t = ref()
        if gouts[idx] is None or (t._node is not n if t is not None else
                                  not getattr(fn, "strong", False)):
            continue
        if isinstance(fn, _tensor._Hooks):
            gouts[idx] = _hooks_t(fn.hooks, gouts[idx])
        else:
            out = fn(t, gouts[idx]._data)
            if out is not gouts[idx]._data:
                gouts[idx] = _const(out)
    return gouts


def _run_rule(n, gouts, want):
    name = type(n).__name__
    rule = getattr(n, "backward_t", None) if _own_rule(type(n)) else None
    if rule is None:
        hint = _HINTS.get(name, "write that part with ops that have one (see "
                                "docs/train-core.md, 'Gradients of gradients')")
        raise NoDoubleBackward(
            f"create_graph=True: {name} has no double-backward rule, so the gradient through "
            f"it cannot be differentiated again: {hint}; or take its gradient without "
            f"create_graph.")
    conj = not n.complex_aware and any(g is not None and g.dtype.kind == "c" for g in gouts)
    if n.saved is None:
        raise RuntimeError("Trying to backward through the graph a second time (or directly "
                           "access saved tensors after they have already been freed): the "
                           f"saved arrays of {name} were freed; call "
                           "backward(retain_graph=True) the first time")
    if _ag._last_write[0] > n._seq and n.saved:
        _ag._check_saved(n)  # a saved array written in place since: refused, as first order
    if n._nout > 1 and any(g is None for g in gouts):
        xp = next(g for g in gouts if g is not None).xp
        gouts = [g if g is not None else _const(xp.zeros(*n._out_meta[i]))
                 for i, g in enumerate(gouts)]
    if conj:  # first order's convention (autograd._conjugated_backward), in the graph
        gouts = [_conj_t(g) for g in gouts]
    got = rule(want, *gouts)
    got = got if isinstance(got, (tuple, list)) else (got,)
    if len(got) != len(n._parents):
        raise RuntimeError(f"{name}.backward_t returned {len(got)} gradients for "
                           f"{len(n._parents)} inputs")
    got = [None if g is None else g if isinstance(g, Tensor) else _const(g) for g in got]
    if conj:
        got = [_conj_t(g) for g in got]
    # a real input's part of a complex gradient is its real part (torch's; first order takes
    # it at the leaf, as _add_to_leaf)
    return tuple(_real_t(g) if g is not None and g.dtype.kind == "c" and
                 _parent_dtype(n, i).kind != "c" else g for i, g in enumerate(got))


def _conj_t(g):
    if g is None or g.dtype.kind != "c":
        return g
    from .complex_r28 import Conj
    return Conj.apply(g)


def _real_t(g):
    from .complex_r28 import Real
    return Real.apply(g)


def _parent_dtype(n, i):
    """The dtype of input ``i`` of node ``n`` (complex where unknown: the gradient is kept)."""
    import numpy as np
    p = n._parents[i]
    if p is None:
        return np.dtype("c16")  # no gradient goes there
    if not isinstance(p, Function):
        return np.dtype(p.dtype)  # a leaf
    if n._in_dtypes is not None and n._in_dtypes[i] is not None:
        return np.dtype(n._in_dtypes[i])
    if p._out_meta is not None:
        return np.dtype(p._out_meta[n._pidx[i]][1])
    return np.dtype("c16")
def _own_rule(cls) -> bool:
    """Whether ``cls``'s ``backward_t`` goes with its ``backward``: the class that defines the
    backward it runs defines the rule too (a subclass that changes ``backward`` but inherits a
    rule would get its parent's second derivative, silently wrong: refused instead)."""
    for k in cls.__mro__:
        if "backward" in k.__dict__:
            return "backward_t" in k.__dict__
    return False


def backward_graph(tensors, grads, inputs=None, create_graph=True) -> None:
    """``backward(create_graph=True)``: add each leaf's gradient, a tensor in the graph, to its
    ``.grad`` (so ``p.grad`` can be differentiated again, as torch's); ``inputs``: only to
    those tensors' ``.grad``. Without ``create_graph`` the gradients added are plain."""
    leaves = leaves_of(tensors) if inputs is None else list(inputs)
    got = grad_graph(tensors, grads, leaves)
    for leaf, g in zip(leaves, got):
        if g is None:
            continue
        old = leaf.grad
        if not create_graph:
            g, old = g.detach(), None if old is None else old.detach()
        with enable_grad():  # an owned array: an optimizer may change .grad in place
            new = _Clone.apply(g) if old is None else old + g
        if not create_graph:
            new = new.detach()
        if new.dtype != leaf.dtype:
            new = new.astype(leaf.dtype)
        leaf._grad = new._data
        leaf._grad_t = new


def leaves_of(roots) -> list:
    """The leaves that need a gradient and that ``roots`` (tensors) depend on, each once."""
    found, seen = {}, set()
    stack = [t._node for t in roots if t._node is not None]
    for t in roots:
        if t._node is None and t.requires_grad:
            found[id(t)] = t
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        for p in n._parents:
            if isinstance(p, Function):
                stack.append(p)
            elif p is not None:
                found[id(p)] = p
    return list(found.values())
