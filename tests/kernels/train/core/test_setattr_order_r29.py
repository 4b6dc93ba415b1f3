"""A child module or parameter assigned anew keeps its place, as in torch: skiff moved it to
the end, so a Sequential whose first layer was wrapped (LoRA does it in place) ran its layers
in another order (a shape error, or a silently different network)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import skiff  # noqa: E402
from skiff import nn  # noqa: E402


def test_replacing_a_sequential_layer_keeps_the_order_and_the_output():
    t = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    s = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    for mod, cls in ((t, torch.nn.Linear), (s, nn.Linear)):
        setattr(mod, "0", cls(3, 4))
    s.load_state_dict({k: skiff.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    assert [k for k, _ in s.named_children()] == [k for k, _ in t.named_children()]
    assert list(s.state_dict()) == list(t.state_dict())
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    np.testing.assert_allclose(s(skiff.tensor(x)).detach().numpy(),
                               t(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_replacing_a_parameter_keeps_its_place_in_state_dict():
    class T(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Parameter(torch.zeros(2))
            self.b = torch.nn.Parameter(torch.zeros(3))

    class S(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Parameter(skiff.zeros(2))
            self.b = nn.Parameter(skiff.zeros(3))

    t, s = T(), S()
    t.a = torch.nn.Parameter(torch.ones(2))
    s.a = nn.Parameter(skiff.ones(2))
    assert list(s.state_dict()) == list(t.state_dict()) == ["a", "b"]
    assert [n for n, _ in s.named_parameters()] == [n for n, _ in t.named_parameters()]


def test_a_child_replaced_by_a_parameter_moves_stores():
    s = nn.Module()
    s.x = nn.Linear(2, 2)
    s.y = nn.Linear(2, 2)
    s.x = nn.Parameter(skiff.zeros(1))
    assert list(dict(s.named_children())) == ["y"]
    assert [n for n, _ in s.named_parameters()][0] == "x"
