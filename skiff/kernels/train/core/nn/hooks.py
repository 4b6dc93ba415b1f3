"""torch's module hooks: ``register_forward_pre_hook``, ``register_forward_hook``,
``register_full_backward_hook`` and ``register_full_backward_pre_hook``, each returning a
handle whose ``remove()`` drops it.

A module without hooks calls ``forward`` straight (one attribute test in ``Module.__call__``).
The backward hook is built from two identity nodes, as torch's is: one over the module's
tensor inputs (its backward has the gradients of the inputs, calls the hooks with them and the
outputs' gradients, and passes on what a hook returns) and one over its outputs (it records
the outputs' gradients). When no input needs a gradient, the hooks run from the output node
with ``grad_input`` all None, as torch's do. Checked against torch in
tests/kernels/train/core/test_hooks.py.
"""

from __future__ import annotations

import itertools

from ..autograd import Function, is_grad_enabled

_ids = itertools.count()


class RemovableHandle:
    """What ``register_*_hook`` returns: ``remove()`` unregisters the hook (idempotent); also a
    context manager that removes it on exit."""

    def __init__(self, table: dict, key: int):
        self._table, self.id = table, key

    def remove(self) -> None:
        self._table.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _table(module, name: str) -> dict:
    table = module.__dict__.get(name)
    if table is None:
        table = {}
        object.__setattr__(module, name, table)
    object.__setattr__(module, "_has_hooks", True)
    return table


class _WithKwargs:
    """A forward (pre-)hook registered with ``with_kwargs=True``: it also gets the keyword
    arguments (``hook(module, args, kwargs)`` returning ``(args, kwargs)``, or
    ``hook(module, args, kwargs, output)``)."""

    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn


def register(module, kind: str, hook, prepend: bool = False,
             with_kwargs: bool = False) -> RemovableHandle:
    if with_kwargs:
        hook = _WithKwargs(hook)
    table = _table(module, kind)
    key = next(_ids)
    if prepend:
        items = list(table.items())
        table.clear()
        table[key] = hook
        table.update(items)
    else:
        table[key] = hook
    return RemovableHandle(table, key)


def _is_tensor(x) -> bool:
    return hasattr(x, "_data") and hasattr(x, "_node")


def call(module, args, kwargs):
    """``module(*args, **kwargs)`` with its hooks."""
    d = module.__dict__
    for hook in list((d.get("_forward_pre_hooks") or {}).values()):
        if isinstance(hook, _WithKwargs):
            out = hook.fn(module, args, kwargs)
            if out is not None:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise RuntimeError("forward pre-hook must return None or a tuple of "
                                       f"(new_args, new_kwargs), but got {out}.")
                args, kwargs = out
                args = args if isinstance(args, tuple) else (args,)
            continue
        out = hook(module, args)
        if out is not None:
            args = out if isinstance(out, tuple) else (out,)
    backward = d.get("_backward_hooks") or d.get("_backward_pre_hooks")
    state = None
    if backward and is_grad_enabled():
        state = _BackwardState(module)
        args = state.wrap_inputs(args)
    output = module.forward(*args, **kwargs)
    for hook in list((d.get("_forward_hooks") or {}).values()):
        out = (hook.fn(module, args, kwargs, output) if isinstance(hook, _WithKwargs)
               else hook(module, args, output))
        if out is not None:
            output = out
    if state is not None:
        output = state.wrap_outputs(output)
    return output


class _BackwardState:
    """One call's shared record: which inputs are tensors, the outputs' gradients."""

    def __init__(self, module):
        self.module = module
        self.grad_output = None
        self.n_in = 0
        self.inputs_need = False

    def wrap_inputs(self, args):
        where = [i for i, a in enumerate(args) if _is_tensor(a)]
        self.n_in = len(where)
        need = [i for i in where if args[i].requires_grad]
        if not need:
            return args
        self.inputs_need = True
        self.slots = where
        outs = _HookIn.apply(*[args[i] for i in where], state=self)
        outs = outs if isinstance(outs, tuple) else (outs,)
        args = list(args)
        for i, t in zip(where, outs):
            args[i] = t
        return tuple(args)

    def wrap_outputs(self, output):
        single = _is_tensor(output)
        items = [output] if single else list(output) if isinstance(output, (tuple, list)) else []
        where = [i for i, o in enumerate(items) if _is_tensor(o) and o.requires_grad]
        if not where:
            return output
        outs = _HookOut.apply(*[items[i] for i in where], state=self)
        outs = outs if isinstance(outs, tuple) else (outs,)
        for i, t in zip(where, outs):
            items[i] = t
        if single:
            return items[0]
        return type(output)(items) if isinstance(output, tuple) else items

    def run(self, grad_input):
        from ..tensor import Tensor

        def wrap(gs):
            return tuple(None if g is None else Tensor._make(g, False, None, 0) for g in gs)

        gin, gout = wrap(grad_input), wrap(self.grad_output or ())
        for hook in list((self.module.__dict__.get("_backward_hooks") or {}).values()):
            out = hook(self.module, gin, gout)
            if out is not None:
                out = out if isinstance(out, tuple) else (out,)
                if len(out) != len(gin):
                    raise RuntimeError(f"a backward hook returned {len(out)} gradients for "
                                       f"{len(gin)} inputs")
                gin = tuple(o if o is None or isinstance(o, Tensor) else
                            Tensor._make(o, False, None, 0) for o in out)
        return tuple(None if g is None else g._data for g in gin)


class _HookIn(Function):
    """Identity over the module's tensor inputs; backward calls the hooks."""

    def forward(self, *arrays, state=None):
        self.state = state
        return arrays if len(arrays) > 1 else arrays[0]

    def backward(self, *grads):
        grads = tuple(g if need else None for g, need in zip(grads, self.needs_input_grad))
        out = self.state.run(grads)
        return out if len(out) > 1 else out[0]


class _HookOut(Function):
    """Identity over the module's outputs; backward records their gradients (and runs the
    hooks itself when no input needs a gradient)."""

    def forward(self, *arrays, state=None):
        self.state = state
        return arrays if len(arrays) > 1 else arrays[0]

    def backward(self, *grads):
        pre = self.state.module.__dict__.get("_backward_pre_hooks")
        if pre:  # register_full_backward_pre_hook: may replace the outputs' gradients
            grads = _pre_hooks(self.state.module, pre, grads)
        self.state.grad_output = grads
        if not self.state.inputs_need:
            self.state.run((None,) * self.state.n_in)
        return grads if len(grads) > 1 else grads[0]


def _pre_hooks(module, table, grads):
    from ..tensor import Tensor

    gout = tuple(None if g is None else Tensor._make(g, False, None, 0) for g in grads)
    for hook in list(table.values()):
        out = hook(module, gout)
        if out is not None:
            out = out if isinstance(out, tuple) else (out,)
            if len(out) != len(gout):
                raise RuntimeError(f"a backward pre-hook returned {len(out)} gradients for "
                                   f"{len(gout)} outputs")
            gout = tuple(o if o is None or isinstance(o, Tensor) else
                         Tensor._make(o, False, None, 0) for o in out)
    return tuple(None if g is None else g._data for g in gout)
