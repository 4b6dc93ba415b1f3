"""Round 39 (h5): ``skiff.plan(model, devices=2)`` without ``device_memory`` failed "a
hypothetical cluster of 2 devices needs device memory" (the command line assumes 80 GB). On a
machine without a GPU a live model (or %train's "mlp") is now planned on ``devices`` CPU
ranks sharing this machine's memory, as ``%train --np N`` runs them, and a preset (an LLM's
size) on 80 GB devices, as the command line does; the plan's first reason says which.
Oracle: /proc/meminfo's MemTotal read here, split by the ranks."""

import os

import pytest

import skiff
from skiff import nn
from skiff.kernels.backend import gpu_available


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 32)
        self.b = nn.Linear(32, 1)

    def forward(self, x):
        return self.b(self.a(x).relu())


def _mem_total() -> int:
    with open("/proc/meminfo") as fh:
        for line in fh:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


pytestmark = pytest.mark.skipif(gpu_available() or not os.path.exists("/proc/meminfo"),
                                reason="the CPU machine's case")


def test_plan_without_memory_uses_this_machines():
    p = skiff.plan(Net(), devices=2)
    assert p.cluster.memory == _mem_total() // 2
    assert p.cluster.devices == 2 and p.cluster.kind == "cpu"
    assert p.choice.world == 2
    assert "device memory not given: 2 CPU ranks on this machine" in p.reasons[0]
    assert "device_memory=" in p.reasons[0]
    # the same layout as the memory given by hand
    q = skiff.plan(Net(), devices=2, device_memory=_mem_total() // 2)
    assert q.choice == p.choice
    assert not any("not given" in r for r in q.reasons)


def test_a_built_model_by_name_is_planned_here_too():
    p = skiff.plan("mlp", devices=2)
    assert p.cluster.memory == _mem_total() // 2 and p.cluster.kind == "cpu"


def test_a_preset_assumes_80gb_and_says_so():
    p = skiff.plan("gpt2-124m", devices=2, global_batch=8)
    assert p.cluster.memory == 80 * 10**9
    assert p.reasons[0].startswith("device memory not given: 80.0 GB per device assumed")
    q = skiff.plan("gpt2-124m", devices=2, global_batch=8, device_memory="80GB")
    assert q.choice == p.choice
    with pytest.raises(ValueError, match=r"does not fit on 2 x 80.0 GB.*device memory not "
                                         r"given: 80.0 GB per device assumed"):
        skiff.plan("70b", devices=2)
