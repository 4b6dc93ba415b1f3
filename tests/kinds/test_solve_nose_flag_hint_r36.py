"""Round 36: ``solve train-nose --speed 80`` / ``--yaw 5`` (an aerodynamicist's first
flags) gave argparse's bare "unrecognized arguments"; the shared grammar now adds the
kernel's own reason (``nose_job.keyword_why``: the model is 2-D; the flow is set by re =
U H / nu) in the terminal and the magic alike, and a misspelt flag still gets its "did you
mean". Oracle: the kernel's sentence for the same keyword (``skiff.aero.solve_nose(yaw=5)``)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from skiff.grammar.common import GrammarError
from skiff.jobs.launch import dry_run
from skiff.kernels.solve.flow.nose_job import keyword_why


@pytest.mark.parametrize("flag,key", [("--speed 80", "speed"), ("--yaw=5", "yaw"),
                                      ("--crosswind 3", "crosswind")])
def test_the_kernels_reason_is_given(flag, key):
    with pytest.raises(GrammarError) as err:
        dry_run("solve", f"train-nose {flag}")
    message = str(err.value)
    assert "unrecognized arguments" in message and keyword_why(key) in message
    assert ("--re RE" in message) == (key == "speed")


def test_a_misspelt_flag_still_gets_the_closest():
    with pytest.raises(GrammarError, match="did you mean '--length'"):
        dry_run("solve", "train-nose --lenght 3")
    assert keyword_why("lenght") is None


def test_the_terminal_prints_it_and_fails():
    out = subprocess.run([sys.executable, "-m", "skiff", "solve", "train-nose", "--speed",
                          "80", "--dry-run"], capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "re = U H / nu" in out.stderr
