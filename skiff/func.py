"""``skiff.func``: torch's ``torch.func`` (``functional_call``, ``grad``, ``grad_and_value``,
``vmap``, ``vjp``, ``jacrev``, ``hessian``, ``stack_module_state``; forward mode ``jvp``,
``jacfwd``, ``linearize``; ``replace_all_batch_norm_modules_``); the public names of
:mod:`skiff.kernels.train.core.func_all_r29b`."""

from skiff.kernels.train.core.func_all_r29b import (  # noqa: F401
    __all__,
    functional_call,
    grad,
    grad_and_value,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    linearize,
    replace_all_batch_norm_modules_,
    stack_module_state,
    vjp,
    vmap,
)
