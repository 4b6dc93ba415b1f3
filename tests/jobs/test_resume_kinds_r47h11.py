"""Round 47 (h11): ``jobs resume ID --OPTION VALUE`` (round 47 h6) went on for trainings
only; a solve's was "unrecognized arguments: --maxiter 400" and an OCR job's the same. Now a
solve goes on from its last iterate with the options changed (its line with ``--x0
RUN/partial.npz``, said and run, under its name), and a kind whose line cannot say where it
stopped (OCR: the pages it read) refuses in one line naming the kinds that take options.
The ``--json`` documents of ``jobs`` verbs are the same in both fronts (``%jobs show
--json`` lacked ``resume``; ``%jobs cancel ID --json`` of an ended job printed a line before
its document) and ``jobs resume --dry-run --json`` names what every kind goes on from under
``from``. Oracles: NumPy's residual of the kept iterate (where the resumed solve starts),
the files on disk, ``json.loads`` of the whole cell output."""

from __future__ import annotations

import json

import numpy as np
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from skiff.jobs import Job
from skiff.jobs.reporter import RunReporter
from tests.helpers.cli import run_cli


def _shell():
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "skiff")
    return shell


def _magic_json(shell, capsys, line):
    capsys.readouterr()
    shell.run_line_magic("jobs", line)
    return json.loads(capsys.readouterr().out)   # the cell's whole stdout: one document


def test_a_solve_goes_on_from_its_last_iterate_with_an_option_changed(capsys):
    ran = run_cli(capsys, "solve", "jump", "--grid", "32x32", "--precond", "none",
                  "--maxiter", "5", "--name", "r47s")
    assert ran.returncode == 1 and "not converged" in ran.stderr
    first = Job.load("r47s")
    kept = first.run_dir / "partial.npz"
    assert kept.is_file()
    from skiff.kernels.solve.entry import build_problem

    p = build_problem(first.config)
    A, b = p.matrix(), np.asarray(p.rhs).ravel()
    x = np.load(kept)["x"].ravel()
    start = np.linalg.norm(b - A @ x) / np.linalg.norm(b)
    plan = run_cli(capsys, "jobs", "resume", first.id, "--dry-run", "--json")
    assert json.loads(plan.stdout)["from"] == str(kept)  # the same key as a training's
    shell = _shell()
    capsys.readouterr()
    shell.run_line_magic("jobs", "resume r47s --maxiter 400 --dry-run")
    said = capsys.readouterr().out
    assert f"job {first.id} goes on from its last iterate with --maxiter 400: %solve jump" \
        in said, said
    went = run_cli(capsys, "jobs", "resume", "r47s", "--maxiter", "400", "--precond",
                   "jacobi")
    assert went.returncode == 0, went.stderr
    line = went.stderr.split("--precond jacobi: python -m skiff ", 1)[1].splitlines()[0]
    assert f"--x0 {kept}" in line and "--maxiter 400" in line
    shown = json.loads(run_cli(capsys, "jobs", "show", "r47s", "--json").stdout)
    again = Job.load(shown["id"])  # the name: the run going on, as after `jobs resume`
    assert again.id != first.id and again.config["x0"] == str(kept)
    assert again.config["maxiter"] == 400 and again.config["precond"] == "jacobi"
    assert again.result["residuals"][0] == pytest.approx(start, rel=1e-6)
    assert again.result["converged"] is True


def test_an_ocr_job_refuses_options_in_one_line_and_the_fronts_say_the_same(
        tmp_path, capsys, monkeypatch):
    page = tmp_path / "a.png"
    page.write_text("not an image")
    ran = run_cli(capsys, "ocr", str(page))
    assert ran.returncode == 1
    job_id = ran.stderr.split("skiff: ocr job ", 1)[1].split()[0]
    refused = run_cli(capsys, "jobs", "resume", job_id, "--lang", "en")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "only train (from its newest checkpoint) and solve (from its last iterate) " \
        "jobs go on with options changed" in refused.stderr
    shell = _shell()
    with pytest.raises(UsageError, match="only train .* and solve .* options changed"):
        shell.run_line_magic("jobs", f"resume {job_id} --lang en")
    plan = json.loads(run_cli(capsys, "jobs", "resume", job_id, "--dry-run",
                              "--json").stdout)
    assert plan["from"] == str(Job.load(job_id).run_dir / "results.jsonl")

    # a solve cancelled at its 4th look (as a Cancel press between its iterations): both
    # fronts' documents of every verb, key for key
    looks = []

    def should_stop(self):
        looks.append(1)
        return len(looks) >= 4

    with monkeypatch.context() as patched:
        patched.setattr(RunReporter, "should_stop", should_stop)
        ran = run_cli(capsys, "solve", "jump", "--grid", "32x32", "--precond", "none",
                      "--maxiter", "500")
    job = Job.load(ran.stderr.split("skiff: solve job ", 1)[1].split()[0])
    assert job.status == "cancelled" and (job.run_dir / "partial.npz").is_file()
    for verb in ("show", "wait", "cancel", "logs"):
        cli = json.loads(run_cli(capsys, "jobs", verb, job.id, "--json").stdout)
        magic = _magic_json(shell, capsys, f"{verb} {job.id} --json")
        assert set(cli) == set(magic), (verb, set(cli) ^ set(magic))
        assert {k: v for k, v in cli.items() if k not in ("elapsed_s", "quiet_s")} == \
            {k: v for k, v in magic.items() if k not in ("elapsed_s", "quiet_s")}
    assert magic["id"] == job.id and cli["id"] == job.id
    shown = _magic_json(shell, capsys, f"show {job.id} --json")
    assert shown["resume"] == f"python -m skiff jobs resume {job.id}"
