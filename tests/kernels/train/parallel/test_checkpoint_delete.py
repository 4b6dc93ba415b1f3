"""Deleting an old sharded checkpoint removes its commit marker first (issue 15, item 8): a
process killed while deleting never leaves a manifest over missing shards."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np

from skiff.kernels.train.parallel import SelfComm
from skiff.kernels.train.parallel.checkpoint import (
    FlatShard,
    list_sharded,
    load_sharded,
    save_sharded,
)

from .mpi_util import ROOT

# saves steps 1 and 2 with keep=1; while deleting step 1 the process is SIGKILLed right after
# the first file of the folder goes (the deletion is real, the moment is chosen)
KILLED_WHILE_DELETING = textwrap.dedent("""
    import os, shutil, signal, sys
    import numpy as np
    from skiff.kernels.train.parallel import SelfComm
    from skiff.kernels.train.parallel import checkpoint as ck

    root = sys.argv[1]

    def rmtree_killed_midway(path, ignore_errors=False):
        for name in sorted(os.listdir(path)):
            if name.startswith("shard"):
                os.unlink(os.path.join(path, name))
                break
        os.kill(os.getpid(), signal.SIGKILL)

    for step in (1, 2):
        if step == 2:
            ck.shutil.rmtree = rmtree_killed_midway
        ck.save_sharded(root, SelfComm(), replicated={"x": np.full(3, step)}, step=step, keep=1)
""")


def test_kill_while_deleting_leaves_no_manifest_over_missing_shards(tmp_path):
    proc = subprocess.run([sys.executable, "-c", KILLED_WHILE_DELETING, str(tmp_path)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                               "OPENBLAS_NUM_THREADS": "1"})
    assert proc.returncode == -9, proc.stderr
    old = tmp_path / "step-00000001"
    assert old.exists() and not list(old.glob("shard-*"))  # killed inside the deletion
    assert not (old / "manifest.json").exists()
    assert [p.name for p in list_sharded(tmp_path)] == ["step-00000002"]
    assert load_sharded(tmp_path, SelfComm())["step"] == 2
    # the next save removes the partial folder
    save_sharded(tmp_path, SelfComm(), replicated={"x": np.zeros(3)},
                 sharded={"m": FlatShard(np.arange(4.0), 4)}, step=3, keep=1)
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["step-00000003"]
