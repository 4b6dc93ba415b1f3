"""A user's device memory limit reaches the planner (round 30, h18): Trainer(device_memory=)
and resolve_strategy(device_memory=) choose as for devices of that size.

Oracle: PyTorch's own Adam on the same layer shapes: the bytes of its weights, gradients
and Adam state after one step (what plain data parallel keeps on every device)."""

import pytest
import torch

from skiff.kernels.train.models.mlp import mlp
from skiff.kernels.train.resolve import memory_limit, resolve_strategy

SHAPES = (512, 1024, 512)


def torch_adam_bytes() -> int:
    net = torch.nn.Sequential(torch.nn.Linear(SHAPES[0], SHAPES[1]), torch.nn.ReLU(),
                              torch.nn.Linear(SHAPES[1], SHAPES[2]))
    opt = torch.optim.Adam(net.parameters())
    net(torch.randn(4, SHAPES[0])).sum().backward()
    opt.step()
    state = sum(t.numel() * t.element_size() for s in opt.state.values()
                for t in s.values() if torch.is_tensor(t) and t.dim() > 0)
    weights = sum(p.numel() * p.element_size() for p in net.parameters())
    grads = sum(p.grad.numel() * p.grad.element_size() for p in net.parameters())
    return weights + grads + state


def model():
    return mlp(in_features=SHAPES[0], hidden=(SHAPES[1],), out_features=SHAPES[2])


def test_limit_below_plain_dp_state_gets_zero_and_says_why():
    need = torch_adam_bytes()  # plain dp holds all of this on each device
    _, big = resolve_strategy("auto", model(), world_size=2, global_batch=8,
                              device_memory="80GB")
    strategy, small = resolve_strategy("auto", model(), world_size=2, global_batch=8,
                                       device_memory=need)
    assert not any("plain data parallel does not fit" in r for r in big["reasons"])
    assert small["strategy"].startswith("zero")
    assert type(strategy).__name__ == "ZeRO"
    assert any("plain data parallel does not fit" in r for r in small["reasons"])
    assert small["estimate"]["peak_memory"] <= 0.9 * need < need
    assert "plain data parallel needs" in small["summary"]


def test_limit_no_layout_fits_raises_naming_the_limit():
    need = torch_adam_bytes()
    with pytest.raises(ValueError, match="does not fit"):
        resolve_strategy("auto", model(), world_size=2, global_batch=8,
                         device_memory=need // 4)


def test_limit_text_and_bytes_agree_and_bad_text_names_the_fix():
    assert memory_limit("40GB") == 40 * 10 ** 9 and memory_limit("16GiB") == 16 * 2 ** 30
    for bad in ("forty", 0, -5, 1.5):
        with pytest.raises(ValueError, match="40GB"):
            memory_limit(bad)


def test_trainer_passes_the_limit_to_the_plan():
    import numpy as np

    from skiff.kernels.train.data import ArrayDataset
    from skiff.kernels.train.trainer import Trainer

    with pytest.raises(ValueError, match="device_memory"):
        Trainer(model(), device_memory="lots")
    rows = ArrayDataset(np.zeros((8, SHAPES[0]), "float32"), np.zeros(8, "int64"))
    need = torch_adam_bytes()  # one device holds all of it: a quarter of it cannot do
    with pytest.raises(ValueError, match="does not fit"):
        Trainer(model(), batch_size=8, device_memory=need // 4).train(rows, steps=1)
