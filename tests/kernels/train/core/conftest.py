"""The training core's tests (~3600, most of them a few milliseconds): the top conftest's
``runs_dir`` made a ``tmp_path`` folder for each; here each test gets its own run folder and
key file under one folder of the session, created only when a job writes there."""

from __future__ import annotations

import itertools

import pytest

_COUNT = itertools.count()


@pytest.fixture(scope="session")
def _core_runs_base(tmp_path_factory):
    return tmp_path_factory.mktemp("core-runs")


@pytest.fixture(autouse=True)
def runs_dir(_core_runs_base, monkeypatch):
    """Every test writes its run folders under its own folder (not yet made), as the top
    conftest's fixture, without a temporary folder per test."""
    n = next(_COUNT)
    path = _core_runs_base / f"t{n}" / "skiff-runs"
    monkeypatch.setenv("SKIFF_RUNS", str(path))
    # the key that signs run folders' code (skiff.jobs.trust): per test, never the user's
    monkeypatch.setenv("SKIFF_SECRET_FILE", str(_core_runs_base / f"secret-{n}"))
    return path
