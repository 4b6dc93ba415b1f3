"""Round 37 (h4): torch Tensor methods a port still missed (in-place unary/binary math and
comparisons, torch's aliases, broadcast_to, itemsize, ...), values and gradients against
torch 2.13 in float64."""

import numpy as np
import pytest

import skiff

torch = pytest.importorskip("torch")

R = np.random.default_rng(37)
X, Y = R.uniform(0.2, 0.8, (3, 4)), R.uniform(0.2, 0.8, (3, 4))
UNARY = ("absolute acos arccos arcsin arcsinh arctan arctanh asin asinh atan atanh cos cosh sin "
         "sinh tan deg2rad rad2deg digamma erf erfc erfinv exp2 expm1 frac i0 lgamma log10 "
         "log1p log2 reciprocal rsqrt sgn sinc trunc negative").split()
BINARY = ("arctan2 atan2 hypot fmod float_power xlogy multiply subtract divide true_divide "
          "ldexp").split()
COMPARE = "eq ne lt le gt ge greater greater_equal less less_equal not_equal".split()
# torch 2.13 has no derivative for in-place asinh_/atanh_/arcsinh_/arctanh_ (skiff's is the
# out-of-place one's)
NO_GRAD = ["asinh", "atanh", "arcsinh", "arctanh"]


def _run(lib, name):
    x0 = lib.tensor(X).requires_grad_(True)
    x = x0 * 1
    out = getattr(x, name + "_")(lib.tensor(Y)) if name in BINARY + COMPARE else \
        getattr(x, name + "_")()
    assert out is x
    grad = None
    if name not in COMPARE + NO_GRAD:
        (x * lib.tensor(X)).sum().backward()
        grad = (lib.zeros_like(x0) + x0.grad).detach().numpy()  # (torch's sgn_: a ZeroTensor)
    return x.detach().numpy().copy(), grad, str(x.dtype).split(".")[-1]


@pytest.mark.parametrize("name", UNARY + BINARY + COMPARE)
def test_in_place_math_is_torchs(name):
    (tv, tg, tdt), (sv, sg, sdt) = _run(torch, name), _run(skiff, name)
    assert tdt == sdt
    np.testing.assert_allclose(sv, tv, rtol=1e-12, atol=1e-15)
    if tg is not None:
        np.testing.assert_allclose(sg, tg, rtol=1e-8, atol=1e-14)  # digamma's: 4e-10


def test_aliases_and_small_methods_are_torchs():
    def probe(lib):
        t = lib.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=lib.float64)
        inf = lib.tensor([float("inf"), -float("inf"), 1.0], dtype=lib.float64)
        return [t.greater(2.0), t.less_equal(2.0), t.not_equal(2.0), t.multiply(t),
                t.subtract(t, alpha=2),
                t.negative(), t.ndimension(), t.itemsize, t.is_signed(),
                lib.tensor([1], dtype=lib.uint8).is_signed(),
                tuple(t.broadcast_to((3, 2, 2)).shape),
                t.is_same_size(t), t.get_device(), inf.isposinf(), inf.isneginf(),
                [tuple(p.shape) for p in t.split_with_sizes([1, 1], 1)],
                lib.tensor([12, 18]).gcd(lib.tensor([8, 12])),
                lib.tensor([4, 6]).lcm(lib.tensor([6, 4])),
                t.ldexp(lib.tensor([1.0, 2.0], dtype=lib.float64)),
                t.addmm(t, t), t.cov(), t.corrcoef(), t.mvlgamma(1), t.igamma(t), t.i0()]
    for a, b in zip(probe(skiff), probe(torch)):
        if hasattr(b, "numpy"):
            np.testing.assert_allclose(np.asarray(a.numpy(), dtype=np.float64),
                                       np.asarray(b.numpy(), dtype=np.float64), rtol=1e-12)
        else:
            assert a == (tuple(b) if isinstance(b, torch.Size) else b)


@pytest.mark.parametrize("name", ["floor", "ceil", "round", "trunc", "fix", "sign", "sgn"])
def test_rounding_records_a_zero_gradient_as_torchs(name):
    """A loss through floor/round/sign alone has a graph in torch (zero gradients); skiff's
    results did not require grad, so its backward raised."""
    got = []
    for lib in (torch, skiff):
        x = lib.tensor(X).requires_grad_(True)
        y = getattr(x, name)()
        (y * 3).sum().backward()
        x.grad = None  # (torch's sgn leaves an immutable ZeroTensor there)
        g, = lib.autograd.grad((x * x * getattr(x, name)()).sum(), [x], create_graph=True)
        g.sum().backward()
        got.append((y.requires_grad, np.asarray((lib.zeros_like(x) + x.grad).detach().numpy())))
    assert got[0][0] and got[1][0]
    np.testing.assert_allclose(got[1][1], got[0][1], rtol=1e-12)
