"""Round 34: meshing a flow (gmsh) left the process with SIGPIPE at its default action
(death): a notebook kernel that had run ``%solve cylinder`` died without a word at its next
write into a closed pipe (found as the CI's silent test-worker deaths). The oracle is the
kernel's own record of ignored signals (``/proc/self/status``) and a real write into a pipe
whose reader is gone, after meshing on the main thread and on a job's thread."""

from __future__ import annotations

import os
import sys
import threading

import pytest

pytest.importorskip("gmsh")
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")


def _ignored() -> bool:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("SigIgn:"):
                return bool(int(line.split()[1], 16) >> 12 & 1)
    raise AssertionError("no SigIgn line")


def _survives_a_closed_pipe() -> None:
    r, w = os.pipe()
    os.close(r)
    try:
        with pytest.raises(BrokenPipeError):
            os.write(w, b"x")
    finally:
        os.close(w)


@pytest.mark.parametrize("where", ["main", "thread"])
def test_meshing_keeps_sigpipe_ignored(where):
    from skiff.kernels.solve.flow.mesh import channel_mesh

    assert _ignored()
    if where == "main":
        channel_mesh(16)
    else:
        errors = []

        def mesh():
            try:
                channel_mesh(16)
            except Exception as exc:  # noqa: BLE001
                errors.append(exc)

        t = threading.Thread(target=mesh)
        t.start()
        t.join(120)
        assert not errors, errors
    assert _ignored()
    _survives_a_closed_pipe()
