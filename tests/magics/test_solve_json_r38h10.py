"""Round 38 (h10): ``%solve ... --json`` was refused in a notebook ("--json is for a
terminal") while ``%jobs``, ``%predict`` and ``%plan`` take it: one grammar, so every
kind's magic takes it now, waits for the job and prints the document ``python -m skiff
solve ... --json`` prints. The oracles: SciPy's direct solve of the notebook's system, and
the terminal's own document for the same problem (its deterministic fields)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from IPython.core.interactiveshell import InteractiveShell

from skiff.cli import FAILED, OK, main

TIMES = ("time_s", "setup_time_s", "bandwidth_GBps")


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    return ip


def _doc(capsys, run) -> tuple[object, dict]:
    capsys.readouterr()
    out = run()
    printed = capsys.readouterr().out.strip().splitlines()
    assert len(printed) == 1, printed  # one document on stdout, nothing else
    return out, json.loads(printed[0])


def test_solve_json_prints_the_document_of_the_ended_job(shell, capsys):
    rng = np.random.default_rng(0)
    A = sp.diags([-1.0, 2.2, -1.0], [-1, 0, 1], shape=(300, 300)).tocsr()
    b = rng.standard_normal(300)
    shell.user_ns.update(A=A, b=b)
    out, doc = _doc(capsys, lambda: shell.run_line_magic(
        "solve", "A b --rtol 1e-12 --json -o sj"))
    job = shell.user_ns["sj"]
    assert out is None and set(doc) == {"job", "result"}
    assert doc["job"]["id"] == job.id and doc["job"]["status"] == "done"
    assert doc["result"] == json.loads(json.dumps(job.result, default=str))
    assert doc["result"]["converged"] is True
    np.testing.assert_allclose(job.value.x, spla.spsolve(A.tocsc(), b), rtol=1e-9, atol=1e-9)


def test_solve_json_is_the_terminals_document(shell, capsys):
    _, magic = _doc(capsys, lambda: shell.run_line_magic("solve", "poisson --grid 16x16 "
                                                                  "--json"))
    code, cli = _doc(capsys, lambda: main(["solve", "poisson", "--grid", "16x16", "--json"]))
    assert code == OK and set(magic) == set(cli) and set(magic["job"]) == set(cli["job"])
    drop = lambda r: {k: v for k, v in r.items() if k not in TIMES}  # noqa: E731
    assert drop(magic["result"]) == drop(cli["result"]) and magic["result"]["converged"]
    assert magic["job"]["command"] == "%solve poisson --grid 16x16"


def test_solve_json_unconverged_lists_the_failure_as_the_terminal(shell, capsys):
    words = ["poisson", "--grid", "16x16", "--maxiter", "0"]  # SciPy's: no iteration
    _, magic = _doc(capsys, lambda: shell.run_line_magic("solve", " ".join(words) +
                                                         " --json"))
    code, cli = _doc(capsys, lambda: main(["solve", *words, "--json"]))
    assert code == FAILED and cli["failed"] and magic["failed"] == cli["failed"]
    assert magic["result"]["converged"] is False


def test_solve_dry_run_json_prints_the_terminals_dry_run(shell, capsys):
    out, magic = _doc(capsys, lambda: shell.run_line_magic(
        "solve", "poisson --grid 16x16 --json --dry-run"))
    code, cli = _doc(capsys, lambda: main(["solve", "poisson", "--grid", "16x16", "--json",
                                           "--dry-run"]))
    assert out is None and code == OK and magic["config"] == cli["config"]


def test_json_with_slurm_prints_the_submission_without_waiting(shell, capsys, tmp_path,
                                                                monkeypatch):
    """``--launcher slurm --json``: the job queued on Slurm is not waited for (it may wait
    for hours): the terminal's ``{"job", "submission"}``, at once, the job queued."""
    import os

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text("#!/bin/sh\necho '4242;cluster'\n")
    (bin_dir / "sbatch").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    words = "mlp --steps 5 --launcher slurm --nodes 2 --json"
    _, magic = _doc(capsys, lambda: shell.run_line_magic("train", words + " -o slj"))
    code, cli = _doc(capsys, lambda: main(["train", *words.split()]))
    assert code == OK and set(magic) == set(cli) == {"job", "submission"}
    assert magic["submission"]["submitted"] and magic["submission"]["slurm_job_id"] == "4242"
    assert magic["job"]["status"] == "queued" == shell.user_ns["slj"].refresh().status
