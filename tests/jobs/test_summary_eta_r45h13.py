"""Round 45 (h13), as a terminal user: a script that polls ``python -m skiff jobs show ID
--json`` (or ``jobs --json``) for a job's progress found the fraction alone; the units done
and in all, the ETA and how long the job has been quiet, which the terminal's line shows,
were nowhere in JSON. ``Job.summary()`` (the ``job`` of every such document) now gives
``done``, ``total``, ``unit``, ``eta_s`` and ``quiet_s``.

The oracle: the job's own state (its events file, read again), a demo held at a step so
that nothing moves while it is read (no timing)."""

from __future__ import annotations

import json

import pytest

from skiff.jobs import launch
from skiff.jobs.state import shown_eta

from .waiting import wait_for


def test_a_running_jobs_document_has_its_units_and_eta(tmp_path):
    gate = tmp_path / "gate"
    job = launch("demo", {"steps": 20, "sleep": 0.01, "hold_at": 11, "hold_until": str(gate)})
    try:
        wait_for(lambda: job.refresh().done == 10, 30, "the steps before the hold")
        doc = json.loads(json.dumps(job.summary()))
        state = job.refresh()
        assert (doc["done"], doc["total"], doc["unit"]) == (10, 20, "step")
        assert doc["progress"] == 0.5
        if doc["quiet_s"] is None:  # moving: the ETA the terminal shows, to 0.1 s
            assert doc["eta_s"] == pytest.approx(shown_eta(state), abs=0.051)
            assert doc["eta_s"] is not None and doc["eta_s"] >= 0
        else:  # held longer than its pace allows (a slow machine): no ETA, as the views
            assert doc["eta_s"] is None and doc["quiet_s"] > 0
    finally:
        gate.touch()
    assert job.wait(30).status == "done"
    doc = job.summary()
    assert (doc["done"], doc["total"], doc["eta_s"], doc["quiet_s"]) == (20, 20, None, None)
