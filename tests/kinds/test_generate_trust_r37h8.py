"""Round 37: ``generate JOB`` / ``chat JOB`` of a train job's run folder builds the model as
the job built it, which for a ``%%train`` cell runs the cell's source again. The folder's
code was run without looking at its signature: anyone who could write the folder (a shared
file system) had ``generate`` run their code, while ``jobs resume`` and ``show`` refused the
same folder. ``launch`` now refuses a folder whose code is not signed by this user (the
kind's ``trusted_folders``), in one line with the ``jobs trust`` that lets it, and one
outside the runs root is named with the ``SKIFF_RUNS`` that finds it.

The oracle: a marker file the folder's cell writes when it runs."""

from __future__ import annotations

import json
import shlex

import numpy as np
import pytest

from skiff.jobs import submit
from skiff.jobs.job import Job
from skiff.jobs.trust import UntrustedJob


def _train_folder(parent, marker):
    """A train job's run folder as another user could leave it: a %%train cell (that
    writes ``marker``), weights, a result; no signature."""
    folder = parent / "20261206-000000-train-c0de"
    (folder / "logs").mkdir(parents=True)
    source = f"open({str(marker)!r}, 'w').write('ran')\n"
    (folder / "config.json").write_text(json.dumps({
        "id": folder.name, "kind": "train", "target": "skiff.kinds.train:run",
        "runner": "thread", "np": 1, "created": 1796558519.0,
        "config": {"model": "gpt-mini", "source": source}}))
    np.savez(folder / "model.npz", w=np.zeros(1))
    (folder / "result.json").write_text('{"steps": 1}')
    return folder


@pytest.mark.parametrize("inside", [True, False], ids=["in-runs", "elsewhere"])
def test_generate_refuses_an_unsigned_train_folder(runs_dir, tmp_path, inside):
    runs_dir.mkdir(exist_ok=True)
    marker = tmp_path / "ran.txt"
    folder = _train_folder(runs_dir if inside else tmp_path / "copied", marker)
    line = f"{shlex.quote(str(folder))} \"hello\""
    with pytest.raises(UntrustedJob) as info:
        submit("generate", line, front="cli")
    text = str(info.value)
    assert text.startswith(f"refusing to build a generate job's model from job {folder.name}: "
                           "its code is not signed")
    assert not marker.exists()
    assert ("SKIFF_RUNS=" in text) is not inside
    if not inside:   # the command it names trusts it
        assert text.endswith(f"SKIFF_RUNS={shlex.quote(str(folder.parent))} python -m skiff "
                             f"jobs trust {folder.name}")
    Job(folder).sign()   # trusted on purpose: its cell runs (and the job then fails: no data)
    job, _ = submit("generate", line, front="cli")
    job.wait(60)
    assert marker.read_text() == "ran"
    assert job.status == "failed" and "must define model and dataset" in job.error

