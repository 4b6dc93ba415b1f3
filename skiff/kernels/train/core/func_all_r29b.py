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
from .nn.utils_r38 import replace_all_batch_norm_modules_  # noqa: E402,F401

__all__ = [*_reverse, "jvp", "jacfwd", "linearize", "replace_all_batch_norm_modules_"]
