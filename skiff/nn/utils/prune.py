"""``skiff.nn.utils.prune``: torch's pruning (``l1_unstructured``, ``global_unstructured``,
``ln_structured``, ``remove``, ...); the public names of
:mod:`skiff.kernels.train.core.nn.prune_r29`."""

from skiff.kernels.train.core.nn.prune_r29 import (  # noqa: F401
    Identity,
    L1Unstructured,
    LnStructured,
    RandomStructured,
    RandomUnstructured,
    __all__,
    custom_from_mask,
    global_unstructured,
    identity,
    is_pruned,
    l1_unstructured,
    ln_structured,
    random_structured,
    random_unstructured,
    remove,
)
