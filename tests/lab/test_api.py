"""The Jobs sidebar's REST API (``skiff.lab``) on a real Jupyter server: the list (damaged
folders included), one job's live view, its events from an offset, cancel of a job started
from a terminal (its process really ends), remove (refused while the job runs), and the
refusals (no token, unknown or path-like ids, bad arguments)."""

from __future__ import annotations

import json
import os
import signal

import pytest

from skiff.cli import CANCELLED
from skiff.jobs import launch
from skiff.jobs.store import pid_alive
from skiff.lab.payload import JobCache, events_since, job_detail, progress_label, thin

from .server import shared_api_server, start_cli_job, stop_cli_job

pytestmark = pytest.mark.slow  # a Jupyter server starts (a few seconds)


@pytest.fixture(scope="module")
def server(request, tmp_path_factory):
    return shared_api_server(request, tmp_path_factory)


@pytest.fixture
def api(server, monkeypatch):
    """The server, with this test process writing jobs where the server reads them."""
    monkeypatch.setenv("SKIFF_RUNS", str(server.runs))
    monkeypatch.setenv("SKIFF_SECRET_FILE", str(server.secret))
    return server


def _row(jobs, job_id):
    return next((j for j in jobs if j["id"] == job_id), None)


def test_list_detail_and_events_of_finished_and_damaged_jobs(api):
    job = launch("demo", {"steps": 3, "sleep": 0.0}, name="three steps").wait(60)
    assert job.status == "done", job.error
    damaged = api.runs / "broken-folder"
    damaged.mkdir()
    (damaged / "config.json").write_text("{not json")

    listing = api.get("jobs")
    assert listing["root"] == str(api.runs)
    row = _row(listing["jobs"], job.id)
    assert row["kind"] == "demo" and row["status"] == "done" and row["final"]
    assert row["name"] == "three steps" and row["fraction"] == 1.0
    assert row["progress"].startswith("100% · 3/3 steps"), row["progress"]
    assert row["started"] is not None and row["np"] == 1 and row["trust"] == "trusted"
    bad = _row(listing["jobs"], "broken-folder")
    assert bad["status"] == "damaged" and "not JSON" in bad["damaged"]

    detail = api.get(f"jobs/{job.id}")
    assert detail["job"]["id"] == job.id
    assert [p[1] for p in detail["metrics"]["value"]["points"]] == [1.0, 2.0, 3.0]
    assert any("finished 3 steps" in line["message"] for line in detail["log"])
    assert detail["summary"].startswith(f"demo {job.id} done")
    assert detail["result"]["steps"] == 3
    assert api.get("jobs/broken-folder")["job"]["status"] == "damaged"

    first = api.get(f"jobs/{job.id}/events?offset=0")
    types = [e["type"] for e in first["events"]]
    # progress is throttled (a step within the reporter's gap of the last is held back and
    # written by the next due one or the final one): 3 fast steps give 2 or 3 events
    dones = [e["done"] for e in first["events"] if e["type"] == "progress"]
    assert types[0] == "status" and 2 <= len(dones) <= 3 and dones[0] == 1 and dones[-1] == 3
    assert dones == sorted(set(dones))
    assert first["offset"] == first["size"] == (job.run_dir / "events.jsonl").stat().st_size
    assert api.get(f"jobs/{job.id}/events?offset={first['offset']}")["events"] == []
    # a client that stopped in the middle of the file gets the rest, from the next line on
    middle = first["offset"] // 2
    rest = api.get(f"jobs/{job.id}/events?offset={middle}")["events"]
    assert 0 < len(rest) < len(first["events"]) and rest[-1] == first["events"][-1]


# A terminal job that runs until it is cancelled, cheap to start (round 45: three
# `train mlp --steps 100000` cost ~2.2 CPU s each to start, a solve ~0.6): a Poisson CG
# asked for a residual under what doubles reach goes down its decades, then stands at
# the last one (until its --maxiter, 20,000 iterations of 1,000,000 unknowns: minutes).
ENDLESS = ("solve", "poisson", "--grid", "1000x1000", "--precond", "none", "--rtol", "1e-16")


def test_a_terminal_job_is_live_cancelled_then_removed(api, tmp_path):
    proc = start_cli_job(api, *ENDLESS, "--name", "long one", log=tmp_path / "cli.log")
    try:
        row = _wait_running(api, "long one")
        job_id = row["id"]
        assert row["command"].startswith("python -m skiff " + " ".join(ENDLESS))
        moved = api.wait_for("its progress moving", lambda jobs: (
            _row(jobs, job_id)["fraction"] > row["fraction"] and _row(jobs, job_id)))
        assert "decades" in moved["progress"] and "residual" in moved["progress"]
        assert api.get(f"jobs/{job_id}")["metrics"]["residual"]["count"] >= 2

        status, body = api.call("DELETE", f"jobs/{job_id}")
        assert status == 409 and "still running" in body["message"], body
        assert (api.runs / job_id).is_dir()

        status, body = api.call("POST", f"jobs/{job_id}/cancel")
        assert status == 200, body
        assert proc.wait(timeout=60) == CANCELLED  # cancelled elsewhere: the CLI's exit status 3
        assert _row(api.get("jobs")["jobs"], job_id)["status"] == "cancelled"
        status, body = api.call("POST", f"jobs/{job_id}/cancel")
        assert status == 409 and "already ended" in body["message"]

        status, body = api.call("DELETE", f"jobs/{job_id}")
        assert status == 200 and body["removed"] == [job_id]
        assert not (api.runs / job_id).exists()
        assert _row(api.get("jobs")["jobs"], job_id) is None
        assert api.call("GET", f"jobs/{job_id}")[0] == 404
    finally:
        stop_cli_job(proc)


def _wait_running(api, name: str) -> dict:
    return api.wait_for(f"job {name!r} running with progress", lambda jobs: next(
        (j for j in jobs if j["name"] == name and j["status"] == "running" and j["fraction"]),
        None))


def test_a_job_whose_process_died_is_shown_failed_with_why(api, tmp_path):
    """The terminal (or kernel) that ran a thread job is killed outright: no final event is
    ever written, and the sidebar shows the job failed, saying which process went away."""
    proc = start_cli_job(api, *ENDLESS, "--name", "killed", log=tmp_path / "cli.log")
    try:
        job_id = _wait_running(api, "killed")["id"]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        row = api.wait_for("the job shown failed", lambda jobs: (
            _row(jobs, job_id)["status"] == "failed" and _row(jobs, job_id)))
        assert f"(pid {proc.pid}) has exited" in row["inferred"], row
        assert api.call("DELETE", f"jobs/{job_id}")[0] == 200  # it has ended: removable
    finally:
        stop_cli_job(proc)


@pytest.mark.mpi
def test_cancel_stops_a_process_job_and_its_ranks(api, tmp_path):
    """A job on MPI ranks (mpiexec, started from a terminal): the server's cancel goes the
    usual way (cancel file, then a detached reaper with the identity checks), and the
    launcher and every rank are gone."""
    proc = start_cli_job(api, *ENDLESS, "--runner", "process", "--name", "on-ranks",
                         log=tmp_path / "cli.log")
    try:
        job_id = _wait_running(api, "on-ranks")["id"]
        folder = api.runs / job_id
        launcher = json.loads((folder / "process.json").read_text())["pid"]
        ranks = [int(p.read_text()) for p in (folder / "ranks").glob("*.pid")]
        assert ranks and pid_alive(launcher)
        status, body = api.call("POST", f"jobs/{job_id}/cancel")
        assert status == 200, body
        assert proc.wait(timeout=90) == CANCELLED  # cancelled elsewhere: the CLI's exit status 3
        api.wait_for("the job cancelled", lambda jobs: (
            _row(jobs, job_id)["status"] == "cancelled"))
        api.wait_for("its launcher and ranks gone", lambda jobs: not any(
            pid_alive(p) for p in [launcher, *ranks]))
    finally:
        stop_cli_job(proc)


@pytest.mark.parametrize("method, path, status", [
    ("GET", "jobs/no-such-job", 404),
    ("GET", "jobs/..", 404),
    ("GET", "jobs/%2e%2e", 404),
    ("GET", "jobs/%2Fetc", 404),
    ("DELETE", "jobs/.hidden", 404),
    ("POST", "jobs/no-such-job/cancel", 404),
    ("GET", "jobs?limit=0", 400),
    ("GET", "jobs/x/events?offset=-1", 400),
])
def test_refusals(api, method, path, status):
    code, body = api.call(method, path)
    assert code == status, body
    assert body and body.get("message")


def test_no_token_no_answer(api):
    for method, path in (("GET", "jobs"), ("POST", "jobs/x/cancel"), ("DELETE", "jobs/x")):
        assert api.call(method, path, token=False)[0] == 403


def test_payload_without_a_server(tmp_path):
    """The pieces the handlers are made of: thinning, labels, a cache that follows."""
    assert thin(list(range(10)), 4) == [0, 3, 6, 9]
    assert len(thin(list(range(10_000)))) == 400
    job = launch("demo", {"steps": 4, "sleep": 0.0}, root=tmp_path).wait(60)
    cache = JobCache(tmp_path)
    (cached,) = cache.jobs()
    assert cache.jobs()[0] is cached  # read once, then followed
    assert progress_label(cached.state).startswith("100% · 4/4 steps · value 4")
    assert job_detail(cached)["metrics"]["value"]["count"] == 4
    assert events_since(job.run_dir, 10**9)["reset"] is True
    end = (job.run_dir / "events.jsonl").stat().st_size
    with open(job.run_dir / "events.jsonl", "a") as fh:  # literals Python writes, JSON not
        fh.write('{"t": 1, "type": "info", "rate": NaN, "peak": -Infinity}\n')
    (event,) = events_since(job.run_dir, end)["events"]
    assert event["rate"] == "NaN" and event["peak"] == "-Infinity"
    (job.run_dir / "config.json").unlink()
    assert cache.jobs() == []  # a folder that is no longer a run folder is dropped
