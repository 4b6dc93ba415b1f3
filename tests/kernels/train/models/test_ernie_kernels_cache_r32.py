"""The few-rows kernels load from numba's cache in a new process (round 32).

They share one 4x2 block (``block42``); held in a closure cell, it made numba's cache key
differ in every process (a closure's cells are hashed, a dispatcher pickles with a fresh
id), so each new process compiled both kernels again: 3-4 s before a CLI's first decode
step. Oracle: numba's own cache log (``NUMBA_DEBUG_CACHE``) in a second process.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("numba")

CALLS = """
import numpy as np
from skiff.kernels.train.models import ernie_kernels as K
ks = K._kernels()
x = np.ones((4, 64), np.float32); w = np.ones((10, 64), np.float32)
ks[2](x, w, np.empty((4, 10), np.float32))
ks[3](x, np.ones((10, 64), np.uint16), np.empty((4, 10), np.float32))
"""


def _run():
    env = dict(os.environ, NUMBA_DEBUG_CACHE="1", OPENBLAS_NUM_THREADS="1")
    env.pop("NUMBA_DISABLE_JIT", None)
    proc = subprocess.run([sys.executable, "-c", CALLS], capture_output=True, text=True,
                          timeout=300, env=env, cwd=os.path.dirname(os.path.dirname(
                              os.path.dirname(os.path.dirname(os.path.dirname(
                                  os.path.abspath(__file__)))))))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout + proc.stderr


def test_the_few_rows_kernels_are_not_compiled_again_in_a_new_process():
    # compiled (or loaded) and saved here, in the test's own process (round 41: was a first
    # process of its own; in a run of the folder the fast path has compiled them already)
    exec(CALLS, {})
    log = _run()
    kernels = [line for line in log.splitlines() if "few_rows" in line]
    assert any("data loaded" in line for line in kernels), log
    assert not any("saved" in line for line in kernels), log
