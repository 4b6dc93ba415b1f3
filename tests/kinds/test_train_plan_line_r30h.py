"""``train ... --dry-run`` with ``--strategy auto`` shows the planner's choice, and
``--device-memory`` plans as for devices of that size (round 30, h18).

Oracles: PyTorch's Adam on tensors of the model's own parameter shapes (the bytes plain data
parallel keeps on every device: weights, gradients, Adam state), and the planner's own
answer for the same job asked directly (what the job's Trainer will log)."""

import pytest
import torch

from skiff.jobs.launch import dry_run
from skiff.kernels.train.plan.planner import parse_strategy


def torch_adam_bytes(model_name: str) -> int:
    from skiff.kernels.train import models

    params = [torch.zeros(tuple(p.shape), requires_grad=True)
              for p in models.get(model_name).parameters()]
    opt = torch.optim.Adam(params)
    sum((p * p).sum() for p in params).backward()
    opt.step()
    state = sum(t.numel() * t.element_size() for s in opt.state.values()
                for t in s.values() if torch.is_tensor(t) and t.dim() > 0)
    return state + 2 * sum(p.numel() * p.element_size() for p in params)


def test_auto_dry_run_shows_the_plan_the_trainer_makes():
    from skiff.kernels.train import models
    from skiff.kernels.train.resolve import resolve_strategy

    doc = dry_run("train", "gpt-mini --np 2 --steps 2 --batch-size 8")
    _, record = resolve_strategy("auto", models.get("gpt-mini"), world_size=2,
                                 global_batch=8, seq_len=128, grad_bytes=4)
    assert doc["plan"] == record["summary"]
    assert doc["config"]["strategy"] == "auto"  # no limit: the ranks plan as they find
    one = dry_run("train", "mlp --steps 1")["plan"]
    assert "on 1 device:" in one and "data parallel" not in one


def test_device_memory_below_adam_state_plans_a_split_and_pins_it():
    need = torch_adam_bytes("gpt-mini")
    free = dry_run("train", "gpt-mini --np 2 --steps 2 --device-memory 80GB")
    tight = dry_run("train", f"gpt-mini --np 2 --steps 2 --device-memory {need}")
    assert "plain data parallel needs" not in free["plan"]
    assert "plain data parallel needs" in tight["plan"]
    assert tight["config"]["device_memory"] == need
    choice = parse_strategy(tight["config"]["strategy"], 2)  # the job runs what was shown
    assert choice.world == 2 and (choice.zero or choice.tp > 1 or choice.pp > 1)
    assert choice.label().split(",micro")[0] in tight["plan"]


def test_device_memory_errors_name_the_fix():
    with pytest.raises(ValueError, match="40GB"):
        dry_run("train", "gpt-mini --steps 1 --device-memory lots")
    with pytest.raises(ValueError, match="does not fit"):
        dry_run("train", "gpt-mini --np 2 --steps 1 --device-memory 1MB")


def test_pinned_layout_is_one_the_trainer_takes():
    from skiff.kernels.train import models
    from skiff.kernels.train.resolve import resolve_strategy

    need = torch_adam_bytes("gpt-mini")
    doc = dry_run("train", f"gpt-mini --np 2 --steps 2 --device-memory {need}")
    _, record = resolve_strategy(doc["config"]["strategy"], models.get("gpt-mini"),
                                 world_size=2, global_batch=16, seq_len=128, grad_bytes=4)
    assert record["explicit"] and record["label"].split(",micro")[0] in doc["plan"]


def test_device_memory_checks_an_explicit_layout_and_refuses_other_models():
    need = torch_adam_bytes("gpt-mini")
    fits = dry_run("train", "gpt-mini --np 2 --steps 1 --strategy zero2 --device-memory 80GB")
    assert fits["config"]["strategy"] == "zero2" and "as given" in fits["plan"]
    with pytest.raises(ValueError, match="does not fit"):  # plain dp holds all of it
        dry_run("train", f"gpt-mini --np 2 --steps 1 --strategy dp --device-memory {need}")
    with pytest.raises(ValueError, match=r"Trainer\(model, device_memory"):
        dry_run("train", "--np 2 --steps 1 --device-memory 1GB",
                cell="import skiff\nmodel = skiff.models.get('mlp')\n"
                     "dataset = 'blobs'\n")
