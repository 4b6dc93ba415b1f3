"""torch's ``torch.func`` as one namespace: :mod:`.func_r29`'s transforms and
:mod:`.forward_r29b`'s forward mode (``jvp``, ``jacfwd``, ``linearize``). ``skiff.func``
reaches this module through ``ops_stats`` (``torch.func.jvp(...)`` after ``import torch``)."""

from .forward_r29b import jacfwd, jvp, linearize  # noqa: F401
from .func_r29 import __all__ as _reverse
from .func_r29 import (  # noqa: F401
    functional_call,
    grad,
    grad_and_value,
    hessian,
    jacrev,
    stack_module_state,
    vjp,
    vmap,
)

__all__ = [*_reverse, "jvp", "jacfwd", "linearize"]
