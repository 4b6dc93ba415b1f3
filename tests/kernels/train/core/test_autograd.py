"""The autograd engine: accumulation, hooks, no_grad, custom Functions, errors."""

from __future__ import annotations

import numpy as np
import pytest

import skiff
from skiff.kernels.train.core import tensor as T
from skiff.kernels.train.core.autograd import Function
from skiff.kernels.train.core.gradcheck import gradcheck


def test_dtype_defaults():
    assert skiff.tensor([1.0, 2.0]).dtype == np.float32
    # a numpy float array keeps its dtype, as torch.tensor's does; Tensor() makes float32
    assert skiff.tensor(np.zeros(3)).dtype == np.float64
    assert T.Tensor(np.zeros(3)).dtype == np.float32
    assert skiff.tensor(np.zeros(3, np.float32)).dtype == np.float32
    assert skiff.tensor(np.zeros(3), dtype="float64").dtype == np.float64
    assert skiff.tensor([1, 2]).dtype.kind == "i"
    assert T.randn(2, 3).dtype == np.float32
    assert T.arange(5).dtype.kind == "i"
    with pytest.raises(ValueError, match="only float"):
        skiff.tensor([1, 2], requires_grad=True)


def test_grad_accumulates_and_is_owned():
    x = skiff.tensor([1.0, 2.0], requires_grad=True)
    (x + x).sum().backward()
    np.testing.assert_allclose(x.grad, [2.0, 2.0])
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad, [5.0, 5.0])
    # a + b hands the same gradient array to both leaves: each must own a copy
    a = skiff.tensor([1.0], requires_grad=True)
    b = skiff.tensor([1.0], requires_grad=True)
    (a + b).sum().backward()
    a.grad *= 10
    assert b.grad[0] == 1.0


def test_no_grad_records_nothing():
    w = skiff.tensor([1.0, 2.0], requires_grad=True)
    with skiff.no_grad():
        y = (w * w).exp()
        assert not skiff.kernels.train.core.tensor.is_grad_enabled()
    assert not y.requires_grad and y.is_leaf
    assert T.is_grad_enabled()
    with pytest.raises(RuntimeError, match="does not require grad"):
        y.sum().backward()


def test_grad_ready_hooks_fire_once_in_reverse_order_with_complete_grads():
    skiff.kernels.train.core.random.seed(0)
    w1 = T.randn(4, 4, requires_grad=True)
    w2 = T.randn(4, 4, requires_grad=True)
    w3 = T.randn(4, 4, requires_grad=True)
    x = T.randn(2, 4)
    fired = []

    def hook(p):
        fired.append((names[id(p)], p._grad.copy()))

    names = {id(w1): "w1", id(w2): "w2", id(w3): "w3"}
    handles = [w.register_grad_ready_hook(hook) for w in (w1, w2, w3)]
    # w1 is used twice (first and last layer): its hook must wait for both contributions
    h = (x @ w1).tanh()
    h = (h @ w2).tanh()
    h = (h @ w3) @ w1
    h.sum().backward()
    order = [n for n, _ in fired]
    assert sorted(order) == ["w1", "w2", "w3"]
    assert order.index("w3") < order.index("w2")
    # the grad seen by the hook equals the final grad (nothing added after the hook)
    for name, g in fired:
        final = {"w1": w1, "w2": w2, "w3": w3}[name].grad
        np.testing.assert_array_equal(g, final)
    for hd in handles:
        hd.remove()
    fired.clear()
    h = (x @ w1).sum()
    h.backward()
    assert fired == []


def test_custom_function_and_gradcheck_catches_wrong_backward():
    class Cube(Function):
        def forward(self, x):
            self.save_for_backward(x)
            return x**3

        def backward(self, g):
            (x,) = self.saved
            return 3 * x * x * g

    class WrongCube(Cube):
        def backward(self, g):
            (x,) = self.saved
            return 2 * x * x * g

    x = skiff.tensor(np.array([0.3, -1.2, 2.0]), dtype="float64", requires_grad=True)
    assert gradcheck(lambda t: Cube.apply(t), [x])
    with pytest.raises(AssertionError, match="differs"):
        gradcheck(lambda t: WrongCube.apply(t), [x])


def test_multi_output_function_with_unused_output():
    class TwoWay(Function):
        def forward(self, x):
            return x * 2, x * 3

        def backward(self, ga, gb):
            return ga * 2 + gb * 3

    x = skiff.tensor([1.0, 2.0], requires_grad=True)
    a, b = TwoWay.apply(x)
    a.sum().backward()
    np.testing.assert_allclose(x.grad, [2.0, 2.0])


def test_saved_arrays_freed_and_retain_graph():
    x = skiff.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad, [4.0, 8.0])
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()


def test_graph_does_not_keep_intermediate_inputs():
    import weakref

    x = skiff.tensor(np.ones((3, 3)), requires_grad=True)
    h = x + 1  # Add keeps nothing
    ref = weakref.ref(h.data)
    y = (h * 2).sum()  # Mul by a constant keeps only the constant
    del h
    assert ref() is None
    y.backward()
    np.testing.assert_allclose(x.grad, 2 * np.ones((3, 3)))


def test_backward_errors():
    x = skiff.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="non-scalar"):
        (x * 2).backward()
    with pytest.raises(ValueError, match="grad shape"):
        (x * 2).backward(np.ones(3))
    (x * 2).backward(np.ones(2))
    np.testing.assert_allclose(x.grad, [2.0, 2.0])


def test_comparisons_and_helpers():
    x = skiff.tensor([1.0, -2.0, 3.0])
    assert (x > 0).tolist() == [True, False, True]
    assert (x <= 1).dtype == np.bool_
    assert float(x.sum()) == 2.0
    assert x.detach().is_leaf
    assert T.zeros(2, 3).shape == (2, 3) and T.ones((2,)).numpy().sum() == 2
    assert T.full((2, 2), 7.0).numpy().tolist() == [[7.0, 7.0], [7.0, 7.0]]
    a, b = T.split(T.arange(5, dtype="float32"), 3)
    assert a.shape == (3,) and b.shape == (2,)
    with pytest.raises(ValueError, match="do not add up"):
        T.split(x, [1, 1])


def test_cast_and_device_moves_carry_gradients():
    x = skiff.tensor([1.0, 2.0], requires_grad=True)  # float32
    y = x.astype("float64") * skiff.tensor([3.0, 4.0], dtype="float64")
    assert y.dtype == np.float64
    y.sum().backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_allclose(x.grad, [3.0, 4.0])
    assert x.to("cpu") is x and str(x.device) == "cpu"
    assert x.double().dtype == np.float64 and x.float() is x
