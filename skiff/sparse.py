"""``skiff.sparse``: torch's ``sparse`` names for 2-D COO matrices (``mm``, ``addmm``,
``sum``) and ``sparse_coo_tensor``/``spmm``; the public names of
:mod:`skiff.kernels.train.core.sparse_r37`."""

from skiff.kernels.train.core.sparse_r37 import (  # noqa: F401
    DoubleTensor,
    FloatTensor,
    SparseCooTensor,
    addmm,
    is_sparse,
    log_softmax,
    mm,
    softmax,
    sparse_coo_tensor,
    spmm,
    sum,
)

__all__ = ["mm", "addmm", "sum", "sparse_coo_tensor", "spmm", "SparseCooTensor", "is_sparse",
           "FloatTensor", "DoubleTensor", "softmax", "log_softmax"]
