"""The plan a user sees (round 31, h18): memory in a readable unit, and the cost model's step
time labelled as what it is (matmuls and messages, fixed costs left out), not a promise.

Oracles: the estimate's own bytes divided by hand (1 PB = 10^15 bytes, decimal as
``--device-memory 80GB`` reads), and Python's own count of the model's parameters."""

import re

import pytest

from skiff.jobs.dryrun_document import dry_run_lines
from skiff.jobs.launch import dry_run
from skiff.kernels.train.plan import plan
from skiff.kernels.train.plan.cost import Choice, estimate, model_spec
from skiff.kernels.train.plan.planner import STEP_SHORT, _gb, _sec, cluster_for, step_note


def test_huge_memory_is_in_a_readable_unit():
    # the activations of a 10^8-token sequence: printed "200000844.8 GB" before
    with pytest.raises(ValueError) as err:
        plan("gpt-mini", devices=1, device_memory="80GB", seq_len=100_000_000)
    text = str(err.value)
    assert not re.search(r"\d{5,}(\.\d)? GB", text), text
    spec = model_spec("gpt-mini", seq_len=100_000_000)
    least = estimate(spec, cluster_for(1, memory=80 * 10**9),
                     Choice(micro_batch=1, recompute=True), global_batch=1)
    said = float(re.search(r"needs ([\d.]+) PB per device", text).group(1))
    assert said == pytest.approx(least.peak_memory / 1e15, rel=5e-3)
    assert "72.0 GB usable" in text  # the everyday sizes keep their unit


@pytest.mark.parametrize("nbytes, text", [
    (2**20 * 3.25, "3.2 MiB"), (72e9, "72.0 GB"), (999.9e9, "999.9 GB"),
    (1116.7e9, "1.12 TB"), (2.000008448e17, "200 PB"), (20000339597.5e9, "20 EB"),
    (3e24, "3e+24 bytes")])
def test_units(nbytes, text):
    assert _gb(nbytes) == text


@pytest.mark.parametrize("seconds, text", [
    (1.96e-5, "0.0196 ms"), (0.0613, "0.0613 s"), (90, "90 s"), (600, "10 min"),
    (3 * 3600, "3 h"), (3 * 86400, "3 days"), (8.55e7, "2.71 years")])
def test_seconds(seconds, text):
    assert _sec(seconds) == text


def test_parameters_are_counted_in_millions_below_a_tenth_of_a_billion():
    from skiff.kernels.train import models

    n = sum(int(p.size) for p in models.get("gpt-mini").parameters())
    p = plan("gpt-mini", devices=2, device_memory="80GB", top=1)
    assert f"({n / 1e6:.3g} M params)" in repr(p)
    assert "(6.76 B params)" in repr(plan("7b", devices=8, device_memory="80GB", top=1))


def test_the_step_time_says_what_it_counts_and_leaves_out():
    cpu = cluster_for(None, world_size=2, flops=1e10)
    gpu = cluster_for(2, memory=80 * 10**9)
    assert "matmuls and messages only" in step_note(cpu)
    assert "left out" in step_note(cpu) and "5-10x this for gpt-mini" in step_note(cpu)
    assert "kernel launches" in step_note(gpu) and "gpt-mini" not in step_note(gpu)
    p = plan("gpt-mini", devices=cpu, top=2)
    assert p.summary.endswith(" a step by the cost model, fixed costs left out")
    assert STEP_SHORT in p.summary
    assert "a step predicted" not in p.summary
    assert p.to_json()["step_time_note"] == step_note(cpu)
    assert repr(p).splitlines()[-1] == f"  step: {step_note(cpu)}"
    assert "left out" in p._repr_html_()


def test_a_dry_run_shows_the_label():
    doc = dry_run("train", "mlp blobs --steps 1")
    assert doc["plan"].endswith(" a step by the cost model, fixed costs left out")
    lines = dry_run_lines(doc)
    at = next(i for i, line in enumerate(lines) if line.startswith("plan: "))
    assert lines[at + 1] == f"  (its step time is {step_note('cpu')})"
    assert "~30x for a small MLP" in lines[at + 1]


def test_the_plan_check_puts_the_raw_figure_beside_the_calibrated_one():
    from skiff.kernels.train.plan.check import describe

    check = {"measured_step_s": 0.296, "expected_step_s": 0.301, "predicted_step_s": 0.0612,
             "agrees": True}
    assert describe(check) == ("plan check: step 296.0 ms measured, 301.0 ms expected by the "
                               "micro-run (the cost model alone, fixed costs left out: 61.2 "
                               "ms) (agrees)")
    del check["predicted_step_s"]
    assert describe(check) == "plan check: step 296.0 ms measured, 301.0 ms expected (agrees)"
