"""torch's ``torch.nn.modules.sparse``: the embeddings."""

from skiff.kernels.train.core.nn.embedding_bag import (  # noqa: F401
    EmbeddingBag,
)
from skiff.kernels.train.core.nn.layers import (  # noqa: F401
    Embedding,
)
