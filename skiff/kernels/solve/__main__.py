"""``python -m skiff.kernels.solve``: load (compile into numba's disk cache when it is cold) the
solver's numba kernels, so that the first solve of a new process finds them cached.
``make install`` runs it."""

import time

from skiff.kernels.solve import fused
from skiff.kernels.solve.solver import load_numba

t0 = time.perf_counter()
load_numba()
what = "numba" if fused.numba_loaded() else "numba not available: the numpy references"
print(f"solver kernels ready in {time.perf_counter() - t0:.2f} s ({what})")
