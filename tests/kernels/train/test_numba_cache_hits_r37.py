"""Round 37 (h8's finding): numba kernels built with ``cache=True`` that call jitted closures
(the GELU of the ONNX graphs, the depthwise convolution) missed their on-disk cache in every
new process (the closures went into the cache key, which changed per process: 94 index entries
piled up), so each process compiled them again (1.2-1.5 CPU s for the first GELU call). The
helpers are module globals now. Oracle: numba's own ``stats.cache_hits`` in a second fresh
process sharing the first's cache folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("numba")

GELU = """
from skiff.kernels.train.onnx.activations import _gelu_kernels
fwd, bwd = _gelu_kernels()[np.dtype(np.float32)]
x = np.linspace(-3, 3, 50, dtype=np.float32)
y = np.empty_like(x)
fwd(x, y)
seen["gelu"] = {"hits": len(fwd.stats.cache_hits), "misses": len(fwd.stats.cache_misses)}
"""


DEPTHWISE = """
from skiff.kernels.train.core.nn.functional.conv_depthwise import _kernels
fwd = _kernels()[0]
x = np.ones((2, 1, 9, 9), np.float32); w = np.ones((2, 3, 3), np.float32)
out = np.empty((2, 1, 4, 4), np.float32)
fwd(x, w, 2, 2, out)
seen["depthwise"] = {"hits": len(fwd.stats.cache_hits), "misses": len(fwd.stats.cache_misses)}
"""


def _fresh(cache: str) -> dict:
    """Both kernels in one fresh process (round 41, h5: one process per kernel and run,
    four in all, paid four interpreters for the same counts)."""
    code = "import json, numpy as np\nseen = {}\n" + GELU + DEPTHWISE + \
        "print(json.dumps(seen))\n"
    env = {**os.environ, "NUMBA_CACHE_DIR": cache, "OPENBLAS_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_kernels_load_from_the_cache_in_a_second_process(tmp_path):
    first = _fresh(str(tmp_path))
    second = _fresh(str(tmp_path))
    for kernel in ("gelu", "depthwise"):
        assert first[kernel] == {"hits": 0, "misses": 1}, kernel   # compiled and saved
        assert second[kernel] == {"hits": 1, "misses": 0}, kernel  # loaded, not compiled
