"""torch's ``torch.func`` for per-sample gradients (DP-SGD, influence functions), model
ensembling and MAML written functionally: ``functional_call``, ``grad``, ``grad_and_value``,
``vmap``, ``vjp``, ``jacrev``, ``hessian`` and ``stack_module_state``.

How, and what differs from torch: ``functional_call`` swaps the module's parameters and
buffers for the given tensors (tied names follow, as torch's ``tie_weights``) and puts them
back afterwards. ``grad`` runs the function on stand-ins for the chosen arguments and takes
``autograd.grad`` of its scalar output; when an argument itself needs a gradient (a
``grad`` of ``grad``, a meta-gradient) the result stays in the graph (``create_graph``), so
the transforms nest. ``vmap`` is a loop: it calls the function once per index of the mapped
axis and stacks the results (torch batches the ops instead), so it gives torch's values and
gradients at the cost of one call per sample; ``randomness="same"`` restarts skiff's generator
for every sample, any other value draws afresh each call (torch's ``"error"`` is not enforced).
Pytrees are tensors, numbers, tuples, lists and dicts of them.
"""

from __future__ import annotations

import contextlib

from . import random as _random
from .autograd import _tensor_class, enable_grad, is_grad_enabled
from .func_tree_r31 import _argnums, _leaves, _map, finish_grad, run_for_grad

__all__ = ["functional_call", "grad", "grad_and_value", "vmap", "vjp", "jacrev", "hessian",
           "stack_module_state"]


# ---- pytrees: _leaves, _map (func_tree_r31) -----------------------------------------------

# ---- functional_call ----------------------------------------------------------------------

def _slot(module, name):
    *path, leaf = name.split(".")
    m = module
    for p in path:
        sub = m._modules.get(p)
        if sub is None:
            raise KeyError(f"functional_call: {name!r} names no parameter or buffer of "
                           f"{type(module).__name__} (no submodule {p!r})")
        m = sub
    for store in (m._parameters, m._buffers):
        if leaf in store:
            return m, store, leaf
    raise KeyError(f"functional_call: {name!r} names no parameter or buffer of "
                   f"{type(module).__name__}; its names are those of named_parameters() and "
                   "named_buffers()")


@contextlib.contextmanager
def _swapped(module, values, tie_weights=True):
    slots = {name: _slot(module, name) for name in values}
    if tie_weights:  # a tied tensor given under one of its names is used under all of them
        by_id = {id(store[leaf]): values[name] for name, (_m, store, leaf) in slots.items()}
        for mname, m in module.named_modules():
            for store in (m._parameters, m._buffers):
                for leaf, t in store.items():
                    full = f"{mname}.{leaf}" if mname else leaf
                    if full not in slots and t is not None and id(t) in by_id:
                        slots[full] = (m, store, leaf)
                        values = {**values, full: by_id[id(t)]}
    old = [(m, store, leaf, store[leaf]) for m, store, leaf in slots.values()]
    try:
        for name, (m, store, leaf) in slots.items():
            store[leaf] = values[name]  # the attribute too: modules read self.weight
            m.__dict__[leaf] = values[name]
        yield
    finally:
        for m, store, leaf, t in old:
            store[leaf] = t
            m.__dict__[leaf] = t


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """``module(*args, **kwargs)`` with its parameters and buffers replaced by the tensors
    of ``parameter_and_buffer_dicts`` (a dict, or a tuple of dicts), by dotted name."""
    dicts = parameter_and_buffer_dicts
    if isinstance(dicts, dict):
        dicts = (dicts,)
    values: dict = {}
    for d in dicts:
        for k, v in d.items():
            if k in values:
                raise ValueError(f"functional_call: {k!r} appears in more than one dict")
            values[k] = v
    if strict:
        names = {n for n, _ in module._named("_parameters", False)}
        names |= {n for n, _ in module._named("_buffers", False)}
        missing = sorted(names - set(values))
        if missing:
            raise RuntimeError(f"functional_call(strict=True): missing keys {missing}")
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _swapped(module, values, tie_weights):
        return module(*args, **(kwargs or {}))


def stack_module_state(models):
    """``(params, buffers)``: each name's tensors of the models stacked on a new first axis
    (parameters as new leaves that need a gradient, as torch's)."""
    from .tensor import stack

    models = list(models)
    if not models:
        raise ValueError("stack_module_state: expected at least one model")
    params = {k: stack([dict(m.named_parameters())[k].detach() for m in models]).requires_grad_(
        p.requires_grad) for k, p in models[0].named_parameters()}
    buffers = {k: stack([dict(m.named_buffers())[k].detach() for m in models])
               for k, _ in models[0].named_buffers()}
    return params, buffers


# ---- grad ---------------------------------------------------------------------------------

def _stand_in(t):
    if t.requires_grad and is_grad_enabled():
        return t.reshape(tuple(t.shape))  # in the caller's graph: the result can be, too
    return t.detach().requires_grad_(True)


def _grad_impl(func, argnums, has_aux, args, kwargs):
    from . import vmap_r30 as _vm
    from .torch_autograd import grad as autograd_grad

    if _vm.current_level() is not None:  # inside a batched vmap call: per-sample gradients
        from .vmap_grad_r30 import grad_batched

        return grad_batched(func, argnums, has_aux, args, kwargs)
    single, nums, args, outer, out, aux = run_for_grad(func, argnums, has_aux, args, kwargs,
                                                       _stand_in)
    leaves = [t for a in nums for t in _leaves(args[a])]
    grads = autograd_grad(out, leaves, create_graph=outer, allow_unused=True,
                          materialize_grads=True) if leaves else ()
    return finish_grad(grads, single, nums, args, outer, out, aux)


def grad(func, argnums=0, has_aux=False):
    """torch's ``func.grad``: a function returning d func / d args[argnums] (a pytree like
    the argument; a tuple of them for a tuple of argnums), and ``aux`` with ``has_aux``."""
    def wrapper(*args, **kwargs):
        g, _, aux = _grad_impl(func, argnums, has_aux, args, kwargs)
        return (g, aux) if has_aux else g
    return wrapper


def grad_and_value(func, argnums=0, has_aux=False):
    """torch's ``func.grad_and_value``: ``(grad, value)`` (``(grad, (value, aux))``)."""
    def wrapper(*args, **kwargs):
        g, out, aux = _grad_impl(func, argnums, has_aux, args, kwargs)
        return (g, (out, aux)) if has_aux else (g, out)
    return wrapper


def vjp(func, *primals, has_aux=False):
    """torch's ``func.vjp``: ``(output, vjp_fn)``; ``vjp_fn(cotangents)`` returns one gradient
    pytree per primal."""
    from .torch_autograd import grad as autograd_grad

    outer = is_grad_enabled() and any(t.requires_grad for t in _leaves(primals))
    prim = [_map(_stand_in, p) for p in primals]
    with enable_grad():
        out = func(*prim)
    aux = None
    if has_aux:
        out, aux = out
    leaves_in = [t for p in prim for t in _leaves(p)]
    outs = _leaves(out)

    def vjp_fn(cotangents, retain_graph=True):
        cts = _leaves(cotangents)
        if len(cts) != len(outs):
            raise ValueError(f"vjp_fn: {len(cts)} cotangents for {len(outs)} outputs")
        gs = autograd_grad(outs, leaves_in, grad_outputs=cts, retain_graph=True,
                           create_graph=outer, allow_unused=True, materialize_grads=True)
        if not outer:
            gs = [g.detach() for g in gs]
        it = iter(gs)
        return tuple(_map(lambda _t: next(it), p) for p in prim)

    shown = out if outer else _map(lambda t: t.detach(), out)
    return (shown, vjp_fn, aux) if has_aux else (shown, vjp_fn)


def jacrev(func, argnums=0, has_aux=False):
    """torch's ``func.jacrev``: the Jacobian of the output with respect to the argument(s),
    shaped ``output.shape + input.shape`` (one reverse pass per output entry). Arguments and
    outputs may be pytrees (a dict of parameters through ``functional_call``, a tuple of
    outputs): the result has the output's structure, each leaf the arguments'."""
    from .tensor import stack
    from .torch_autograd import grad as autograd_grad

    def wrapper(*args, **kwargs):
        single, nums = _argnums(argnums, len(args))
        args = list(args)
        for a in nums:
            if not _leaves(args[a]):
                raise TypeError("jacrev: the differentiated arguments must be tensors or "
                                f"pytrees of them (argument {a} is "
                                f"{type(args[a]).__name__})")
        outer = is_grad_enabled() and any(t.requires_grad for a in nums
                                          for t in _leaves(args[a]))
        for a in nums:
            args[a] = _map(_stand_in, args[a])
        with enable_grad():
            out = func(*args, **kwargs)
        aux = None
        if has_aux:
            out, aux = out
        ins = [t for a in nums for t in _leaves(args[a])]
        per_out = []
        for o in _leaves(out):
            flat = o.reshape(-1)
            rows = [autograd_grad(flat[j], ins, retain_graph=True, create_graph=outer,
                                  allow_unused=True, materialize_grads=True)
                    for j in range(flat.shape[0])]
            jac = iter([(lambda J: J if outer else J.detach())(
                stack([r[i] for r in rows]).reshape(tuple(o.shape) + tuple(x.shape)))
                for i, x in enumerate(ins)])
            trees = tuple(_map(lambda _t, _j=jac: next(_j), args[a]) for a in nums)
            per_out.append(trees[0] if single else trees)
        it = iter(per_out)
        res = _map(lambda _t: next(it), out)
        return (res, aux) if has_aux else res
    return wrapper


def hessian(func, argnums=0):
    """torch's ``func.hessian``: ``jacrev(jacrev(func))``."""
    return jacrev(jacrev(func, argnums), argnums)


# ---- vmap ---------------------------------------------------------------------------------

def _take(t, dim, i):
    d = dim % t.ndim
    return t[(slice(None),) * d + (i,)]


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """torch's ``vmap``: ``func`` mapped over an axis of its arguments (``in_dims``: an int or
    None for all, or one per positional argument, applied to every tensor in that argument),
    the results stacked on ``out_dims``. A loop of calls: see the module's notes."""
    from .tensor import stack

    def wrapper(*args, **kwargs):
        Tensor = _tensor_class()
        dims = in_dims if isinstance(in_dims, (tuple, list)) else (in_dims,) * len(args)
        if len(dims) != len(args):
            raise ValueError(f"vmap: in_dims has {len(dims)} entries for {len(args)} "
                             "positional arguments")
        sizes = {int(t.shape[d]) for a, d in zip(args, dims) if d is not None
                 for t in _leaves(a)}
        if not sizes:
            raise ValueError("vmap: no tensor argument is mapped (every in_dims entry is None "
                             "or names no tensor)")
        if len(sizes) > 1:
            raise ValueError(f"vmap: the mapped axes have different sizes {sorted(sizes)}")
        (n,) = sizes
        if n == 0:
            raise ValueError("vmap: the mapped axis is empty")
        state = _random.get_state() if randomness == "same" else None
        from . import vmap_r30 as _vm

        if _vm.ENABLED:
            try:
                return _vm.run_batched(func, args, kwargs, dims, n, out_dims, randomness, _map)
            except _vm.NotBatchable:
                _vm.LOOPED["<whole call>"] += 1
                if state is not None:
                    _random.set_state(state)
        results = []
        hook = _random._draw_hook
        if randomness == "error":  # torch's refusal of a draw (the loop drew freely)
            _random._draw_hook = _random_error
        try:
            for i in range(n):
                if state is not None:
                    _random.set_state(state)
                call = [_map(lambda t, d=d, i=i: _take(t, d, i), a) if d is not None else a
                        for a, d in zip(args, dims)]
                results.append(func(*call, **kwargs))
        finally:
            _random._draw_hook = hook
        return _stack_tree(results, out_dims, stack, Tensor)

    return wrapper


def _random_error():
    raise RuntimeError("vmap: called random operation while in randomness error mode. Please "
                       "either use the 'same' or 'different' randomness flags on vmap or "
                       "perform the randomness operation out of vmap")


def _stack_tree(results, out_dims, stack, Tensor):
    first = results[0]
    if isinstance(first, (tuple, list)) and not isinstance(first, Tensor):
        ods = out_dims if isinstance(out_dims, (tuple, list)) else (out_dims,) * len(first)
        parts = [_stack_tree([r[k] for r in results], ods[k], stack, Tensor)
                 for k in range(len(first))]
        return type(first)(parts) if not hasattr(first, "_fields") else type(first)(*parts)
    if isinstance(first, dict):
        return {k: _stack_tree([r[k] for r in results], out_dims, stack, Tensor)
                for k in first}
    if not isinstance(first, Tensor):
        from .tensor import tensor as make_tensor

        results = [make_tensor(r) for r in results]
    if out_dims is None:
        return results[0]
    return stack(results, dim=out_dims % (results[0].ndim + 1))

