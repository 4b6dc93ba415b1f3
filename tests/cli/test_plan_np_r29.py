"""Round 29, as a terminal user: ``python -m skiff train gpt-mini --np 2`` then ``python -m
skiff plan gpt-mini --np 2`` was "unrecognized arguments: --np 2" with no hint (the planner
called it --devices). ``--np`` is the planner's --devices too. The oracle: the layout's
product of parallel degrees equals the devices asked, and the --devices spelling's plan."""

from __future__ import annotations

import json

import pytest

from skiff.cli import main


@pytest.mark.parametrize("n", [2, 4])
def test_plan_takes_np_as_train_does(capsys, n):
    assert main(["plan", "gpt-mini", "--np", str(n), "--json"]) == 0
    with_np = json.loads(capsys.readouterr().out)
    assert main(["plan", "gpt-mini", "--devices", str(n), "--json"]) == 0
    with_devices = json.loads(capsys.readouterr().out)
    assert with_np == with_devices
    choice = with_np["choice"]
    assert choice["dp"] * choice["tp"] * choice["pp"] == n
