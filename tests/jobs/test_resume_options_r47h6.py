"""Round 47 (h6), as a notebook user: a training stopped, then ``%jobs resume ID --lr 0.01``
(the same run with one option changed) was "unrecognized arguments: --lr 0.01", with no
word on how to do it. Now both fronts say and run the ``train`` line that goes on from the
job's newest checkpoint with that option changed (its recorded options, the option, then
``--checkpoint-dir RUN/checkpoints --resume``), under the same name (``jobs show NAME``: the
run going on, as after ``jobs resume``); a bad value is train's own line. The oracle: the
checkpoint files the first run left (``step-N.npz``) and the config the second records."""

from __future__ import annotations

import json
import shlex

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from skiff.cli import main
from skiff.jobs import Job


def test_resume_with_an_option_changed_runs_the_line_that_does_it(runs_dir, capsys):
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "skiff")
    assert main(["train", "mlp", "--steps", "4", "--checkpoint-every", "2",
                 "--name", "r47res"]) == 0
    first = Job.load("r47res")
    saved = sorted(p.name for p in (first.run_dir / "checkpoints").iterdir())
    assert saved[-1].startswith("step-") and int(saved[-1][5:].split(".")[0]) == 4
    with pytest.raises(UsageError, match=r"^%train: argument --lr"):  # the kind's own word
        shell.run_line_magic("jobs", "resume r47res --lr fast")
    capsys.readouterr()
    shown = shell.run_line_magic("jobs", "resume r47res --lr 0.01 --dry-run")
    said = capsys.readouterr().out
    assert f"job {first.id} goes on from its newest checkpoint with --lr 0.01: %train mlp " \
        in said, said
    assert shown is not None and len(list(runs_dir.iterdir())) == 1  # nothing started
    assert main(["jobs", "resume", "r47res", "--lr", "0.01"]) == 0
    err = capsys.readouterr().err
    line = err.split("with --lr 0.01: python -m skiff ", 1)[1].splitlines()[0]
    words = shlex.split(line)
    assert words[:2] == ["train", "mlp"] and "--resume" in words
    assert words[words.index("--checkpoint-dir") + 1] == str(first.run_dir / "checkpoints")
    assert words[words.index("--steps") + 1] == "8"  # as many steps again, as resume's
    assert main(["jobs", "show", "r47res", "--json"]) == 0  # the name: the run going on
    again = Job.load(json.loads(capsys.readouterr().out)["id"])
    assert again.id != first.id and again.config["lr"] == 0.01
    assert again.config["resume"] is True and again.config["steps"] == 8
    assert again.result["resumed"]["from_step"] == 4
    assert again.meta["command"] == f"python -m skiff {line}"


def test_jobs_show_of_a_failed_job_names_its_options_as_typed(runs_dir, tmp_path, capsys):
    """``jobs show`` of a training that failed on its data listed ``data_opt=bad.csv`` (the
    grammar's inner name) for ``--data bad.csv``; the name typed now, as ``--from`` and
    ``--prompt`` too. The oracle: the line typed."""
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b,y\n1,2,0\n3,x,1\n5,6,0\n")
    assert main(["train", "mlp", "--data", str(bad), "--steps", "2"]) == 1
    job_id = capsys.readouterr().err.split("skiff: train job ", 1)[1].split()[0]
    assert main(["jobs", "show", job_id]) == 0
    out = capsys.readouterr().out
    options = next(line for line in out.splitlines() if line.startswith("  options: "))
    assert f" data={bad} " in options and "data_opt" not in options, options
    assert "line 3, column 'b': 'x' is not a number" in out
