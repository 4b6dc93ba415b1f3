"""Round 40 (h5): ``addmm``/``baddbmm``/``addbmm`` under a CPU autocast (on torch's
lower-precision list) give the autocast dtype as torch's, with torch's values (the three
operands rounded, the sum formed in float32, rounded once) and float32 gradients for float32
leaves; against torch 2.13 on the CPU."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import skiff  # noqa: E402


def _np(x):
    return x.detach().float().numpy() if isinstance(x, torch.Tensor) else np.asarray(
        x.detach().float()._data)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_add_products_under_cpu_autocast_are_torchs(dtype):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in
              ((4, 6), (4, 5), (5, 6), (3, 4, 6), (3, 4, 5), (3, 5, 6))]

    def run(T):
        i, a, b = (T.tensor(v, requires_grad=True) for v in arrays[:3])
        bi, ba, bb = (T.tensor(v) for v in arrays[3:])
        with T.autocast("cpu", dtype=getattr(T, dtype)):
            out = [T.addmm(i, a, b, beta=0.5, alpha=2.0), i.addmm(a, b),
                   T.baddbmm(bi, ba, bb, alpha=-1.0), T.addbmm(i, ba, bb)]
        (out[0].float() ** 2).sum().backward()
        return ([str(o.dtype).replace("torch.", "") for o in out],
                [_np(o) for o in out], [_np(t.grad) for t in (i, a, b)],
                [str(t.grad.dtype).replace("torch.", "") for t in (i, a, b)])

    ours, theirs = run(skiff), run(torch)
    assert ours[0] == theirs[0] == [dtype] * 4
    assert ours[3] == theirs[3] == ["float32"] * 3
    for k, (x, y) in enumerate(zip(ours[1], theirs[1])):
        # addbmm: torch sums the batch's products in its own order (one 16-bit ulp)
        tol = 0 if k < 3 else (2.0 ** -7 if dtype == "bfloat16" else 2.0 ** -10)
        np.testing.assert_allclose(x, y, rtol=tol, atol=tol * np.abs(y).max())
    for x, y in zip(ours[2], theirs[2]):
        np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-6 * np.abs(y).max())
