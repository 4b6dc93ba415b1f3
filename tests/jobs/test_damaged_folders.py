"""One damaged run folder never breaks a listing (issue 15, item 4): ``python -m skiff jobs``,
``%jobs`` and ``JobMonitor`` list every other job and show the damaged one with why."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from skiff.cli import main
from skiff.jobs import DamagedJob, Job, jobs_action, launch, list_jobs

ROOT = Path(__file__).resolve().parents[2]


def _good_and_damaged(runs_dir):
    """One healthy job and four folders damaged as a careless hand (or a crash) does."""
    good = launch("demo", {"steps": 1, "sleep": 0}).wait(10)
    meta = json.loads((good.run_dir / "config.json").read_text())
    damaged = {}

    def copy(name, text):
        path = runs_dir / name
        shutil.copytree(good.run_dir, path)
        (path / "config.json").write_text(text)
        damaged[name] = path

    copy("20000101-000001-demo-xxxx", "x")                                  # printf x > ...
    copy("20000101-000002-demo-list", json.dumps([meta]))                   # a JSON list
    copy("20000101-000003-demo-np", json.dumps(meta | {"np": "two"}))       # np not an int
    copy("20000101-000004-demo-nokind", json.dumps({"id": "a"}))
    copy("20000101-000005-demo-dir", "")
    (damaged["20000101-000005-demo-dir"] / "config.json").unlink()
    (damaged["20000101-000005-demo-dir"] / "config.json").mkdir()  # a folder in its place
    return good, damaged


def test_cli_lists_every_job_and_names_each_damage(runs_dir, capsys):
    good, damaged = _good_and_damaged(runs_dir)
    assert main(["jobs"]) == 0
    out = capsys.readouterr().out
    lines = {line.split()[0]: line for line in out.splitlines()}
    assert "done" in lines[good.id]
    assert "damaged" in lines["20000101-000001-demo-xxxx"]
    assert "config.json is not JSON" in lines["20000101-000001-demo-xxxx"]
    assert "holds a JSON list, not an object" in lines["20000101-000002-demo-list"]
    assert "np must be a positive integer, got \"two\"" in lines["20000101-000003-demo-np"]
    assert "config.json has no 'kind'" in lines["20000101-000004-demo-nokind"]
    assert "cannot be read: Is a directory" in lines["20000101-000005-demo-dir"]
    assert main(["jobs", "--json"]) == 0
    docs = {d["id"]: d for d in json.loads(capsys.readouterr().out)}
    assert docs[good.id]["status"] == "done"
    assert docs["20000101-000002-demo-list"]["status"] == "damaged"


def test_show_of_a_damaged_job_is_one_line(runs_dir, capsys):
    _good_and_damaged(runs_dir)
    assert main(["jobs", "show", "20000101-000002-demo-list"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "is damaged: config.json holds a JSON list" in err


def test_jobs_magic_and_monitor_list_the_rest(runs_dir):
    from IPython.core.interactiveshell import InteractiveShell

    from skiff.widgets.monitor import JobMonitor

    good, damaged = _good_and_damaged(runs_dir)
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "skiff")
    table = shell.run_line_magic("jobs", "")
    html = table._repr_html_()
    assert good.id in html and html.count("skiff-damaged") == len(damaged)
    assert "np must be a positive integer" in html
    mon = JobMonitor(start=False)
    assert set(mon.rows) == {good.id, *damaged}
    assert "damaged" in mon.rows["20000101-000003-demo-np"].status.value
    assert "positive integer" in mon.rows["20000101-000003-demo-np"].reason.value
    assert "done" in mon.rows[good.id].status.value
    mon.close()


def test_listing_from_python_marks_damaged_jobs(runs_dir):
    good, damaged = _good_and_damaged(runs_dir)
    jobs = list_jobs()
    assert [type(j) for j in jobs].count(DamagedJob) == len(damaged)
    assert {j.id for j in jobs if isinstance(j, Job)} == {good.id}
    assert len(jobs_action("list")) == len(damaged) + 1


def test_unreadable_folder_is_listed_as_damaged(runs_dir):
    """A colleague's private folder, listed by a user who cannot read it (as root, in a child
    process without the capabilities that let root read everything)."""
    good = launch("demo", {"steps": 1, "sleep": 0}).wait(10)
    other = runs_dir / "20000101-000009-demo-priv"
    shutil.copytree(good.run_dir, other)
    cmd = [sys.executable, "-c", "import sys; from skiff.cli import main; sys.exit(main(['jobs']))"]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: root reads every folder")
        os.chown(other, 65534, 65534)  # someone else's, 0700
        cmd = [setpriv, "--bounding-set=-dac_override,-dac_read_search", *cmd]
    else:
        os.chmod(other, 0o000)
    try:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    finally:
        os.chmod(other, 0o700)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = {line.split()[0]: line for line in proc.stdout.splitlines()}
    assert "damaged" in lines[other.name] and "permission denied" in lines[other.name]
    assert "done" in lines[good.id]


def test_json_rows_of_good_and_damaged_jobs_have_the_same_fields(runs_dir, capsys):
    """A damaged row had no ``trust`` and a good one no ``damaged``: a script reading
    ``jobs --json`` met a KeyError on one or the other."""
    _good_and_damaged(runs_dir)
    assert main(["jobs", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    kinds = {row["status"] == "damaged" for row in rows}
    assert kinds == {True, False}
    assert len({frozenset(row) for row in rows}) == 1
