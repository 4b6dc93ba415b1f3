import numpy as np
import pytest

from skiff.kernels.backend import ops
from skiff.kernels.backend.testing import assert_close, check_op


@pytest.fixture
def fresh_op():
    name = f"test.scale_add.{np.random.default_rng().integers(1 << 30)}"

    @ops.custom_op(name)
    def scale_add(a, x, y):
        return a * x + y

    yield scale_add
    ops._REGISTRY.pop(name, None)


def test_reference_runs_without_fast_impls(fresh_op):
    out = fresh_op(2.0, np.ones(3), np.arange(3.0))
    np.testing.assert_array_equal(out, [2.0, 3.0, 4.0])


def test_dispatch_prefers_highest_priority_available(fresh_op):
    calls = []

    @fresh_op.implement("cpu", "slow", priority=1)
    def _slow(a, x, y):
        calls.append("slow")
        return a * x + y

    @fresh_op.implement("cpu", "fast", priority=5)
    def _fast(a, x, y):
        calls.append("fast")
        return a * x + y

    @fresh_op.implement("cpu", "broken-but-unavailable", priority=9, available=lambda: False)
    def _never(a, x, y):
        raise AssertionError("unavailable impl called")

    fresh_op(1.0, np.ones(2), np.ones(2))
    assert calls == ["fast"]


def test_reference_forced_by_env(fresh_op, monkeypatch):
    @fresh_op.implement("cpu", "wrong")
    def _wrong(a, x, y):
        return a * x - y

    monkeypatch.setenv("SKIFF_REFERENCE_OPS", "1")
    np.testing.assert_array_equal(fresh_op(1.0, np.ones(2), np.ones(2)), [2.0, 2.0])


def test_check_op_catches_a_wrong_fast_impl(fresh_op):
    @fresh_op.implement("cpu", "wrong")
    def _wrong(a, x, y):
        return a * x - y

    with pytest.raises(AssertionError, match=r"wrong"):
        check_op(fresh_op, 2.0, np.ones(4), np.ones(4))


def test_check_op_passes_a_correct_numba_impl(fresh_op):
    pytest.importorskip("numba")
    import numba

    @numba.njit(cache=False)
    def _kernel(a, x, y, out):
        for i in range(x.size):
            out[i] = a * x[i] + y[i]

    @fresh_op.implement("cpu", "numba", available=ops.numba_available)
    def _numba(a, x, y):
        out = np.empty_like(x)
        _kernel(a, x, y, out)
        return out

    x = np.random.default_rng(1).standard_normal(100)
    assert check_op(fresh_op, 0.5, x, x[::-1].copy(), require_fast=True) == ["numba"]


def test_duplicate_names_and_unknown_lookup(fresh_op):
    with pytest.raises(ValueError, match="already registered"):
        ops.custom_op(fresh_op.name)(lambda: None)
    with pytest.raises(KeyError, match="no custom op"):
        ops.get_op("no.such.op")


def test_unknown_backend_rejected(fresh_op):
    with pytest.raises(ValueError, match="cpu, gpu"):
        fresh_op.implement("tpu", "x")


def test_assert_close_reports_worst_element():
    with pytest.raises(AssertionError, match=r"at \(1,\)"):
        assert_close(np.array([1.0, 5.0]), np.array([1.0, 1.0]))


@pytest.fixture
def implementing_module(tmp_path, monkeypatch, fresh_op):
    """A module that registers a fast 'cpu' twin on ``fresh_op`` when imported."""
    import sys

    name = f"skiff_lazy_twin_{fresh_op.name.rsplit('.', 1)[-1]}"
    (tmp_path / f"{name}.py").write_text(
        "from skiff.kernels.backend import ops\n"
        f"op = ops.get_op({fresh_op.name!r})\n"
        "calls = []\n"
        "@op.implement('cpu', 'lazy')\n"
        "def _lazy(a, x, y):\n"
        "    calls.append(1)\n"
        "    return a * x + y\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def test_implement_in_imports_the_module_at_first_dispatch(fresh_op, implementing_module):
    import sys

    fresh_op.implement_in("cpu", implementing_module)
    fresh_op.implement_in("gpu", "no.such.module.for.gpu")  # never looked up on the CPU
    assert implementing_module not in sys.modules
    assert f"<in {implementing_module}>" in repr(fresh_op)
    np.testing.assert_array_equal(fresh_op(2.0, np.ones(2), np.ones(2)), [3.0, 3.0])
    assert sys.modules[implementing_module].calls == [1]
    assert [i.name for i in fresh_op.available_impls("cpu")] == ["lazy"]
    assert check_op(fresh_op, 0.5, np.ones(3), np.ones(3), require_fast=True) == ["lazy"]


def test_implement_in_listing_imports_and_errors_surface(fresh_op, implementing_module):
    fresh_op.implement_in("cpu", implementing_module)
    assert [(i.backend, i.name) for i in fresh_op.impls] == [("cpu", "lazy")]
    fresh_op.implement_in("gpu", "no.such.module.for.gpu")
    for _ in range(2):  # a module that cannot be imported stays declared, and raises each time
        with pytest.raises(ModuleNotFoundError):
            fresh_op.available_impls("gpu")
    with pytest.raises(ValueError, match="cpu, gpu"):
        fresh_op.implement_in("tpu", implementing_module)
