"""``func.grad`` inside a batched ``vmap`` call (:mod:`.vmap_r30`): per-sample gradients.

The stand-in of each differentiated argument is a physical tensor with the batch on axis 0:
a batched argument's own samples, an unbatched one (the parameters of torch's per-sample
gradient tutorial, ``in_dims=(None, 0, 0)``) repeated along the batch. The function runs once;
since sample ``i`` of the output depends only on row ``i`` of every stand-in, one backward
pass of the summed output gives every sample's gradient, row by row. Where an argument needs
a gradient itself (a gradient of gradients), the stand-ins stay in the caller's graph.
"""

from __future__ import annotations

from .autograd import is_grad_enabled
from .tensor import Tensor
from .vmap_tensor_r30 import BatchedTensor, NotBatchable, current_level, is_batched


def _stand_in(t, level, n):
    if is_batched(t, level):
        p = t._phys
        if isinstance(p, BatchedTensor):
            raise NotBatchable("grad of a tensor batched at two levels")
        if p.requires_grad and is_grad_enabled():
            p = p.reshape(tuple(p.shape))
        else:
            p = p.detach().requires_grad_(True)
        return BatchedTensor(p, level)
    if isinstance(t, BatchedTensor):
        raise NotBatchable("grad of a tensor batched at an outer level")
    shape = (n,) + tuple(t.shape)
    if t.requires_grad and is_grad_enabled():
        p = t.reshape((1,) + tuple(t.shape)).expand(shape).reshape(shape)
    else:
        data = t._data
        # a read-only broadcast view: ops read their inputs, none writes them
        p = Tensor._make(t.xp.broadcast_to(data, shape), True, None, 0)
    return BatchedTensor(p, level)


def grad_batched(func, argnums, has_aux, args, kwargs):
    """``func_r29._grad_impl`` at the innermost batched level: ``(grads, value, aux)``."""
    from .func_tree_r31 import _leaves, finish_grad, run_for_grad
    from .torch_autograd import grad as autograd_grad

    level, n = current_level()
    single, nums, args, outer, out, aux = run_for_grad(
        func, argnums, has_aux, args, kwargs, lambda t: _stand_in(t, level, n))
    if not is_batched(out, level) or isinstance(out._phys, BatchedTensor):
        raise NotBatchable("a gradient whose output is not batched at this level")
    leaves = [t._phys for a in nums for t in _leaves(args[a])]
    phys = out._phys
    if not phys.requires_grad:
        raise NotBatchable("an output that needs no gradient")
    grads = autograd_grad(phys.sum(), leaves, create_graph=outer, allow_unused=True,
                          materialize_grads=True) if leaves else ()
    return finish_grad(grads, single, nums, args, outer, phys, aux,
                       wrap=lambda t: BatchedTensor(t, level))
