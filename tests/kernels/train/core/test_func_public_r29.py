"""``from torch.func import jvp, jacfwd`` in a ported program: the forward-mode names reach
``skiff.func`` (they were only in the core's module). Oracle: torch.func on the same function."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")


def test_forward_mode_names_in_skiff_func_equal_torch():
    import skiff
    from skiff.func import jacfwd, jvp, linearize

    x0 = np.array([0.3, -1.2, 2.0])
    v0 = np.array([1.0, 0.5, -2.0])

    def f_s(x):
        return skiff.sin(x) * x ** 2

    def f_t(x):
        return torch.sin(x) * x ** 2

    out, tangent = jvp(f_s, (skiff.tensor(x0),), (skiff.tensor(v0),))
    t_out, t_tangent = torch.func.jvp(f_t, (torch.tensor(x0),), (torch.tensor(v0),))
    np.testing.assert_allclose(np.asarray(out.detach().numpy()), t_out.numpy(), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(tangent.detach().numpy()), t_tangent.numpy(),
                               rtol=1e-12)
    jac = jacfwd(f_s)(skiff.tensor(x0))
    np.testing.assert_allclose(np.asarray(jac.detach().numpy()),
                               torch.func.jacfwd(f_t)(torch.tensor(x0)).numpy(), rtol=1e-12)
    _, lin = linearize(f_s, skiff.tensor(x0))
    np.testing.assert_allclose(np.asarray(lin(skiff.tensor(v0)).detach().numpy()),
                               t_tangent.numpy(), rtol=1e-12)
    assert {"jvp", "jacfwd", "linearize"} <= set(skiff.func.__all__)
