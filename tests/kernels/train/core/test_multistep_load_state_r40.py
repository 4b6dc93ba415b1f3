"""``MultiStepLR.load_state_dict`` puts the saved milestones back, as torch's does
(torch's ``LRScheduler.load_state_dict`` updates ``__dict__``): a scheduler built with other
milestones goes on with the saved run's, step by step equal to torch's."""
import pytest
import torch

import skiff
from skiff.kernels.train.core.lr_scheduler import ConstantLR, MultiStepLR, SequentialLR


def _skiff_opt():
    return skiff.optim.SGD(skiff.nn.Linear(2, 2).parameters(), lr=1.0)


def _torch_opt():
    return torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=1.0)


def _lrs(sched, opt, steps):
    out = []
    for _ in range(steps):
        opt.step()
        sched.step()
        out.append(float(opt.param_groups[0]["lr"]))
    return out


@pytest.mark.parametrize("source", ["skiff", "torch"])
def test_loaded_milestones_are_the_saved_ones(source):
    if source == "skiff":
        so = _skiff_opt()
        saved = MultiStepLR(so, [3, 5, 5], gamma=0.5)
        _lrs(saved, so, 2)
    else:
        to = _torch_opt()
        saved = torch.optim.lr_scheduler.MultiStepLR(to, [3, 5, 5], gamma=0.5)
        _lrs(saved, to, 2)
    state = saved.state_dict()

    so = _skiff_opt()
    mine = MultiStepLR(so, [3, 7], gamma=0.5)
    mine.load_state_dict(state)
    to = _torch_opt()
    ref = torch.optim.lr_scheduler.MultiStepLR(to, [3, 7], gamma=0.5)
    ref.load_state_dict(state)
    for opt in (so, to):
        opt.param_groups[0]["lr"] = 1.0
    assert mine.milestones == sorted(ref.milestones.elements()) == [3, 5, 5]
    assert _lrs(mine, so, 8) == pytest.approx(_lrs(ref, to, 8), rel=1e-12)


def test_a_list_of_milestones_in_a_state_is_read_too():
    so = _skiff_opt()
    mine = MultiStepLR(so, [4])
    mine.load_state_dict({**mine.state_dict(), "milestones": [6, 2]})
    assert mine.milestones == [2, 6]


def test_inside_a_sequential_schedule():
    so = _skiff_opt()
    saved = SequentialLR(so, [ConstantLR(so, factor=0.5, total_iters=2),
                              MultiStepLR(so, [2, 4])], milestones=[2])
    state = saved.state_dict()
    so2 = _skiff_opt()
    inner = MultiStepLR(so2, [9])
    mine = SequentialLR(so2, [ConstantLR(so2, factor=0.5, total_iters=2), inner],
                        milestones=[2])
    mine.load_state_dict(state)
    assert inner.milestones == [2, 4]
