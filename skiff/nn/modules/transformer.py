"""torch's ``torch.nn.modules.transformer``: the transformer layers."""

from skiff.kernels.train.core.nn.decoder import (  # noqa: F401
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
)
from skiff.kernels.train.core.nn.encoder import (  # noqa: F401
    TransformerEncoder,
    TransformerEncoderLayer,
)
