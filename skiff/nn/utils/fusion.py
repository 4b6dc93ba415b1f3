"""``skiff.nn.utils.fusion``: torch's module path for the conv/linear + batch-norm fusions
(``torch.nn.utils.fusion.fuse_conv_bn_eval``; round 44: only ``nn.utils.fuse_*`` existed)."""

from skiff.kernels.train.core.nn.fusion_r37 import (  # noqa: F401
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights"]
