"""Round 32, as a user: ``%train gpt-mini --steps 99999999999999999999`` said "expected a
positive integer", which it is: refused for its size alone, the line now says so (and the
limit). Words, fractions, negatives and zero read as before. The oracle: Python's own int()
of the text against the documented limit (2**63 - 1, int64)."""

from __future__ import annotations

import argparse

import pytest

from skiff.grammar import GrammarError
from skiff.grammar.common import INT_MAX, nonneg_int, positive_int
from skiff.kinds.train import COMMAND as TRAIN


@pytest.mark.parametrize("text", ["99999999999999999999", str(INT_MAX + 1), "1e20", "1e300"])
def test_too_large_says_so(text):
    assert float(text) > INT_MAX or float(text) > 2 ** 53
    for kind in (positive_int, nonneg_int):
        with pytest.raises(argparse.ArgumentTypeError, match=r"\(too large: at most 2\*\*"):
            kind(text)


@pytest.mark.parametrize("text", ["abc", "2.5", "-5", "0", "-99999999999999999999", "nan",
                                  "-1e20"])
def test_other_refusals_do_not_say_too_large(text):
    with pytest.raises(argparse.ArgumentTypeError) as err:
        positive_int(text)
    assert "too large" not in str(err.value) and repr(text) in str(err.value)


def test_the_limit_itself_is_taken():
    assert positive_int(str(INT_MAX)) == INT_MAX == int(str(INT_MAX))
    assert positive_int("1e3") == 1000


def test_the_command_line_says_it():
    with pytest.raises(GrammarError, match=r"--steps: expected a positive integer, got "
                                           r"'99999999999999999999' \(too large"):
        TRAIN.parse("gpt-mini --steps 99999999999999999999")
