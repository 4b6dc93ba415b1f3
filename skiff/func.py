"""``skiff.func``: torch's ``torch.func`` (``functional_call``, ``grad``, ``grad_and_value``,
``vmap``, ``vjp``, ``jacrev``, ``hessian``, ``stack_module_state``); the public names of
:mod:`skiff.kernels.train.core.func_r29`."""

from skiff.kernels.train.core.func_r29 import (  # noqa: F401
    __all__,
    functional_call,
    grad,
    grad_and_value,
    hessian,
    jacrev,
    stack_module_state,
    vjp,
    vmap,
)
