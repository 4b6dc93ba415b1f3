"""``python -m skiff jobs rm|prune`` edge cases and two terminal jobs at once (round 26)."""

import json
import os
import subprocess
import sys

import pytest

from skiff.cli import main
from skiff.jobs import launch


def test_rm_of_one_job_named_twice_removes_it_once(capsys):
    """`jobs rm ID ID` (or its id and its name) removed the folder, then failed on the
    second with "[Errno 2] No such file or directory" (exit 2, after removing)."""
    job = launch("demo", {"steps": 1, "sleep": 0}, name="twice").wait(10)
    other = launch("demo", {"steps": 1, "sleep": 0}).wait(10)
    assert main(["jobs", "rm", job.id, job.id[-4:], "twice", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["removed"] == [job.id]
    assert not job.run_dir.exists() and other.run_dir.exists()


def test_prune_refuses_a_negative_age(capsys):
    job = launch("demo", {"steps": 1, "sleep": 0}).wait(10)
    for age in ("-5", "-1d", "nan", "infd"):
        assert main(["jobs", "prune", "--older-than", age]) == 2
        assert "expected an age like 30m" in capsys.readouterr().err
    assert job.run_dir.exists()
    assert main(["jobs", "prune", "--older-than", "0"]) == 0  # every finished job
    assert not job.run_dir.exists()


def test_two_terminal_jobs_at_once_get_their_own_folders(runs_dir):
    cmd = [sys.executable, "-m", "skiff", "solve", "poisson", "--grid", "16x16", "--json"]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env) for _ in range(2)]
    docs = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        docs.append(json.loads(out))
    ids = {d["job"]["id"] for d in docs}
    assert len(ids) == 2 and all(d["job"]["status"] == "done" for d in docs)
    listed = subprocess.run([sys.executable, "-m", "skiff", "jobs", "--json"], env=env,
                            capture_output=True, text=True, timeout=120)
    assert {j["id"] for j in json.loads(listed.stdout)} == ids


def test_wait_without_an_id_names_wait_and_a_negative_timeout_is_refused(capsys):
    """`jobs wait` alone said "jobs show needs a job ID"; `--timeout -1` was taken."""
    assert main(["jobs", "wait"]) == 2
    assert "jobs wait needs a job ID" in capsys.readouterr().err
    job = launch("demo", {"steps": 1, "sleep": 0}).wait(10)
    assert main(["jobs", "wait", job.id, "--timeout", "-1"]) == 2
    assert "--timeout: expected a number >= 0, got '-1'" in capsys.readouterr().err
    assert main(["jobs", "wait", job.id, "--timeout", "0"]) == 0  # done already


def test_skiff_runs_a_file_is_one_line_and_a_tilde_is_the_home(tmp_path, monkeypatch, capsys):
    """SKIFF_RUNS naming a file: a RunFolderError traceback (exit 1) and a listing that said
    "no jobs yet"; SKIFF_RUNS="~/runs" (quoted, so no shell expanded it) made a folder named
    '~' in the working folder."""
    afile = tmp_path / "afile"
    afile.write_text("")
    monkeypatch.setenv("SKIFF_RUNS", str(afile))
    assert main(["solve", "poisson", "--grid", "8x8"]) == 2
    err = capsys.readouterr().err
    assert "cannot create run folder" in err and "SKIFF_RUNS" in err
    assert main(["jobs"]) == 0
    assert "is a file, not a folder" in capsys.readouterr().out
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SKIFF_RUNS", "~/runs")
    monkeypatch.chdir(tmp_path)
    assert main(["solve", "poisson", "--grid", "8x8", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["job"]["run_dir"].startswith(str(tmp_path / "home" / "runs"))
    assert not (tmp_path / "~").exists()


def test_the_listing_lines_up_with_wide_names(capsys):
    """A job named with CJK characters (two columns each on a terminal) shifted every column
    after it; measured with wcwidth, the terminal's own rule."""
    import wcwidth

    launch("demo", {"steps": 1, "sleep": 0}, name="名前 e\u0301").wait(10)
    launch("demo", {"steps": 1, "sleep": 0}, name="ab").wait(10)
    assert main(["jobs"]) == 0
    lines = capsys.readouterr().out.splitlines()
    starts = {wcwidth.wcswidth(line[:line.index(" demo ") + 1]) for line in lines[1:]}
    head = lines[0]
    assert starts == {wcwidth.wcswidth(head[:head.index("KIND")])}


def test_json_stdout_holds_the_document_alone_when_the_job_prints(capsys, monkeypatch):
    """A job on a thread of the command that printed (a library's print) put its text
    before the JSON document on stdout, and `| jq` failed."""
    import skiff.kernels.solve.entry as solve_kind

    real = solve_kind.run

    def chatty(config, reporter):
        print("a library talking on stdout")
        return real(config, reporter)

    monkeypatch.setattr(solve_kind, "run", chatty)
    assert main(["solve", "poisson", "--grid", "8x8", "--json"]) == 0
    out = capsys.readouterr()
    doc = json.loads(out.out)  # the whole of stdout is one document
    assert doc["job"]["status"] == "done"
    assert "a library talking on stdout" in out.err


def test_a_json_listing_cut_by_its_limit_says_so_on_stderr(capsys):
    jobs = [launch("demo", {"steps": 1, "sleep": 0}).wait(10) for _ in range(3)]
    assert main(["jobs", "--json", "--limit", "2"]) == 0
    out = capsys.readouterr()
    assert len(json.loads(out.out)) == 2
    assert "1 older job not in this list (--limit N or --all)" in out.err
    assert main(["jobs", "--json", "--all"]) == 0
    out = capsys.readouterr()
    assert {d["id"] for d in json.loads(out.out)} == {j.id for j in jobs} and out.err == ""


def test_rm_all_points_to_prune(capsys):
    job = launch("demo", {"steps": 1, "sleep": 0}).wait(10)
    assert main(["jobs", "rm", "--all"]) == 2
    assert "jobs prune --keep 0" in capsys.readouterr().err
    assert job.run_dir.exists()
    assert main(["jobs", "prune", "--keep", "0"]) == 0
    assert not job.run_dir.exists()


def test_an_id_drawn_twice_in_one_second_is_drawn_again(monkeypatch, runs_dir):
    """300 quick jobs from one script: two drew the same id in the same second and the
    second failed with "File exists (set SKIFF_RUNS to a writable folder)"."""
    import skiff.jobs.store as store

    draws = iter(["aaaa", "aaaa", "aaaa", "bbbb"])
    monkeypatch.setattr(store.secrets, "token_hex", lambda n: next(draws))
    monkeypatch.setattr(store.time, "strftime", lambda fmt: "20260101-000000")
    first, _ = store.new_run_dir("demo")
    second, _ = store.new_run_dir("demo")
    assert (first, second) == ("20260101-000000-demo-aaaa", "20260101-000000-demo-bbbb")
    assert sorted(p.name for p in runs_dir.iterdir()) == [first, second]
    afile = runs_dir.parent / "afile"  # a runs root that is a file is still said so
    afile.write_text("")
    monkeypatch.setattr(store.secrets, "token_hex", lambda n: "cccc")
    with pytest.raises(store.RunFolderError, match="set SKIFF_RUNS to a writable folder"):
        store.new_run_dir("demo", afile)
