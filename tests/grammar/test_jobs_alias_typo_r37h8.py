"""Round 37: a typo of an action's short name (``jobs lss``, ``jobs lgo``) was taken for a
job's id ("'lss' is no action ...; a job? jobs show lss"). It is now suggested as the short
name it is close to; the oracle is the action that name is (``ls``: ``list``)."""

from __future__ import annotations

import re

import pytest

from skiff.grammar.common import GrammarError
from skiff.grammar.jobs import ACTION_ALIASES, JOBS


@pytest.mark.parametrize("typo", ["lss", "lgo"])
def test_a_short_name_misspelt_is_suggested(typo):
    with pytest.raises(GrammarError) as info:
        JOBS.parse(typo)
    named = re.search(r"did you mean '(\w+)'\?", str(info.value)).group(1)
    assert named in ACTION_ALIASES
    assert JOBS.parse(named).action == ACTION_ALIASES[named]   # what the suggestion runs
    assert "jobs show" not in str(info.value)


def test_an_id_is_still_taken_for_a_job():
    with pytest.raises(GrammarError, match="'7a00' is no action .*; a job\\? jobs show 7a00"):
        JOBS.parse("7a00")
