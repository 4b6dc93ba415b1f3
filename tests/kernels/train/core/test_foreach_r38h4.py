"""Round 38 (h4): torch's ``torch._foreach_*`` list ops (EMA updates as timm's
``ModelEmaV3`` and diffusers' ``EMAModel(foreach=True)`` write them) against torch 2.13:
every op of :mod:`foreach_r38` with scalar, scalar-list and tensor-list operands, in place
and not (the in-place ones return their list, as torch 2.13's)."""

import numpy as np
import pytest

import skiff
from skiff.kernels.train.core import foreach_r38 as F

torch = pytest.importorskip("torch")

R = np.random.default_rng(38)
A = [R.uniform(0.5, 2.0, size=s) for s in ((3,), (2, 4), ())]
B = [R.uniform(0.5, 2.0, size=s) for s in ((3,), (2, 4), ())]
C = [R.uniform(0.5, 2.0, size=s) for s in ((3,), (2, 4), ())]


def _lists(lib):
    return ([lib.tensor(a.copy()) for a in A], [lib.tensor(b) for b in B],
            [lib.tensor(c) for c in C])


def _second(name, lib, b):
    if name in ("lerp", "addcmul", "addcdiv"):
        return (b, _lists(lib)[2], 0.3) if name == "lerp" else (b, _lists(lib)[2])
    return {"pow": (2.0,), "clamp_min": (1.0,), "clamp_max": (1.0,)}.get(name, (b,))


@pytest.mark.parametrize("name", sorted(n for n in F.__all__ if n != "_foreach_copy_"))
def test_foreach_op_is_torchs(name):
    base = name[len("_foreach_"):].rstrip("_")
    inplace = name.endswith("_")
    results = []
    for lib in (torch, skiff):
        a, b, _ = _lists(lib)
        fn = getattr(torch, name) if lib is torch else getattr(F, name)
        if base in F._UNARY or base == "norm":
            args = ()
        elif base == "lerp":
            args = (b, 0.3)
        elif base in ("addcmul", "addcdiv"):
            args = (b, _lists(lib)[2])
        else:
            args = _second(base, lib, b)
        out = fn(a, *args)
        results.append([np.asarray(t.numpy()) for t in (a if inplace else out)])
        assert (out is a) == inplace
    for x, y in zip(results[1], results[0]):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-15)


def test_foreach_scalar_lists_alpha_and_copy_are_torchs():
    results = []
    for lib in (torch, skiff):
        f = torch if lib is torch else F
        a, b, c = _lists(lib)
        f._foreach_mul_(a, [0.5, 2.0, 3.0])
        f._foreach_add_(a, b, alpha=0.1)
        f._foreach_addcmul_(a, b, c, value=0.25)
        f._foreach_addcdiv_(a, b, c, [1.0, 2.0, 3.0])
        f._foreach_lerp_(a, b, [lib.tensor(0.1), lib.tensor(0.5), lib.tensor(0.9)])
        d = [t * 0 for t in a]
        f._foreach_copy_(d, a)
        results.append([np.asarray(t.numpy()) for t in a + d])
    for x, y in zip(results[1], results[0]):
        np.testing.assert_allclose(x, y, rtol=1e-12)
    with pytest.raises(RuntimeError, match="same number of tensors"):
        F._foreach_add(_lists(skiff)[0], _lists(skiff)[1][:2])
