"""``solve PROBLEM --OPTION VALUE`` where PROBLEM does not read OPTION is refused when the
option is typed, even at its default: ``cylinder --grid 256x256`` and ``cylinder --rtol
1e-8`` passed silently (the check compared the value with the default). The oracle is the
refusal of the same option typed off its default, which the check always made; and what a
panel sends (values without what was typed) and renders must still be accepted."""

from __future__ import annotations

import pytest

from skiff.cli import main
from skiff.jobs.launch import dry_run
from skiff.kinds.solve import COMMAND

DEFAULTS = COMMAND.defaults()


@pytest.mark.parametrize("line, off_default", [
    ("cylinder --grid 256x256", "cylinder --grid 128x128"),
    ("cylinder --rtol 1e-8", "cylinder --rtol 1e-6"),
    ("cylinder --precond auto", "cylinder --precond jacobi"),
    ("train-nose --grid 256x256", "train-nose --grid 64x64"),
    ("poisson --contrast 1000", "poisson --contrast 10"),
])
def test_an_option_the_problem_does_not_read_is_refused_at_its_default(line, off_default,
                                                                       runs_dir):
    with pytest.raises(ValueError) as oracle:
        dry_run("solve", off_default, front="magic")
    with pytest.raises(ValueError) as typed:
        dry_run("solve", line, front="magic")
    assert str(typed.value) == str(oracle.value)  # the same refusal, naming the option
    with pytest.raises(ValueError) as cli:  # a terminal's typed argv: the same
        dry_run("solve", values=vars(COMMAND.parse(line.split(), cli=True)), front="cli",
                typed=line.split())
    assert str(cli.value) == str(oracle.value)
    assert not runs_dir.exists() or not any(runs_dir.iterdir())


def test_the_cli_exits_2_naming_the_option(capsys, runs_dir):
    assert main(["solve", "cylinder", "--grid", "256x256", "--dry-run"]) == 2
    assert "--grid is not an option of problem 'cylinder'" in capsys.readouterr().err


@pytest.mark.parametrize("problem", ["cylinder", "train-nose", "poisson", "jump"])
def test_a_panels_values_and_its_rendered_line_are_accepted(problem, runs_dir):
    # a panel hands every field, the other problems' at their defaults, and no typed words
    values = {**DEFAULTS, "problem": problem}
    doc = dry_run("solve", values=dict(values), front="magic")
    assert doc["kind"] == "solve"
    # the line it renders (and records) leaves the defaults out: typed again, accepted
    line = COMMAND.render(values).removeprefix("%solve ")
    assert dry_run("solve", line, front="magic")["config"] == doc["config"]
