"""A port that renames ``torch`` to ``skiff`` reaches ``torch.amp`` / ``torch.random`` as
attributes of the package (``torch.amp.autocast(...)``, ``torch.random.fork_rng()``) and
``torch.autocast`` / ``torch.masked_scatter`` as top-level names. Oracle: torch's own
package has each of them; skiff's must too, with the same call working."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("path", ["amp.autocast", "amp.GradScaler", "random.fork_rng",
                                  "random.manual_seed", "autocast", "masked_scatter",
                                  "fft.rfft2", "fft.irfft2", "view_as_real", "view_as_complex",
                                  "complex", "angle", "is_complex", "real", "imag", "conj"])
def test_torch_paths_reach_skiff_names(path):
    import skiff

    def walk(root):
        obj = root
        for part in path.split("."):
            obj = getattr(obj, part)
        return obj

    assert callable(walk(torch))
    assert callable(walk(skiff))


def test_fork_rng_restores_the_draws_as_torch_does():
    import skiff

    skiff.manual_seed(3)
    with skiff.random.fork_rng():
        skiff.randn(4)
    after_fork = skiff.randn(4).numpy()
    skiff.manual_seed(3)
    assert (skiff.randn(4).numpy() == after_fork).all()
    torch.manual_seed(3)
    with torch.random.fork_rng():
        torch.randn(4)
    t_after = torch.randn(4)
    torch.manual_seed(3)
    assert torch.equal(torch.randn(4), t_after)


def test_complex_dtypes_at_the_top_level_as_torch():
    """An FNO port's first line, ``torch.rand(..., dtype=torch.cfloat)``."""
    import numpy as np

    import skiff

    for name, want in (("cfloat", np.complex64), ("cdouble", np.complex128),
                       ("complex64", np.complex64), ("complex128", np.complex128)):
        assert str(getattr(torch, name)) == f"torch.{np.dtype(want).name}"
        assert np.dtype(getattr(skiff, name)) == np.dtype(want)
    w = skiff.rand(2, 3, dtype=skiff.cfloat)
    assert w.dtype == np.complex64 and tuple(skiff.view_as_real(w).shape) == (2, 3, 2)
