"""The textbook ILU(0) (Saad, Algorithm 10.4) on a dense copy: the oracle of skiff's sparse
ILU(0)/IC(0) kernel (``skiff/kernels/solve/ilu0.py``) in the one-rank and block tests."""

from __future__ import annotations

import numpy as np


def dense_ilu0(A):
    """L\\U of ``A``'s ILU(0) in one dense array (L's unit diagonal left out)."""
    a = A.toarray()
    pattern = a != 0
    n = a.shape[0]
    for i in range(1, n):
        for k in range(i):
            if pattern[i, k]:
                a[i, k] /= a[k, k]
                a[i, k + 1:] -= np.where(pattern[i, k + 1:], a[i, k] * a[k, k + 1:], 0.0)
    return a
