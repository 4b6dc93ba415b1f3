"""``skiff.linalg``: torch's ``torch.linalg`` on skiff tensors (norms, ``solve``, ``inv``,
``det``, ``slogdet``, ``cholesky``, ``qr``, ``eigh``, ``svd``, ``svdvals``, ``pinv``,
``matrix_rank``, ``matrix_power``, ``multi_dot``, ``vecdot``, ``cross``, ``solve_triangular``;
``matrix_exp``, ``cholesky_ex``, ``inv_ex``, ``cond`` from ``linalg_r29b``), torch's
``LinAlgError`` (a RuntimeError) for a singular or not positive-definite matrix, and
``matmul``, ``vander``, ``solve_ex``, ``tensorinv``, ``tensorsolve`` from ``linalg_r38``.

The public name of :mod:`skiff.kernels.train.core.ops_linalg`; the same functions."""

from skiff.kernels.train.core.linalg_r29b import (  # noqa: F401
    cholesky_ex,
    cond,
    inv_ex,
    matrix_exp,
)
from skiff.kernels.train.core.linalg_r38 import (  # noqa: F401
    matmul,
    solve_ex,
    tensorinv,
    tensorsolve,
    vander,
)
from skiff.kernels.train.core.ops_linalg import (  # noqa: F401
    LinAlgError,
    cdist,
    cholesky,
    cross,
    det,
    diagonal,
    eig,
    eigh,
    eigvals,
    eigvalsh,
    inv,
    inverse,
    logdet,
    lstsq,
    matrix_norm,
    matrix_power,
    matrix_rank,
    multi_dot,
    norm,
    pinv,
    qr,
    slogdet,
    solve,
    solve_triangular,
    svd,
    svdvals,
    vecdot,
    vector_norm,
)
from skiff.kernels.train.core.ops_linalg import __all__ as _core_names

__all__ = [*_core_names, "matrix_exp", "cholesky_ex", "inv_ex", "cond", "LinAlgError",
           "matmul", "vander", "solve_ex", "tensorinv", "tensorsolve"]
