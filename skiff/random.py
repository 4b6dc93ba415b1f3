"""``skiff.random``: torch's ``torch.random`` names (``fork_rng``, ``manual_seed``, ``seed``,
``get_rng_state``, ``set_rng_state``, ``initial_seed``) on skiff's generator."""

from skiff.kernels.train.core.functions import manual_seed  # noqa: F401
from skiff.kernels.train.core.random import initial_seed  # noqa: F401
from skiff.kernels.train.core.rng_fork import fork_rng  # noqa: F401
from skiff.kernels.train.core.torch_runtime import get_rng_state, set_rng_state  # noqa: F401

__all__ = ["fork_rng", "manual_seed", "get_rng_state", "set_rng_state", "initial_seed"]
