"""``skiff.gather_from_ranks`` / ``skiff.wait_for_ranks`` / ``skiff.SpawnedRanksFailed``: a
notebook that spawned its ranks (``MPI.COMM_SELF.Spawn``) reaches them at the top level, as
the same objects as their home module, without loading the training core."""

from __future__ import annotations

import subprocess
import sys


def test_the_spawn_helpers_are_top_level_and_light():
    code = ("import sys, skiff\n"
            "from skiff.kernels.train.parallel import spawned\n"
            "assert skiff.gather_from_ranks is spawned.gather_from_ranks\n"
            "assert skiff.wait_for_ranks is spawned.wait_for_ranks\n"
            "assert issubclass(skiff.SpawnedRanksFailed, RuntimeError)\n"
            "assert skiff.SpawnedRanksFailed is spawned.SpawnedRanksFailed\n"
            "assert {'gather_from_ranks', 'wait_for_ranks', 'SpawnedRanksFailed'} <= "
            "set(dir(skiff))\n"
            "print('core' if 'skiff.kernels.train.core.tensor' in sys.modules else 'light')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "light"
