"""Run-folder trust (issue 11, item 7): the code a job runs is signed with this user's key,
and resume, show/attach, the monitor's Resume and the MPI worker refuse unsigned or altered
code, saying how to trust it on purpose."""

from __future__ import annotations

import json
import os
import stat

import pytest

from skiff.cli import main
from skiff.jobs import Job, UntrustedJob, jobs_action, launch, resume
from skiff.jobs.trust import secret_file, verdict

CELL = "model = skiff.models.mlp()\ndataset = \"blobs\"\n"


def _train_job():
    from skiff.kinds.train import to_config

    config = to_config({"source": CELL, "steps": 2})

    def fake_train(cfg, reporter):
        (reporter.run_dir / "checkpoints").mkdir()
        return {}

    return launch("train", config, fn=fake_train).wait(10)


def _edit(job, change):
    meta = json.loads((job.run_dir / "config.json").read_text())
    change(meta)
    (job.run_dir / "config.json").write_text(json.dumps(meta))
    return Job(job.run_dir)


def test_create_signs_with_a_private_key_outside_the_folder(runs_dir):
    job = _train_job()
    assert job.trust == "trusted" and job.meta["signature"]["algorithm"] == "hmac-sha256"
    key = secret_file()
    assert key.is_file() and stat.S_IMODE(key.stat().st_mode) == 0o600
    assert runs_dir not in key.parents
    assert len(key.read_bytes()) >= 32


def test_altered_cell_source_is_refused_by_resume_and_show(runs_dir):
    job = _train_job()
    evil = _edit(job, lambda m: m["config"].update(source="import os; os.system('id')"))
    assert evil.trust == "altered"
    with pytest.raises(UntrustedJob, match=rf"refusing to resume job {job.id}: its code was "
                                           "changed after it was signed.*jobs trust"):
        resume(evil)
    for action in ("show", "attach", "wait"):
        with pytest.raises(UntrustedJob, match=f"refusing to {action}"):
            jobs_action(action, job.id)


def test_unsigned_folder_is_refused_by_the_monitor_resume(runs_dir):
    from skiff.widgets.monitor import JobMonitor

    job = _train_job()
    bare = _edit(job, lambda m: m.pop("signature"))
    mon = JobMonitor(start=False)
    assert mon.resume(bare) is None
    assert "its code is not signed" in mon.message.value
    assert f"python -m skiff jobs trust {job.id}" in mon.message.value
    assert len(mon.rows) == 1  # nothing was launched
    mon.show(bare)
    assert "refusing to show" in mon.message.value and not mon.detail.children
    mon.close()


def test_signed_by_another_users_key_is_altered(runs_dir, tmp_path, monkeypatch):
    job = _train_job()
    monkeypatch.setenv("SKIFF_SECRET_FILE", str(tmp_path / "someone-else"))
    assert verdict(Job(job.run_dir).meta) == "altered"


def test_trust_on_purpose_from_the_terminal(runs_dir, capsys):
    job = _train_job()
    _edit(job, lambda m: m["config"].update(steps=3))
    assert main(["jobs", "show", job.id]) == 2
    err = capsys.readouterr().err
    assert f"python -m skiff jobs trust {job.id}" in err and err.count("\n") == 1
    assert main(["jobs", "trust", job.id]) == 0
    assert main(["jobs", "show", job.id]) == 0
    trusted = Job(job.run_dir)
    assert trusted.trust == "trusted" and trusted.config["steps"] == 3


def test_worker_refuses_altered_code_and_runs_nothing(runs_dir):
    from skiff.jobs.process import ProcessRunner, find_mpiexec

    try:
        find_mpiexec()
    except RuntimeError as exc:
        pytest.skip(str(exc))
    job = Job.create("demo", {"steps": 1, "sleep": 0}, target="skiff.kinds.demo:run",
                     runner="process", np=1)
    job = _edit(job, lambda m: m.update(target="skiff.kinds.demo:run_elsewhere"))
    ProcessRunner().start(job, 1).wait(60)
    assert job.status == "failed"
    assert "refusing to run job" in job.error and "jobs trust" in job.error
    assert "running" not in [e.get("status") for e in job.events()]
    assert not (job.run_dir / "result.json").exists()
    assert not (job.run_dir / "ranks" / "0.pid").exists()


def test_worker_runs_signed_code(runs_dir):
    from skiff.jobs.process import find_mpiexec

    try:
        find_mpiexec()
    except RuntimeError as exc:
        pytest.skip(str(exc))
    assert os.environ["SKIFF_SECRET_FILE"]
    job = launch("demo", {"steps": 1, "sleep": 0}, np=1, runner="process").wait(60)
    assert job.status == "done", job.error
