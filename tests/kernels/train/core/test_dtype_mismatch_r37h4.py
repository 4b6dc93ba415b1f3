"""Round 37 (h4): a matrix product or a convolution of operands in two dtypes raises as
torch's does (numpy promoted the float32 one silently: a stray float64 batch doubled a
model's cost, or a float64 weight hid in a float32 model), with torch's exception type and
words; the same programs in one dtype (and under autocast) still run."""

import numpy as np
import pytest

import skiff
import skiff.nn.functional as SF

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _cases(lib, F):
    f32 = lambda *s: lib.ones(*s)  # noqa: E731
    f64 = lambda *s: lib.ones(*s, dtype=lib.float64)  # noqa: E731
    return {
        "matmul": lambda: f32(2, 3) @ f64(3, 4),
        "mm": lambda: lib.mm(f32(2, 3), f64(3, 4)),
        "bmm": lambda: lib.bmm(f32(1, 2, 3), f64(1, 3, 4)),
        "matmul_batched": lambda: lib.matmul(f32(2, 2, 3), f64(3, 4)),
        "matmul_vec": lambda: lib.matmul(f32(3), f64(3)),
        "matmul_mat_vec": lambda: lib.matmul(f32(2, 3), f64(3)),
        "dot": lambda: lib.dot(f32(3), f64(3)),
        "mv": lambda: lib.mv(f32(2, 3), f64(3)),
        "int_float": lambda: lib.ones(2, 3, dtype=lib.int64) @ f32(3, 2),
        "linear": lambda: F.linear(f32(2, 3), f64(4, 3)),
        "linear_bias": lambda: F.linear(f32(2, 3), f32(4, 3), f64(4)),
        "nn_Linear": lambda: lib.nn.Linear(3, 4)(f64(2, 3)),
        "addmm": lambda: lib.addmm(f32(2, 4), f32(2, 3), f64(3, 4)),
        "baddbmm": lambda: lib.baddbmm(f32(1, 2, 4), f32(1, 2, 3), f64(1, 3, 4)),
        "einsum": lambda: lib.einsum("ij,jk->ik", f32(2, 3), f64(3, 4)),
        "tensordot": lambda: lib.tensordot(f32(2, 3), f64(3, 4), dims=1),
        "bilinear": lambda: F.bilinear(f32(2, 3), f32(2, 3), f64(2, 3, 3)),
        "conv2d": lambda: F.conv2d(f32(1, 2, 5, 5), f64(3, 2, 3, 3)),
        "conv2d_bias": lambda: F.conv2d(f32(1, 2, 5, 5), f32(3, 2, 3, 3), f64(3)),
        "conv2d_depthwise": lambda: F.conv2d(f32(1, 2, 5, 5), f64(2, 1, 3, 3), groups=2),
        "nn_Conv2d": lambda: lib.nn.Conv2d(2, 3, 3)(f64(1, 2, 5, 5)),
        "conv1d": lambda: F.conv1d(f64(1, 2, 5), f32(3, 2, 3)),
        "conv3d": lambda: F.conv3d(f64(1, 2, 4, 4, 4), f32(3, 2, 3, 3, 3)),
        "conv_transpose1d": lambda: F.conv_transpose1d(f64(1, 2, 5), f32(2, 3, 3)),
        "conv_transpose2d": lambda: F.conv_transpose2d(f64(1, 2, 5, 5), f32(2, 3, 3, 3)),
        "conv_transpose2d_groups": lambda: F.conv_transpose2d(f64(1, 2, 5, 5),
                                                              f32(2, 3, 3, 3), groups=2),
        "conv_transpose3d": lambda: F.conv_transpose3d(f64(1, 2, 3, 3, 3), f32(2, 3, 2, 2, 2)),
    }


NAMES = sorted(_cases(torch, TF))


@pytest.mark.parametrize("name", NAMES)
def test_mixed_dtypes_raise_as_torch(name):
    with pytest.raises(RuntimeError) as want:
        _cases(torch, TF)[name]()
    with pytest.raises(RuntimeError) as got:
        _cases(skiff, SF)[name]()
    words = str(want.value).split(":")[0].split(" but ")[0]
    if name in ("matmul", "mm", "int_float", "linear", "conv2d_bias", "dot"):
        assert str(got.value).startswith(words)  # torch's words where one form fits


def test_one_dtype_still_runs_and_matches_torch():
    rng = np.random.default_rng(0)
    for dt in (np.float64, np.float32):
        a, b = rng.standard_normal((2, 3)).astype(dt), rng.standard_normal((3, 4)).astype(dt)
        np.testing.assert_allclose((skiff.tensor(a) @ skiff.tensor(b)).numpy(),
                                   (torch.tensor(a) @ torch.tensor(b)).numpy(), rtol=1e-6)
        x, w = rng.standard_normal((1, 2, 5, 5)).astype(dt), rng.standard_normal(
            (3, 2, 3, 3)).astype(dt)
        np.testing.assert_allclose(SF.conv2d(skiff.tensor(x), skiff.tensor(w)).numpy(),
                                   TF.conv2d(torch.tensor(x), torch.tensor(w)).numpy(),
                                   rtol=1e-5, atol=1e-6)
    ints = skiff.ones(2, 3, dtype=skiff.int64) @ skiff.ones(3, 2, dtype=skiff.int64)
    assert ints.dtype == np.int64 and int(ints[0, 0]) == 3  # torch's: integers multiply
    outer = skiff.outer(skiff.ones(3), skiff.ones(2, dtype=skiff.float64))
    assert outer.dtype == np.float64  # torch promotes outer (it is elementwise)


def test_autocast_casts_before_the_check():
    lin = skiff.nn.Linear(3, 4)
    with skiff.autocast("cpu", dtype=skiff.bfloat16):
        y = lin(skiff.ones(2, 3))
        z = skiff.ones(2, 3) @ skiff.ones(3, 2, dtype=skiff.bfloat16)
    assert str(y.dtype) == "bfloat16" and str(z.dtype) == "bfloat16"
