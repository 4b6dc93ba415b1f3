"""``skiff.optim.optimizer``: torch's ``Optimizer`` base and the global step hooks
(``register_optimizer_step_pre_hook`` / ``register_optimizer_step_post_hook``); the public
names of :mod:`skiff.kernels.train.core.optim`."""

from skiff.kernels.train.core.optim import (  # noqa: F401
    Optimizer,
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
)

__all__ = ["Optimizer", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"]
