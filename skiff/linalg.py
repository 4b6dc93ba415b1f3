"""``skiff.linalg``: torch's ``torch.linalg`` on skiff tensors (norms, ``solve``, ``inv``,
``det``, ``slogdet``, ``cholesky``, ``qr``, ``eigh``, ``svd``, ``svdvals``, ``pinv``,
``matrix_rank``, ``matrix_power``, ``multi_dot``, ``vecdot``, ``cross``, ``solve_triangular``;
``matrix_exp``, ``cholesky_ex``, ``inv_ex``, ``cond`` from ``linalg_r29b``), torch's
``LinAlgError`` (a RuntimeError) for a singular or not positive-definite matrix, and
``matmul``, ``vander``, ``solve_ex``, ``tensorinv``, ``tensorsolve`` from ``linalg_r38``, and
``lu``, ``lu_factor(_ex)``, ``lu_solve``, ``ldl_factor(_ex)``, ``ldl_solve``,
``householder_product`` from ``linalg_r39``.

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
from skiff.kernels.train.core.linalg_r39 import (  # noqa: F401
    householder_product,
    ldl_factor,
    ldl_factor_ex,
    ldl_solve,
    lu,
    lu_factor,
    lu_factor_ex,
    lu_solve,
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
           "matmul", "vander", "solve_ex", "tensorinv", "tensorsolve", "lu", "lu_factor",
           "lu_factor_ex", "lu_solve", "ldl_factor", "ldl_factor_ex", "ldl_solve",
           "householder_product"]
