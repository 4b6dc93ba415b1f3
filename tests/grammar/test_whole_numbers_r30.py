"""Integers as people type them (round 30): ``--steps 1e3`` is 1000, as Python's
``int(float("1e3"))``; a fraction, a word, inf or a number past float's exact integers
stays refused in one line naming the value."""

import pytest

from skiff.grammar import GrammarError
from skiff.kinds.solve import COMMAND as SOLVE
from skiff.kinds.train import COMMAND as TRAIN


@pytest.mark.parametrize("text", ["1e3", "2E4", "1.5e2", "10_000", "300", "3.0"])
def test_whole_numbers_in_any_notation(text):
    expected = int(float(text.replace("_", "")))
    assert TRAIN.parse(f"mlp --steps {text}").steps == expected
    assert SOLVE.parse(f"poisson --maxiter {text}").maxiter == expected


@pytest.mark.parametrize("text", ["2.5", "1e-3", "inf", "nan", "ten", "1e300", "0", "-1e3"])
def test_the_rest_is_refused_naming_the_value(text):
    with pytest.raises(GrammarError, match=rf"--steps: expected a positive integer, got "
                                           rf"'{text}'"):
        TRAIN.parse(f"mlp --steps {text}")
