"""One permission model for everything skiff writes in a run folder (issue 15, item 7):
private by default (folders 0700, files 0600), ``SKIFF_RUNS_MODE=group`` for a group that
shares a file system (0770, 0660)."""

from __future__ import annotations

import os
import stat

import pytest

from skiff.jobs import RunFolderError, launch


def _modes(run_dir):
    found = {}
    for folder, dirs, files in os.walk(run_dir):
        for name in dirs + files:
            path = os.path.join(folder, name)
            found[os.path.relpath(path, run_dir)] = stat.S_IMODE(os.lstat(path).st_mode)
    found["."] = stat.S_IMODE(os.stat(run_dir).st_mode)
    return found


def _job_writing_everything(config, reporter):
    """Events, a log, an artifact, a checkpoint and a file a kernel writes with the umask."""
    import numpy as np

    from skiff.kernels.train.checkpoint import save_checkpoint

    reporter.log("hello")
    art = reporter.run_dir / "plot.png"
    art.write_bytes(b"png")
    reporter.artifact("plot", art, kind="image")
    save_checkpoint(reporter.run_dir / "checkpoints", {"w": np.zeros(3)}, step=1)
    (reporter.run_dir / "model.npz").write_bytes(b"weights")
    return {"ok": True}


@pytest.mark.parametrize("mode, dirs, files", [(None, 0o700, 0o600), ("group", 0o770, 0o660)])
def test_every_file_of_a_thread_job_follows_the_model(monkeypatch, mode, dirs, files):
    if mode:
        monkeypatch.setenv("SKIFF_RUNS_MODE", mode)
    old = os.umask(0o022)  # the usual umask: what made events and checkpoints 0644
    try:
        job = launch("demo", {}, fn=_job_writing_everything).wait(20)
    finally:
        os.umask(old)
    assert job.status == "done", job.error
    modes = _modes(job.run_dir)
    for required in (".", "config.json", "events.jsonl", "result.json", "logs/rank0.log",
                     "artifacts", "checkpoints/step-00000001.npz", "model.npz"):
        assert required in modes, sorted(modes)
    wrong = {p: oct(m) for p, m in modes.items()
             if m != (dirs if os.path.isdir(job.run_dir / p) else files)}
    assert not wrong, wrong


def test_events_file_is_private_from_its_first_line(runs_dir):
    old = os.umask(0o022)
    try:
        job = launch("demo", {"steps": 200, "sleep": 0.01})
        assert stat.S_IMODE(os.stat(job.run_dir / "events.jsonl").st_mode) == 0o600
        assert stat.S_IMODE(os.stat(job.run_dir).st_mode) == 0o700
    finally:
        os.umask(old)
        job.cancel()
        job.wait(20)


def test_process_job_files_follow_the_model(runs_dir, monkeypatch):
    from skiff.jobs.process import find_mpiexec

    try:
        find_mpiexec()
    except RuntimeError as exc:
        pytest.skip(str(exc))
    monkeypatch.setenv("SKIFF_RUNS_MODE", "group")
    job = launch("demo", {"steps": 2, "sleep": 0}, np=2).wait(60)
    assert job.status == "done", job.error
    modes = _modes(job.run_dir)
    assert {"process.json", "logs/launcher.log", "ranks/1.pid", "logs/fault-rank1.txt"} <= \
        set(modes)
    wrong = {p: oct(m) for p, m in modes.items()
             if m != (0o770 if os.path.isdir(job.run_dir / p) else 0o660)}
    assert not wrong, wrong


def test_unknown_mode_is_one_clear_line(monkeypatch):
    monkeypatch.setenv("SKIFF_RUNS_MODE", "world")
    with pytest.raises(RunFolderError, match="SKIFF_RUNS_MODE='world': choose from private, "
                                             "group"):
        launch("demo", {"steps": 1})
