"""Round 40 (h11): what a new user meets in the terminal's help and first mistakes.

- ``plan 7b --precision bf16-mixed`` (the spelling ``train --precision`` takes) was refused
  as an invalid choice with no hint; plan now takes train's spellings. Oracle: the plan of
  the canonical spelling, and fp32's bigger memory than bf16's (4 bytes a weight, not 2).
- ``predict JOB new.csv`` of an mlp training that failed on its data said "has no table.json:
  predict needs a job that trained mlp on a table file": the job did that, and failed. It now
  says the job failed and why. Oracle: a real failed ``train mlp`` job's own error.
- ``ocr/chat/generate --help`` told ``--dry-run`` "with --launcher slurm: write the script",
  an option those commands refuse; every option of every command now has a help line (the
  ``jobs`` action had none; ``train --epochs/--batch-size`` are the kinds' own, requested).
"""

from __future__ import annotations

import argparse
import json

import pytest

import skiff.cli as cli
from skiff.cli import main


def _plan_json(capsys, *extra):
    assert main(["plan", "7b", "--devices", "8", "--device-memory", "80GB", "--json",
                 *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_plan_takes_trains_precision_spellings(capsys):
    bf16 = _plan_json(capsys, "--precision", "bf16")
    assert _plan_json(capsys, "--precision", "bf16-mixed") == bf16
    assert _plan_json(capsys, "--precision", "fp16-mixed") == _plan_json(capsys, "--precision",
                                                                          "fp16")
    fp32 = _plan_json(capsys, "--precision", "32")
    assert fp32 == _plan_json(capsys, "--precision", "fp32") != bf16
    # a typo is still refused in one line, exit 2
    assert main(["plan", "7b", "--precision", "bf17"]) == 2
    assert "--precision" in capsys.readouterr().err
    # the training's own choices are all taken by the plan (the oracle: train's parser)
    train = cli._job_parser(cli._kinds()["train"], "train")
    choices = next(a.choices for a in train._actions if "--precision" in a.option_strings)
    for value in choices:
        assert main(["plan", "7b", "--precision", value, "--json"]) == 0
        capsys.readouterr()


def _parsers():
    for kind in cli._kinds():
        yield kind, cli._job_parser(cli._kinds()[kind], kind)
    for name, command in cli.TOOLS.items():
        yield name, command.parser(prog=f"python -m skiff {name}", cli=True)


def test_dry_run_help_names_launcher_only_where_it_exists():
    seen = set()
    for name, parser in _parsers():
        options = parser._option_string_actions
        if "--dry-run" not in options:
            continue
        seen.add(name)
        if "--launcher slurm" in (options["--dry-run"].help or ""):
            assert "--launcher" in options, name
    assert {"train", "solve", "ocr", "generate"} <= seen


def test_every_option_has_a_help_line():
    missing = {name: [a.option_strings or a.dest for a in parser._actions
                      if not a.help and not isinstance(a, argparse._HelpAction)]
               for name, parser in _parsers()}
    assert {k: v for k, v in missing.items() if v} == {}


@pytest.fixture
def failed_table_job(runs_dir, tmp_path, capsys):
    data = tmp_path / "houses.csv"
    data.write_text("area,rooms,price\n50,2,\n70,3,210\n90,4,270\n")  # a target left empty
    assert main(["train", "mlp", str(data), "--target", "price", "--name", "houses"]) == 1
    said = capsys.readouterr()
    # the summary (stdout) says it failed, and so does the follower's final line on stderr,
    # however fast the job ended (round 41: it was written or not as a race decided)
    assert "failed" in said.out and "failed" in said.err and "empty cell" in said.out + said.err
    return data


def test_predict_with_a_failed_training_says_it_failed(failed_table_job, capsys):
    assert main(["predict", "houses", str(failed_table_job)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "failed" in err and "empty cell" in err  # the job's own error, repeated
    assert "has no table.json" not in err and "predict needs a job that trained" not in err


def test_a_model_named_as_its_family_calls_it_gets_the_preset(capsys):
    """``plan llama-7b`` / ``train nanogpt-mini`` named no closest name (difflib's ratio is
    under its cutoff for a prefixed name); the valid name inside the word is said. The oracle:
    the named preset is one of the planner's presets."""
    from skiff.kernels.train.plan import PRESETS

    for typed, preset in (("llama-7b", "7b"), ("llama2-70b", "70b")):
        assert main(["plan", typed]) == 2
        err = capsys.readouterr().err
        assert f"(did you mean '{preset}'?)" in err, err
        assert preset in PRESETS
    assert main(["train", "nanogpt-mini", "--dry-run"]) == 2
    assert "(did you mean 'gpt-mini'?)" in capsys.readouterr().err
    assert main(["plan", "mistral"]) == 2  # nothing inside: no guess
    assert "did you mean" not in capsys.readouterr().err
