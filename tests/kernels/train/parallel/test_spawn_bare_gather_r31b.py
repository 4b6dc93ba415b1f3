"""Round 31: a parent that spawned its training ranks (``MPI.COMM_SELF.Spawn``, a notebook's
way) and waits with a bare ``inter.gather(None, root=MPI.ROOT)`` was SIGKILLed by Hydra's
clean-up 10 s into a run whose rank 1 failed at step 2 (exit 137: a notebook's kernel gone).
The failing rank and the rank it alarms now join that gather with a notice that raises
``SpawnedRanksFailed`` in the parent (after ending the ranks' process manager), naming the
rank, the step, the cause and ``skiff.gather_from_ranks``. Oracle: one process on the same
failing data fails after the same step with the same error; the parent lives on with no
rank left. ``timeout -s KILL`` bounds the run: a hang is a failure (137), not a wait."""

from __future__ import annotations

import json

import pytest

from .test_spawn_wait_r30 import _one_process_failure, _parent


@pytest.mark.mpi
@pytest.mark.slow  # Spawn starts a process manager first (~10 s on a quiet machine)
def test_a_bare_gather_in_the_parent_raises_and_the_parent_lives():
    code, out, err = _parent("plain")
    assert code == 3, f"exit {code}\n{(out + err)[-4000:]}"
    message, steps = _one_process_failure()
    line = next(ln for ln in out.splitlines() if ln.startswith("FAILED "))
    assert line.startswith("FAILED SpawnedRanksFailed ")
    assert f"rank 1 failed after step {steps}: ValueError: {message}" in line, line
    assert "skiff.gather_from_ranks(inter, timeout=" in line
    alive = next(ln for ln in out.splitlines() if ln.startswith("ALIVE "))
    assert json.loads(alive[len("ALIVE "):]) == []
