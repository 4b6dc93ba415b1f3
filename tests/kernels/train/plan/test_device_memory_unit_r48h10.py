"""``skiff.plan(..., device_memory="80")`` refuses a size without its unit in one line, as
``%plan --device-memory 80`` does (round 48 h10): notebook 03's cell
``skiff.plan("gpt-moe", devices=16, device_memory="80GB", nodes=2)`` with the unit left off
planned for 80-byte devices and answered that nothing fits. The oracle: the magic's own
reading of the same text (``skiff.grammar.common.byte_size``)."""

from __future__ import annotations

import argparse

import pytest

from skiff.grammar.common import byte_size as magic_size
from skiff.kernels.train.plan.planner import plan, resolve


@pytest.mark.parametrize("text", ["80", " 40 ", "80.5"])
def test_a_size_without_its_unit_is_refused_as_the_magic_refuses_it(text):
    with pytest.raises(argparse.ArgumentTypeError):
        magic_size(text)
    with pytest.raises(ValueError, match=r"would be \d+ bytes: give the unit, like '") as err:
        plan("7b", devices=8, device_memory=text)
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="give the unit"):
        resolve("auto", "7b", world_size=8, device_memory=text)


def test_sizes_with_a_unit_and_byte_counts_still_plan():
    by_text = plan("7b", devices=8, device_memory="80GB")
    by_int = plan("7b", devices=8, device_memory=magic_size("80GB"))
    assert by_text.choice == by_int.choice
