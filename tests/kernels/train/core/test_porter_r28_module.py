"""Round 28: ``nn.init.dirac_``/``sparse_`` and ``Module.get_extra_state``/
``set_extra_state``/``register_state_dict_pre_hook``/``to_empty`` against torch 2.13
(dirac_ exactly; sparse_'s law: the zeros per column, the spread of the rest)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach())


@pytest.mark.parametrize("shape,groups", [((4, 3, 3), 1), ((6, 2, 3, 3), 2),
                                          ((2, 4, 3, 1, 3), 1)])
def test_dirac(shape, groups):
    a = skiff.nn.init.dirac_(skiff.empty(*shape, dtype=skiff.float64), groups)
    b = torch.nn.init.dirac_(torch.empty(*shape, dtype=torch.float64), groups)
    np.testing.assert_array_equal(_np(a), _np(b))


def test_sparse_law():
    skiff.manual_seed(0)
    a = _np(skiff.nn.init.sparse_(skiff.empty(200, 30, dtype=skiff.float64), 0.3, std=0.05))
    b = _np(torch.nn.init.sparse_(torch.empty(200, 30, dtype=torch.float64), 0.3, std=0.05))
    assert ((a == 0).sum(0) == (b == 0).sum(0)).all()  # ceil(0.3 * 200) per column
    assert abs(a[a != 0].std() - 0.05) < 0.005 and abs(b[b != 0].std() - 0.05) < 0.005


def _with_extra(lib):
    class Counter(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(2, 2)
            self.seen = 0

        def get_extra_state(self):
            return {"seen": self.seen}

        def set_extra_state(self, state):
            self.seen = state["seen"]

    class Outer(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Counter()

    return Outer


def test_extra_state_and_state_dict_pre_hook_like_torch():
    keys, calls = [], []
    for lib in (torch, skiff):
        m = _with_extra(lib)()
        m.inner.seen = 7
        handle = m.inner.register_state_dict_pre_hook(
            lambda mod, prefix, keep_vars, name=lib.__name__: calls.append((name, prefix)))
        sd = m.state_dict()
        keys.append(sorted(sd))
        assert sd["inner._extra_state"] == {"seen": 7}
        handle.remove()
        m.state_dict()
        fresh = _with_extra(lib)()
        fresh.load_state_dict(sd)
        assert fresh.inner.seen == 7
    assert keys[0] == keys[1]
    assert calls == [("torch", "inner."), ("skiff", "inner.")]


def test_to_empty_keeps_a_usable_module():
    m = skiff.nn.Linear(3, 2).to_empty(device="cpu")
    assert tuple(m.weight.shape) == (2, 3)
    with pytest.raises(RuntimeError, match="override"):
        skiff.nn.Linear(2, 2).get_extra_state()
