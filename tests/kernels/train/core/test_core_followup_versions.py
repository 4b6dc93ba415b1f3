"""In-place changes to what autograd saved, as torch 2.13 checks them with its version counters:
an array a node saved for backward and written in place afterwards (through ``+=``, ``add_``,
``copy_``, ``zero_``, ``fill_``, ``x[i] = v``, ``mul_``, a view, ``detach()``) makes backward
raise torch's error; writes through ``.data``, or to what no node saved, or after backward do
not. float64 against torch."""

import numpy as np
import pytest

import skiff

torch = pytest.importorskip("torch")
MESSAGE = "one of the variables needed for gradient computation has been modified by an inplace"


def _x(lib):
    return lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64, requires_grad=True)


CASES = {
    "exp_output_plus_equal": lambda lib, x: _then(x.exp(), lambda y: y.__iadd__(1.0)),
    "exp_output_add_": lambda lib, x: _then(x.exp(), lambda y: y.add_(1.0, alpha=2.0)),
    "exp_output_mul_": lambda lib, x: _then(x.exp(), lambda y: y.mul_(2.0)),
    "tanh_output_zero_": lambda lib, x: _then(x.tanh(), lambda y: y.zero_()),
    "sigmoid_output_fill_": lambda lib, x: _then(x.sigmoid(), lambda y: y.fill_(0.5)),
    "exp_output_copy_": lambda lib, x: _then(
        x.exp(), lambda y: y.copy_(lib.ones(3, dtype=lib.float64))),
    "exp_output_setitem": lambda lib, x: _then(x.exp(), lambda y: y.__setitem__(0, 5.0)),
    "through_a_view": lambda lib, x: _then(x.exp(), lambda y: y[1:].add_(1.0)),
    "through_detach": lambda lib, x: _then(x.exp(), lambda y: y.detach().mul_(3.0)),
    "leaf_after_mul_saved_it": lambda lib, x: _then(x * x, lambda y: x.add_(1.0), keep=True),
}


def _then(y, change, keep=False):
    return y, change, keep


def _run(lib, case):
    x = _x(lib)
    y, change, _ = CASES[case](lib, x)
    out = (y * y).sum() if case != "leaf_after_mul_saved_it" else y.sum()
    with lib.no_grad():
        change(y)
    try:
        out.backward()
    except RuntimeError as exc:
        return str(exc)
    return x.grad.numpy().copy()


@pytest.mark.parametrize("case", sorted(CASES))
def test_in_place_change_of_a_saved_array_raises_as_torch(case):
    ours, theirs = _run(skiff, case), _run(torch, case)
    assert isinstance(theirs, str) and theirs.startswith(MESSAGE)
    assert isinstance(ours, str) and ours.startswith(MESSAGE), ours


def _grads(lib, plan):
    x = _x(lib)
    if plan == "unsaved":  # Mul by a constant keeps nothing of y's; Add keeps nothing
        y = x * 2.0
        z = y + 1.0
        with lib.no_grad():
            y += 1.0
        z.sum().backward()
    elif plan == "data":  # .data's writes bump no version (torch's): the new values are used
        y = x * x
        with lib.no_grad():
            x.data.mul_(2.0)
        y.sum().backward()
    elif plan == "after_backward":
        y = x.exp()
        y.sum().backward()
        with lib.no_grad():
            y += 1.0
            x -= 0.1 * x.grad
        x.grad = None
        x.exp().sum().backward()
    else:  # a clone is changed, not the saved output
        y = x.exp()
        z = y.clone()
        with lib.no_grad():
            z += 1.0
        (y * z).sum().backward()
    return x.grad.numpy().copy()


@pytest.mark.parametrize("plan", ["unsaved", "data", "after_backward", "clone"])
def test_changes_autograd_does_not_need_pass_with_torchs_gradient(plan):
    np.testing.assert_allclose(_grads(skiff, plan), _grads(torch, plan), rtol=1e-14)


def test_version_counts_like_torch():
    seen = []
    for lib in (skiff, torch):
        t = lib.zeros(3, dtype=lib.float64)
        counts = [t._version]
        t.add_(1.0)
        counts.append(t._version)
        t[0] = 2.0
        counts.append(t._version)
        t.data.mul_(2.0)  # .data: its own counter
        counts.append(t._version)
        t.zero_()
        counts.append(t._version)
        seen.append(counts)
    assert seen[0] == seen[1] == [0, 1, 2, 2, 3]


def test_retained_graph_checks_again():
    for lib in (skiff, torch):
        x = _x(lib)
        y = x.exp()
        out = (y * 3.0).sum()
        out.backward(retain_graph=True)
        with lib.no_grad():
            y.mul_(2.0)
        with pytest.raises(RuntimeError, match=MESSAGE):
            out.backward()


def test_ctx_function_saved_tensor_checked_as_torch():
    """A torch-style ``autograd.Function`` whose forward saved its input: changing the input in
    place before backward raises in both; changing it after does not."""
    for lib in (skiff, torch):
        class Cube(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x ** 3

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 3 * x ** 2 * g

        x = _x(lib)
        out = Cube.apply(x).sum()
        with lib.no_grad():
            x.mul_(2.0)
        with pytest.raises(RuntimeError, match=MESSAGE):
            out.backward()
        x2 = _x(lib)
        Cube.apply(x2).sum().backward()
        np.testing.assert_allclose(x2.grad.numpy(), 3 * np.array([0.25, 1.0, 4.0]))
