"""Bad numbers on a command line give one line naming the value (issue 15.9)."""

import pytest

from skiff.grammar import GrammarError, user_message
from skiff.kinds.solve import COMMAND as SOLVE
from skiff.kinds.solve import parse_spec
from skiff.kinds.solve import to_config as solve_config
from skiff.kinds.train import COMMAND as TRAIN
from skiff.kinds.train import to_config as train_config


def _one_line(exc) -> str:
    message = user_message(exc)
    assert message is not None and "\n" not in message.strip()
    return message


@pytest.mark.parametrize("line, needle", [
    ("poisson --rtol inf", "'inf' (not finite)"),
    ("poisson --rtol nan", "'nan' (not finite)"),
    ("poisson --rtol 2", "between 0 and 1"),
    ("poisson --rtol 1", "between 0 and 1"),
    ("poisson --atol inf", "'inf' (not finite)"),
    ("poisson --grid -4x4", "each size of a grid is at least 2, got -4 in '-4x4'"),
    ("poisson --maxiter -1", "expected an integer >= 0, got '-1'"),
    ("poisson --rtol -inf", "got '-inf'"),
])
def test_solve_line_refuses(line, needle):
    with pytest.raises(GrammarError) as err:
        SOLVE.parse(line)
    assert needle in _one_line(err.value)


@pytest.mark.parametrize("line, needle", [
    ("gpt-mini --lr inf", "got 'inf' (not finite)"),
    ("gpt-mini --lr nan", "got 'nan' (not finite)"),
    ("gpt-mini --steps 99999999999999999999", "got '99999999999999999999'"),
])
def test_train_line_refuses(line, needle):
    with pytest.raises(GrammarError) as err:
        TRAIN.parse(line)
    assert needle in _one_line(err.value)


def test_train_steps_have_a_sane_bound():
    with pytest.raises(ValueError) as err:
        train_config(vars(TRAIN.parse("gpt-mini --steps 9999999999")))
    assert "--steps must be from 1 to 1,000,000,000, got 9999999999" in _one_line(err.value)
    assert train_config(vars(TRAIN.parse("gpt-mini --steps 3")))["steps"] == 3


def test_a_grid_too_big_for_the_device_is_refused_before_the_job():
    with pytest.raises(ValueError) as err:
        solve_config(vars(SOLVE.parse("poisson --grid 1000000x1000000 --device cpu")))
    message = _one_line(err.value)
    assert message.startswith("grid 1000000x1000000 needs at least")
    assert "TiB on cpu" in message and "smaller --grid" in message
    assert solve_config(vars(SOLVE.parse("poisson --grid 64x64 --device cpu")))["grid"] == \
        [64, 64]


@pytest.mark.parametrize("options, needle", [
    ("maxiter=-1", "maxiter must be an integer >= 0"),
    ("rtol=abc", "rtol must be a number, got 'abc'"),
    ("rtol=2", "rtol is a relative tolerance and must be below 1"),
    ("rtol=inf", "rtol must be a finite number"),
    ("restart=0", "restart must be a positive integer"),
])
def test_cell_options_are_checked(options, needle):
    spec = parse_spec(f"domain: 32x32\nsolver: cg mg {options}")
    with pytest.raises(ValueError) as err:
        solve_config({"spec": spec, "device": "cpu"})
    assert needle in _one_line(err.value)


@pytest.mark.parametrize("argv, needle", [
    (["solve", "poisson", "--grid", "-4x4"], "got -4 in '-4x4'"),
    (["solve", "poisson", "--rtol", "2"], "between 0 and 1"),
    (["train", "gpt-mini", "--lr", "inf"], "(not finite)"),
    (["train", "gpt-mini", "--steps", "2", "--np", "100000"], "--oversubscribe"),
])
def test_the_cli_says_it_in_one_line_and_exits_2(argv, needle, capsys, runs_dir):
    from skiff.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and "\n" not in err and "Traceback" not in err
    assert not runs_dir.exists() or not any(runs_dir.iterdir())
