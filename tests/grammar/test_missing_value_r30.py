"""An option typed without its value (``%train mlp --class-weight``, ``--grid`` at the end
of a line) says what the value is: the option and its metavar, and the help's first words
when short (argparse said only "expected one argument"). Checked over every option of every
kind that takes one value, against the parser's own declarations."""

from __future__ import annotations

import argparse
import re

import pytest

from skiff.grammar import GrammarError
from skiff.kinds import KINDS


def _single_value_options():
    for name, kind in sorted(KINDS.items()):
        if kind.command is None:
            continue
        parser = kind.command.parser()
        for action in parser._actions:
            if not action.option_strings or action.nargs not in (None, 1):
                continue
            if isinstance(action, (argparse._StoreConstAction, argparse._HelpAction)):
                continue
            yield name, kind.command, action


CASES = list(_single_value_options())


@pytest.mark.parametrize("name, command, action", CASES,
                         ids=[f"{n}{a.option_strings[-1]}" for n, _c, a in CASES])
def test_a_missing_value_names_what_to_give(name, command, action):
    flag = action.option_strings[-1]
    with pytest.raises(GrammarError) as got:
        command.parse(f"x {flag}", prog=f"%{name}")
    message = str(got.value)
    assert "\n" not in message
    what = action.metavar if isinstance(action.metavar, str) else action.dest.upper()
    assert f"expected one argument (give {flag} {what}" in message, message


def test_the_example_a_message_gives_parses():
    """--grid's message gives examples; each parses as the value it stands for."""
    solve = KINDS["solve"].command
    with pytest.raises(GrammarError) as got:
        solve.parse("poisson --grid", prog="%solve")
    examples = re.findall(r"\b\d+(?:x\d+)+\b", str(got.value))
    assert examples, got.value
    for example in examples:
        grid = solve.parse(f"poisson --grid {example}", prog="%solve").grid
        assert "x".join(map(str, grid)) == example
