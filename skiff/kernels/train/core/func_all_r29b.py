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

__all__ = [*_reverse, "jvp", "jacfwd", "linearize", "replace_all_batch_norm_modules_"]


def replace_all_batch_norm_modules_(root):
    """torch's: every batch norm in ``root`` without running statistics (``running_mean``,
    ``running_var``, ``num_batches_tracked`` None, ``track_running_stats`` False), so
    ``vmap`` over it uses each sample's batch statistics."""
    from .nn.conv import _BatchNorm  # (every batch norm derives from it; the nn package
    # imports this module, so not at the top)

    for m in root.modules():
        if isinstance(m, _BatchNorm) and m.track_running_stats:
            m.running_mean = m.running_var = m.num_batches_tracked = None
            m.track_running_stats = False
    return root
