"""A job's ``--name`` names its newest run: the newest by the time each run was created, not
by its id, whose last part is random (two runs of one second: a resumed run made in the same
second as the run it resumes was found as the old one, and ``jobs cancel NAME`` went to it).
Oracle: the ``created`` each run folder's config records."""

from __future__ import annotations

import json

import pytest

from skiff.jobs.store import find_run_dir


def _run(root, job_id, name, created):
    d = root / job_id
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"kind": "train", "name": name,
                                               "created": created}))
    return d


@pytest.mark.parametrize("older_tail,newer_tail", [("62e8", "16e8"), ("16e8", "62e8")])
def test_the_name_is_the_newest_run_of_one_second(tmp_path, older_tail, newer_tail):
    old = _run(tmp_path, f"20261205-064712-train-{older_tail}", "nb1", 1000.0)
    new = _run(tmp_path, f"20261205-064712-train-{newer_tail}", "nb1", 1000.5)
    _run(tmp_path, "20261205-064713-train-aaaa", "other", 2000.0)
    assert find_run_dir("nb1", tmp_path) == new != old


def test_a_run_without_its_created_time_is_the_oldest(tmp_path):
    _run(tmp_path, "20261205-064712-train-ffff", "nb1", None)
    new = _run(tmp_path, "20261205-064712-train-0000", "nb1", 5.0)
    assert find_run_dir("nb1", tmp_path) == new
