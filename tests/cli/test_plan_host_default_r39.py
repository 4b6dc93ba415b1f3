"""Round 39: ``python -m skiff plan mlp --np 2`` without ``--device-memory`` plans for this
machine (its memory shared by the CPU ranks, said in the plan's first reason) as
``skiff.plan(model, devices=2)`` does; the grammar passed 80 GB "devices" silently before.
Oracle: /proc/meminfo's MemTotal split over the ranks."""

import re
import subprocess
import sys

import pytest


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/meminfo")
def test_plan_from_the_terminal_uses_this_machines_memory():
    out = subprocess.run([sys.executable, "-m", "skiff", "plan", "mlp", "--np", "2"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    with open("/proc/meminfo") as f:
        total_kb = int(re.search(r"MemTotal:\s+(\d+) kB", f.read()).group(1))
    each = total_kb * 1024 / 2 / 1e9
    head = out.stdout.splitlines()[0]
    got = float(re.search(r"on 2 x ([\d.]+) GB", head).group(1))
    assert abs(got - each) < 0.1 * each, (head, each)
    assert "device memory not given" in out.stdout
