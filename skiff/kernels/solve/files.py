"""A linear system read from files, for a terminal: ``python -m skiff solve A.mtx b.npy``.

The matrix: Matrix Market (``.mtx``, ``.mm``, either gzip- or bzip2-compressed too:
SuiteSparse's collection, and what MATLAB, PETSc and FEniCS write), a SciPy sparse ``.npz``
(``scipy.sparse.save_npz``) or a dense ``.npy``. The right-hand side: ``.npy``, a text
column (``.txt``, ``.csv``) or Matrix Market.
Each file that is not what it should be is one error naming it and what was found.
Complex files (Matrix Market's ``complex`` and ``hermitian`` fields, a complex ``.npy`` or
``.npz``) are read as they are, as ``scipy.io.mmread`` reads them: the solver takes complex
systems (CG for Hermitian positive definite, BiCGStab, GMRES, direct).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["MATRIX_SUFFIXES", "VECTOR_SUFFIXES", "is_matrix_file", "matrix_is_complex",
           "read_matrix", "read_vector"]

MATRIX_SUFFIXES = (".mtx", ".mm", ".npz", ".npy")
VECTOR_SUFFIXES = (".npy", ".txt", ".csv", ".mtx", ".mm")


def _suffix(path: Path) -> str:
    """``path``'s format suffix: a compressed Matrix Market file (``A.mtx.gz``,
    ``.mtx.bz2``, as SuiteSparse's and many FEM codes' are kept; ``scipy.io.mmread`` opens
    them) counts as ``.mtx`` (round 37: it was "no matrix file named ...")."""
    suffixes = [s.lower() for s in path.suffixes[-2:]]
    if len(suffixes) == 2 and suffixes[1] in (".gz", ".bz2") and suffixes[0] in (".mtx",
                                                                                ".mm"):
        return suffixes[0]
    return path.suffix.lower()


def is_matrix_file(name) -> bool:
    """Whether ``name`` names an existing file of a matrix format."""
    path = Path(str(name)).expanduser()
    return _suffix(path) in MATRIX_SUFFIXES and path.is_file()


def matrix_is_complex(path) -> bool | None:
    """Whether the matrix file holds complex entries, from its header only (Matrix Market's
    field, the ``.npy`` header of a ``.npy`` or of a ``.npz``'s ``data``); None: not known
    (round 39 h11: the row split over ranks refuses a complex matrix before the launch)."""
    import zipfile

    path = Path(str(path)).expanduser()
    suffix = _suffix(path)
    try:
        if suffix in (".mtx", ".mm"):
            from scipy.io import mminfo

            return mminfo(str(path))[4] in ("complex", "hermitian")
        if suffix == ".npy":
            return bool(np.iscomplexobj(np.load(str(path), mmap_mode="r")))
        if suffix == ".npz":
            with zipfile.ZipFile(path) as z, z.open("data.npy") as fh:
                version = np.lib.format.read_magic(fh)
                header = (np.lib.format.read_array_header_1_0 if version == (1, 0) else
                          np.lib.format.read_array_header_2_0)(fh)
            return bool(np.issubdtype(header[2], np.complexfloating))
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile):
        return None
    return None


def read_matrix(path):
    """The square matrix in ``path``: CSR for the sparse formats, an array for ``.npy``."""
    import scipy.sparse as sp

    path = Path(str(path)).expanduser()
    suffix = _suffix(path)
    try:
        if suffix in (".mtx", ".mm"):
            from scipy.io import mmread

            matrix = mmread(str(path))
            matrix = sp.csr_matrix(matrix) if sp.issparse(matrix) else np.asarray(matrix)
        elif suffix == ".npz":
            matrix = sp.load_npz(str(path)).tocsr()
        else:
            matrix = np.load(str(path), allow_pickle=False)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"cannot read {path.name!r} as a matrix ({suffix}): {exc}") from None
    shape = tuple(matrix.shape)
    if len(shape) != 2 or shape[0] != shape[1] or shape[0] == 0:
        raise ValueError(f"{path.name!r} holds a {'x'.join(map(str, shape))} array; a linear "
                         f"system needs a square matrix")
    from .operators import check_finite

    try:   # NaN/inf entries: said before any run folder exists
        check_finite(matrix if sp.issparse(matrix) else sp.csr_matrix(matrix))
    except ValueError as exc:
        raise ValueError(f"{path.name!r}: {exc}") from None
    return matrix


def read_vector(path, n: int) -> np.ndarray:
    """The right-hand side of ``n`` entries in ``path``: ``(n,)``, or ``(n, k)`` for ``k``
    right-hand sides (a file of ``n`` rows and ``k`` columns, as SciPy's ``spsolve(A, B)``
    takes; a ``(k, n)`` array is refused naming its transpose)."""
    path = Path(str(path)).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"no such file for the right-hand side B: {str(path)!r}")
    suffix = _suffix(path)
    if suffix not in VECTOR_SUFFIXES:
        raise ValueError(f"B {path.name!r}: expected {', '.join(VECTOR_SUFFIXES)}")
    try:
        if suffix in (".mtx", ".mm"):
            from scipy.io import mmread

            value = mmread(str(path))
            value = value.toarray() if hasattr(value, "toarray") else value
        elif suffix == ".npy":
            value = np.load(str(path), allow_pickle=False)
        else:
            value = np.loadtxt(str(path), delimiter="," if suffix == ".csv" else None,
                               ndmin=1)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"cannot read {path.name!r} as a vector: {exc}") from None
    value = np.asarray(value)
    # a complex B (a complex Matrix Market column, a complex .npy) makes a complex system
    value = value.astype(np.complex128 if np.iscomplexobj(value) else np.float64)
    if value.ndim == 2 and min(value.shape) > 1:
        if value.shape[0] == n:
            return value  # several right-hand sides, one per column
        if value.shape[1] == n:
            raise ValueError(f"B {path.name!r} is {value.shape[0]} x {value.shape[1]}: the "
                             f"right-hand sides go in its columns ({n} rows); save B.T")
        raise ValueError(f"B {path.name!r} is {value.shape[0]} x {value.shape[1]}; the "
                         f"matrix has {n} rows")
    value = value.ravel()
    if value.size != n:
        raise ValueError(f"B {path.name!r} has {value.size} entries; the matrix has {n} rows")
    return value


def default_rhs(A):
    """The right-hand side of a matrix file given without B: ``b = A 1`` (the exact solution
    all ones), or, where ``A 1 = 0`` (rows summing to zero: a pure Neumann problem, a graph
    Laplacian, whose x is defined up to a constant), ``b = A x_e`` with ``x_e`` a fixed
    random vector of mean 0 (round 44 h4: b = A 1 = 0 there, the job reported 'converged in
    0 iterations' with x = 0 and 'max error against the exact solution 1'). Returns ``(b,
    error, line)``: ``error(x)`` the max error of ``x`` against the exact solution (up to a
    constant for the singular case) and the log's line."""
    n = int(A.shape[0])
    ones = np.ones(n)
    b = np.asarray(A @ ones).ravel()
    top = float(abs(A).max()) if getattr(A, "nnz", 1) else 0.0
    if n and top > 0 and np.abs(b).max() <= 1e-12 * top * np.sqrt(n):
        xe = np.random.default_rng(0).standard_normal(n)
        xe -= xe.mean()
        b = np.asarray(A @ xe).ravel()

        def error(x):
            d = np.asarray(x).ravel() - xe
            return float(np.abs(d - d.mean()).max())
        return b, error, ("no B given: A 1 = 0 (A's rows sum to zero: x is defined up to a "
                          "constant), so b = A x_e with x_e a fixed random vector of mean 0; "
                          "the error against x_e is measured up to a constant")

    def error(x):
        return float(np.abs(np.asarray(x).ravel() - 1.0).max())
    return b, error, "no B given: b = A 1, so the exact solution is all ones"


def load_near_nullspace(value):
    """A config's ``near_nullspace`` (round 35): None, an array (a notebook's config), or a
    path: ``.npy``, ``.npz`` (its ``B``, ``near_nullspace`` or only array: pyamg's ``B``),
    or a text table (``.txt`` / ``.csv``, one row per unknown)."""
    if value is None or isinstance(value, np.ndarray):
        return value
    if isinstance(value, (list, tuple)):
        return np.asarray(value, dtype=np.float64)
    path = str(value)
    if path.endswith((".txt", ".csv", ".dat")):
        return np.loadtxt(path, delimiter="," if path.endswith(".csv") else None, ndmin=2)
    data = np.load(path, allow_pickle=False)
    if isinstance(data, np.ndarray):
        return data
    with data:
        names = [n for n in ("B", "near_nullspace") if n in data.files] or (
            data.files if len(data.files) == 1 else [])
        if not names:
            raise ValueError(f"{path}: which array is the near null space? name it 'B' or "
                             f"'near_nullspace' (it holds {', '.join(data.files) or 'nothing'})")
        return np.array(data[names[0]])
