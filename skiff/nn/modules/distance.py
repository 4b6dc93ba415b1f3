"""torch's ``torch.nn.modules.distance``: the distances."""

from skiff.kernels.train.core.nn.torch_layers import (  # noqa: F401
    CosineSimilarity,
    PairwiseDistance,
)
