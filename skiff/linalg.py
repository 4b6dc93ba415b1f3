"""``skiff.linalg``: torch's ``torch.linalg`` on skiff tensors (norms, ``solve``, ``inv``,
``det``, ``slogdet``, ``cholesky``, ``qr``, ``eigh``, ``svd``, ``svdvals``).

The public name of :mod:`skiff.kernels.train.core.ops_linalg`; the same functions."""

from skiff.kernels.train.core.ops_linalg import (  # noqa: F401
    __all__,
    cholesky,
    det,
    eigh,
    eigvalsh,
    inv,
    matrix_norm,
    norm,
    qr,
    slogdet,
    solve,
    svd,
    svdvals,
    vector_norm,
)
