"""Round 39: torch's top-level LU names reach ``skiff.`` as torch code calls them (the
functions are tested against torch in tests/kernels/train/core/test_linalg_lu_r39h4.py; here:
that a port's ``torch.lu_unpack(*torch.linalg.lu_factor(A))`` runs with ``skiff`` for ``torch``)."""

import numpy as np
import pytest

import skiff

torch = pytest.importorskip("torch")


def test_lu_unpack_and_the_legacy_lu_at_the_top_level_as_torchs():
    a = np.random.default_rng(39).normal(size=(4, 4))
    tP, tL, tU = torch.lu_unpack(*torch.linalg.lu_factor(torch.tensor(a)))
    sP, sL, sU = skiff.lu_unpack(*skiff.linalg.lu_factor(skiff.tensor(a)))
    for s, t in ((sP, tP), (sL, tL), (sU, tU)):
        np.testing.assert_allclose(s.numpy(), t.numpy(), atol=1e-14)
    lu, piv = skiff.lu(skiff.tensor(a))
    np.testing.assert_allclose(lu.numpy(), torch.lu(torch.tensor(a))[0].numpy(), atol=1e-14)
    assert {"lu", "lu_solve", "lu_unpack"} <= set(dir(skiff))


def test_geqrf_and_ormqr_at_the_top_level_and_as_methods_as_torchs():
    """A port's least-squares step: ``torch.geqrf`` then ``Tensor.ormqr`` (Q^T b) as torch."""
    rng = np.random.default_rng(391)
    a, b = rng.normal(size=(5, 3)), rng.normal(size=(5, 2))
    tq, tt = torch.geqrf(torch.tensor(a))
    sq, st = skiff.geqrf(skiff.tensor(a))
    np.testing.assert_allclose(sq.numpy(), tq.numpy(), atol=1e-13)
    want = tq.ormqr(tt, torch.tensor(b), transpose=True).numpy()
    np.testing.assert_allclose(sq.ormqr(st, skiff.tensor(b), transpose=True).numpy(), want,
                               atol=1e-13)
    assert {"geqrf", "ormqr"} <= set(dir(skiff))
