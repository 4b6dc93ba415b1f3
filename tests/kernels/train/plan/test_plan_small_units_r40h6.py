"""Round 40 (h6): a small model's plan printed its memory to one decimal of a GB.

``skiff.plan(gpt_small, devices=2, device_memory="200MB")`` said "plain data parallel does
not fit: needs 0.2 GB per device ..., but a device has 0.2 GB usable" and "ZeRO-2 ...: 0.2 GB
-> 0.2 GB per device": the numbers that decide it could not be read. Under 10 GB the plan now
gives three significant digits; the oracle is the cost model's own estimate of the layout,
costed again here, and the hand count of gpt-small's bytes."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

import skiff
from skiff.kernels.train.plan.cost import Choice, estimate, model_spec
from skiff.kernels.train.plan.planner import _gb


@pytest.mark.parametrize("nbytes, text", [
    (0.1816e9, "0.182 GB"), (0.18e9, "0.180 GB"), (1e9, "1.00 GB"), (5.456e9, "5.46 GB"),
    (9.99e9, "9.99 GB"),
    (9.996e9, "10.0 GB"), (13.47e9, "13.5 GB"), (99e6, "94.4 MiB")])
def test_units_under_ten_gb_have_three_digits(nbytes, text):
    assert _gb(nbytes) == text


def test_a_small_models_does_not_fit_line_tells_the_two_numbers_apart():
    p = skiff.plan("gpt-small", devices=2, device_memory="200MB")
    line = next(r for r in p.reasons if r.startswith("plain data parallel does not fit"))
    needs, usable = map(float, re.search(r"needs ([\d.]+) GB per device.*has ([\d.]+) GB "
                                         r"usable", line).groups())
    assert needs > usable  # both were "0.2 GB"
    spec = model_spec("gpt-small")
    # the leanest plain dp layout: one sequence at a time, recomputed; 16-bit weights and
    # grads, AdamW's two fp32 moments and a fp32 master (12 bytes) per parameter
    plain = min((estimate(spec, p.cluster, Choice(2, 1, 1, 1, 0, m, rc),
                          global_batch=p.global_batch)
                 for m in (1, 2, 4, 8) for rc in (False, True)), key=lambda e: e.peak_memory)
    n = spec.n_params
    assert plain.memory["params"] == plain.memory["grads"] == 2 * n
    assert plain.memory["optimizer"] == 12 * n
    assert needs == pytest.approx(plain.peak_memory / 1e9, rel=3e-3)
    assert usable == pytest.approx(0.9 * 0.2, rel=1e-9)
    zero = next(r for r in p.reasons if r.startswith("ZeRO-2"))
    before, after = map(float, re.search(r"([\d.]+) GB -> ([\d.]+) GB per device",
                                         zero).groups())
    unsharded = estimate(spec, p.cluster, replace(p.choice, zero=0),
                         global_batch=p.global_batch)
    assert before == pytest.approx(unsharded.peak_memory / 1e9, rel=3e-3)
    assert after == pytest.approx(p.estimate.peak_memory / 1e9, rel=3e-3)
    assert before > after
