"""A sweep killed and called again (round 32): ``sweep(..., checkpoint="file.jsonl")`` writes
each solve as it finishes and, called again with the same arguments, solves only the shapes
the file lacks. The oracle is the same sweep run without interruption (the solver stood in
for, as in ``test_sweep_modes_r31.py``; a real resumed sweep is measured in docs/aero.md).
Also: a sweep whose every shape fails warns with the first error (it returned an empty
``Samples`` silently), and a pool worker ends when the sweep's process is killed (it used to be
orphaned, waiting on its queue forever)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import types

import numpy as np
import pytest

from skiff.kernels.aero import sweep
from skiff.kernels.solve.flow import nose_job


class Killed(KeyboardInterrupt):
    pass


@pytest.fixture
def stand_in(monkeypatch):
    state = {"calls": [], "kill_after": None}

    def fake(length, bluntness, clearance, *, re, adapt, resolution, keep, mode):
        if state["kill_after"] is not None and len(state["calls"]) >= state["kill_after"]:
            raise Killed()
        state["calls"].append((length, bluntness, clearance))
        if bluntness > 0.9:
            raise RuntimeError("the steady solve did not converge")
        return types.SimpleNamespace(cd=1.0 + 0.1 * bluntness + 0.01 * length,
                                     cl=0.3 * clearance, cells=100 + int(10 * length),
                                     mode="steady")

    monkeypatch.setattr(nose_job, "solve_nose", fake)
    return state


ARGS = dict(n=12, re=200.0, clearance=(0.15, 0.3), resolution=21, np=1, seed=3)


def test_a_killed_sweep_goes_on_where_it_stopped(stand_in, tmp_path):
    whole = sweep(**ARGS)
    n_calls = len(stand_in["calls"])
    assert n_calls == 12
    path = tmp_path / "run" / "sweep.jsonl"
    stand_in["calls"].clear()
    stand_in["kill_after"] = 5
    with pytest.raises(Killed):
        sweep(**ARGS, checkpoint=path)
    lines = path.read_text().splitlines()
    assert len(lines) == 1 + 5 and json.loads(lines[0])["sweep"]["re"] == 200.0
    # the process killed while writing a row: a last line cut short is dropped
    path.write_text(path.read_text() + lines[-1][: len(lines[-1]) // 2])
    stand_in["calls"].clear()
    stand_in["kill_after"] = None
    again = sweep(**ARGS, checkpoint=path)
    assert len(stand_in["calls"]) == 12 - 5                       # only the missing shapes
    order = np.lexsort(whole.params.T)
    order2 = np.lexsort(again.params.T)
    np.testing.assert_array_equal(again.params[order2], whole.params[order])
    np.testing.assert_array_equal(again.cd[order2], whole.cd[order])
    np.testing.assert_array_equal(again.cells[order2], whole.cells[order])
    assert sorted(map(str, again.failed)) == sorted(map(str, whole.failed))
    # the file read as Samples (a sweep still running: fit on what is done)
    from skiff.kernels.aero import Samples

    loaded = Samples.load(path)
    order3 = np.lexsort(loaded.params.T)
    np.testing.assert_array_equal(loaded.cd[order3], whole.cd[order])
    assert loaded.re == 200.0 and loaded.resolution == 21 and len(loaded.failed) == \
        len(whole.failed) and loaded.domain == whole.domain
    assert "read from a sweep's checkpoint" in repr(loaded)
    # a third call solves nothing
    stand_in["calls"].clear()
    third = sweep(**ARGS, checkpoint=path)
    assert stand_in["calls"] == [] and len(third) == len(whole)


def test_a_checkpoint_of_other_settings_is_refused(stand_in, tmp_path):
    path = tmp_path / "sweep.jsonl"
    sweep(**{**ARGS, "n": 2}, checkpoint=path)
    with pytest.raises(ValueError, match=r"other settings \(re 200.0 there, 500.0 here\)"):
        sweep(**{**ARGS, "n": 2, "re": 500.0}, checkpoint=path)
    other = tmp_path / "notes.jsonl"
    other.write_text('{"a": 1}\n')
    with pytest.raises(ValueError, match="not a sweep checkpoint"):
        sweep(**{**ARGS, "n": 2}, checkpoint=other)


def test_a_sweep_where_every_shape_fails_says_so_with_the_first_error(stand_in):
    with pytest.warns(UserWarning, match=r"all 3 shapes of the sweep failed \(Samples.failed\);"
                                         r" the first: .*did not converge"):
        out = sweep(3, bluntness=(0.95, 1.0), clearance=(0.15, 0.3), re=200.0, np=1)
    assert len(out) == 0 and len(out.failed) == 3


def test_a_worker_ends_when_the_sweeps_process_is_killed(tmp_path):
    script = tmp_path / "parent.py"
    script.write_text(textwrap.dedent("""
        import multiprocessing as mp, os, sys, time
        from concurrent.futures import ProcessPoolExecutor
        from skiff.kernels.aero.sweep import _exit_with_parent

        if __name__ == "__main__":
            pool = ProcessPoolExecutor(2, mp_context=mp.get_context("spawn"),
                                       initializer=_exit_with_parent)
            futures = [pool.submit(time.sleep, 0.2) for _ in range(2)]
            [f.result() for f in futures]
            print(" ".join(str(p) for p in pool._processes), flush=True)
            time.sleep(120)
    """))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    try:
        workers = [int(p) for p in proc.stdout.readline().split()]
        assert len(workers) == 2
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 60
        alive = workers
        while alive and time.monotonic() < deadline:
            time.sleep(0.05)   # round 46: 0.2 s polls sat out up to 0.2 s after the exit
            alive = [p for p in workers if _alive(p)]
        assert not alive, f"workers {alive} outlived the sweep's process"
    finally:
        if proc.poll() is None:
            proc.kill()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False
