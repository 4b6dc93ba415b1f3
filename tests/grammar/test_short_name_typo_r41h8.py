"""Round 41, as a user: ``plan 7x`` (one key off ``7b``) got the list of presets and no
closest name: difflib's ratio for two characters with one different is 0.5, under its 0.6
cutoff. The one name of the same length one character away is suggested now; a word two
characters away, or as near to two names, still gets none. The oracle: the names the
planner itself takes (``plan 7b`` gives a plan)."""

from __future__ import annotations

import pytest

from skiff.cli import OK, USAGE, main
from skiff.grammar.common import did_you_mean


@pytest.mark.parametrize("typed, meant", [("7x", "7b"), ("13m", "13b")])
def test_a_preset_one_key_off_is_suggested(typed, meant, capsys):
    assert main(["plan", typed]) == USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"(did you mean {meant!r}?)" in err[0], err
    assert main(["plan", meant]) == OK  # the suggestion is a name the planner takes
    assert f"Plan for {meant}" in capsys.readouterr().out


def test_two_keys_off_or_two_names_as_near_get_none():
    assert did_you_mean("xy", ["7b", "cg"]) == ""          # two characters differ
    assert did_you_mean("cx", ["cg", "cr"]) == ""          # as near to both
    assert did_you_mean("--restrat", ["--restart", "--re"]) == " (did you mean '--restart'?)"


def test_an_option_that_starts_with_a_valid_one_names_it(capsys):
    """``train mlp --lrate 3`` was told "did you mean '--strategy'?" (difflib's weak pick,
    ratio 0.62): the option the word starts with is named now; a near spelling keeps its
    own (``--restrat`` -> ``--restart``, ratio 0.88)."""
    assert main(["train", "mlp", "--lrate", "3"]) == USAGE
    err = capsys.readouterr().err
    assert "(did you mean '--lr'?)" in err and "--strategy" not in err, err
    assert main(["solve", "poisson", "--restrat", "5"]) == USAGE
    assert "(did you mean '--restart'?)" in capsys.readouterr().err
