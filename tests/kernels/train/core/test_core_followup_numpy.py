"""numpy's functions on tensors, as torch 2.13's: a ufunc on a tensor without grad is a tensor,
on one that requires grad torch's error; ``ndarray OP tensor`` stays a differentiable tensor;
numpy's reductions reach the tensor's methods. float64 against torch."""

import numpy as np
import pytest

import skiff

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings(  # torch's own __array_wrap__ signature
    "ignore:__array_wrap__ must accept context:DeprecationWarning")


def _pair(values, requires_grad=False):
    return (skiff.tensor(np.array(values), dtype=skiff.float64, requires_grad=requires_grad),
            torch.tensor(np.array(values), dtype=torch.float64, requires_grad=requires_grad))


def _same(ours, theirs):
    """Equal values and dtypes; a boolean result is torch's uint8 (its __array_wrap__), skiff's
    bool."""
    assert isinstance(ours, skiff.Tensor) and isinstance(theirs, torch.Tensor)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-15, equal_nan=True)
    if theirs.dtype == torch.uint8 and ours.dtype == np.bool_:
        return
    assert ours.numpy().dtype == theirs.numpy().dtype


@pytest.mark.filterwarnings("ignore:invalid value")
@pytest.mark.parametrize("ufunc", [np.abs, np.sqrt, np.exp, np.log1p, np.square, np.sign,
                                   np.floor, np.tanh, np.negative])
def test_unary_ufuncs_on_tensors_are_tensors_like_torch(ufunc):
    s, t = _pair([[1.5, -2.0], [0.25, 3.0]])
    _same(ufunc(s), ufunc(t))
    for dtype in ("float32", "int64"):  # numpy's result dtypes, as torch's
        _same(ufunc(s.to(getattr(skiff, dtype))), ufunc(t.to(getattr(torch, dtype))))


def test_grad_abs_and_the_probes_lines():
    arr = np.array([0.5, -1.0, 2.0])
    got = []
    for lib in (skiff, torch):
        p = lib.tensor([1.0, -2.0, 3.0], dtype=lib.float64, requires_grad=True)
        (p * p * p).sum().backward()
        g = np.abs(p.grad)
        biggest = np.abs(p.grad - arr).max()
        assert type(g).__module__.split(".")[0] == lib.__name__
        np.testing.assert_allclose(p.grad, 3 * np.array([1.0, 4.0, 9.0]))
        with pytest.raises(AssertionError):
            np.testing.assert_allclose(p.grad, arr)
        got.append((np.asarray(g), float(biggest), float(np.sqrt(p.grad.sum()))))
    assert got[0][1:] == got[1][1:]
    np.testing.assert_array_equal(got[0][0], got[1][0])


def test_binary_ufuncs_with_arrays_like_torch():
    arr = np.array([0.5, 3.0, -1.0])
    s, t = _pair([1.0, 2.0, -3.0])
    for ufunc in (np.add, np.subtract, np.multiply, np.true_divide, np.maximum, np.minimum,
                  np.hypot, np.arctan2, np.less, np.greater_equal, np.equal):
        _same(ufunc(s, arr), ufunc(t, arr))
        _same(ufunc(arr, s), ufunc(arr, t))
    _same(np.abs(s - arr).max(), np.abs(t - arr).max())
    _same(np.add.reduce(s), np.add.reduce(t))


def test_array_operator_tensor_stays_differentiable():
    """``ndarray + tensor`` (and ``np.add(ndarray, tensor)``): a tensor in the graph; the
    gradient equals torch's ``from_numpy(arr) + t``."""
    arr = np.array([0.5, 3.0, -1.0])
    s, t = _pair([1.0, 2.0, -3.0], requires_grad=True)
    ours = (arr + s) * (arr * s) - np.add(arr, s) / (arr - s) + np.maximum(arr, s) ** 2
    a = torch.from_numpy(arr)
    theirs = (a + t) * (a * t) - (a + t) / (a - t) + torch.maximum(a, t) ** 2
    assert ours.requires_grad
    ours.sum().backward()
    theirs.sum().backward()
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-14)
    np.testing.assert_allclose(s.grad.numpy(), t.grad.numpy(), rtol=1e-14)
    assert isinstance(arr < s, skiff.Tensor) and (arr < s).dtype == np.bool_


def test_ufunc_on_a_tensor_that_requires_grad_raises_torchs_error():
    msgs = []
    for s in _pair([1.0, 2.0], requires_grad=True):
        errs = []
        for fn in (np.exp, np.sqrt, np.isfinite, np.round):
            with pytest.raises(RuntimeError) as info:
                fn(s)
            errs.append(str(info.value))
        msgs.append(errs)
    assert msgs[0] == msgs[1]
    assert msgs[0][0].startswith("Can't call numpy() on Tensor that requires grad")


def test_in_place_on_an_array_with_a_tensor():
    """``arr += t`` stays the array (numpy's in-place; torch's raises a TypeError), ``out=`` is
    filled as torch's."""
    s, t = _pair([1.0, 2.0])
    acc = np.array([0.5, 0.25])
    acc += s
    assert type(acc) is np.ndarray
    np.testing.assert_array_equal(acc, [1.5, 2.25])
    res, tres = np.empty(2), np.empty(2)
    assert np.multiply(s, 3.0, out=res) is res
    np.multiply(t, 3.0, out=tres)
    np.testing.assert_array_equal(res, tres)
    g, _ = _pair([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="requires grad"):
        acc += g


def test_numpy_reductions_reach_the_tensor_methods():
    """torch's ``np.argmax(t)``/``np.cumsum(t)`` are tensors; its ``np.mean(t)``, ``np.sum``,
    ``np.std`` raise a TypeError (numpy's keywords): skiff's are tensors with numpy's values."""
    x = np.array([[1.0, -2.0, 4.0], [0.5, 3.0, -1.0]])
    s, t = _pair(x)
    _same(np.argmax(s), np.argmax(t))
    _same(np.cumsum(s, axis=1), np.cumsum(t, axis=1))
    _same(np.clip(s, -1.0, 1.0), np.clip(t, -1.0, 1.0))
    _same(np.round(s), np.round(t))
    for fn, kw in ((np.mean, {}), (np.sum, {"axis": 0}), (np.max, {}), (np.min, {"axis": 1}),
                   (np.std, {}), (np.var, {"axis": 0}), (np.prod, {}),
                   (np.mean, {"axis": 1, "keepdims": True})):
        r = fn(s, **kw)
        assert isinstance(r, skiff.Tensor)
        np.testing.assert_allclose(r.numpy(), fn(x, **kw), rtol=1e-14)
    g, tg = _pair(x, requires_grad=True)
    np.mean(g).backward()
    tg.mean().backward()
    np.testing.assert_allclose(g.grad.numpy(), tg.grad.numpy(), rtol=1e-15)
    assert np.sum(s, dtype=np.float32).dtype == np.float32


class _DeviceArray:
    """An array type with cupy's protocol: its operator, meeting an object whose
    ``__array_ufunc__`` is not None, calls numpy's ufunc, and its own ``__array_ufunc__``
    declines operands it does not know (cupy declines what has no CUDA array interface)."""

    def __init__(self, a):
        self.a = np.asarray(a)
        self.shape, self.dtype, self.ndim = self.a.shape, self.a.dtype, self.a.ndim

    def _defer(self, other):  # cupy's _should_use_rop
        return not isinstance(other, _DeviceArray) and getattr(other, "__array_ufunc__", 0) is None

    def __add__(self, other):
        if self._defer(other):
            return NotImplemented
        return np.add(self, other)

    def __matmul__(self, other):  # cupy runs its own matmul unless it defers
        if self._defer(other):
            return NotImplemented
        return _DeviceArray(self.a @ (other.a if isinstance(other, _DeviceArray) else other))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or not all(
                isinstance(x, (_DeviceArray, np.ndarray, float, int)) for x in inputs):
            return NotImplemented
        return _DeviceArray(ufunc(*(x.a if isinstance(x, _DeviceArray) else x
                                    for x in inputs), **kwargs))


def test_foreign_device_array_plus_tensor_is_a_tensor():
    d = _DeviceArray([1.0, 2.0])
    s, _ = _pair([3.0, 4.0], requires_grad=True)
    r = d + s
    assert isinstance(r, skiff.Tensor) and r.requires_grad
    assert isinstance(r._data, _DeviceArray)
    np.testing.assert_array_equal(r._data.a, [4.0, 6.0])
    m = _DeviceArray(np.eye(2) * 2.0) @ s
    assert isinstance(m, skiff.Tensor) and m.requires_grad
    np.testing.assert_array_equal(m._data.a, [6.0, 8.0])
