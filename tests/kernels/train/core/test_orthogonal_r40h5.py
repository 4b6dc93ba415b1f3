"""Round 40 (h5): ``nn.utils.parametrizations.orthogonal`` in every case torch has, against
torch 2.13 on the CPU: ``use_trivialization=False`` (the ``geqrf`` reflectors as
``original``, the Householder map on tall, wide, square and batched weights; the exponential
and Cayley maps that cannot be assigned keep the weight, as torch's), a tall weight's
gradient through a given ``base``, a float64 weight under a float32 default dtype, and
torch's error messages.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import skiff  # noqa: E402


def _np(x):
    return np.asarray(x.detach().numpy() if hasattr(x, "detach") else x._data)


def _pair(shape, seed=0):
    """A torch and a skiff Linear (no bias) with the same float64 weight of ``shape``."""
    w = np.random.default_rng(seed).standard_normal(shape)
    tl = torch.nn.Linear(shape[-1], shape[-2], bias=False).double()
    tl.weight = torch.nn.Parameter(torch.tensor(w))
    sl = skiff.nn.Linear(shape[-1], shape[-2], bias=False)
    sl.weight = skiff.nn.Parameter(skiff.tensor(w))
    return tl, sl


def _grads(tl, sl, seed=1):
    shape = tuple(tl.weight.shape)
    x = np.random.default_rng(seed).standard_normal((6, shape[-1]))
    (tl(torch.tensor(x)) ** 3).sum().backward()
    (sl(skiff.tensor(x)) ** 3).sum().backward()
    return (tl.parametrizations.weight.original.grad.numpy(),
            _np(sl.parametrizations.weight.original.grad))


@pytest.mark.parametrize("shape,orth_map", [
    ((5, 3), None), ((3, 5), "householder"), ((4, 4), "householder"), ((2, 5, 3), None),
    ((5, 3), "cayley"), ((3, 5), "matrix_exp"), ((4, 4), None)])
def test_without_trivialization_weights_and_gradients_are_torchs(shape, orth_map):
    tl, sl = _pair(shape)
    torch.nn.utils.parametrizations.orthogonal(tl, orthogonal_map=orth_map,
                                               use_trivialization=False)
    skiff.nn.utils.parametrizations.orthogonal(sl, orthogonal_map=orth_map,
                                               use_trivialization=False)
    assert "base" not in dict(sl.named_buffers()) and \
        list(sl.state_dict()) == list(tl.state_dict())
    np.testing.assert_allclose(_np(sl.parametrizations.weight.original),
                               _np(tl.parametrizations.weight.original), atol=1e-12)
    np.testing.assert_allclose(_np(sl.weight), _np(tl.weight), atol=1e-12)
    if len(shape) == 2:
        g_t, g_s = _grads(tl, sl)
        np.testing.assert_allclose(g_s, g_t, atol=1e-11 * np.abs(g_t).max())
    if orth_map in ("householder", None) and shape[-1] != shape[-2] or orth_map == \
            "householder":  # assigning a new weight goes through the reflectors again
        w2 = np.random.default_rng(7).standard_normal(shape)
        with torch.no_grad():
            tl.weight = torch.tensor(w2)
        with skiff.no_grad():
            sl.weight = skiff.tensor(w2)
        np.testing.assert_allclose(_np(sl.weight), _np(tl.weight), atol=1e-12)
    else:  # torch's refusal when assigned
        with pytest.raises(NotImplementedError, match="use_trivialization=False"):
            sl.weight = skiff.tensor(np.eye(*shape))


@pytest.mark.parametrize("shape", [(6, 3), (3, 6)])
def test_householder_default_on_a_rectangular_weight_follows_torch_through_the_same_base(
        shape):
    """Trivialized (torch's default): the tall completion is random, so torch is given
    skiff's ``base``; the weight and the gradient of ``original`` are then torch's."""
    tl, sl = _pair(shape, seed=3)
    skiff.nn.utils.parametrizations.orthogonal(sl)
    torch.nn.utils.parametrizations.orthogonal(tl)
    assert tl.parametrizations.weight[0].orthogonal_map.name == \
        sl.parametrizations.weight[0].orthogonal_map == "householder"
    with torch.no_grad():
        tl.parametrizations.weight[0].base.copy_(
            torch.tensor(_np(sl.parametrizations.weight[0].base)))
    np.testing.assert_allclose(_np(sl.weight), _np(tl.weight), atol=1e-12)
    # one SGD step then the gradient again: a non-identity reflector set
    for _ in range(2):
        g_t, g_s = _grads(tl, sl)
        np.testing.assert_allclose(g_s, g_t, atol=1e-11 * np.abs(g_t).max())
        with torch.no_grad():
            tl.parametrizations.weight.original -= 0.05 * tl.parametrizations.weight.original.grad
        with skiff.no_grad():
            sl.parametrizations.weight.original -= 0.05 * sl.parametrizations.weight.original.grad
        tl.zero_grad()
        sl.zero_grad()
    np.testing.assert_allclose(_np(sl.weight), _np(tl.weight), atol=1e-12)
    w = _np(sl.weight)
    gram = w @ w.T if shape[0] < shape[1] else w.T @ w
    np.testing.assert_allclose(gram, np.eye(min(shape)), atol=1e-12)


@pytest.mark.parametrize("orth_map", [None, "householder", "cayley"])
def test_a_float64_weight_under_the_float32_default_stays_float64(orth_map):
    assert skiff.get_default_dtype() == skiff.float32
    tl, sl = _pair((4, 4), seed=5)
    torch.nn.utils.parametrizations.orthogonal(tl, orthogonal_map=orth_map)
    skiff.nn.utils.parametrizations.orthogonal(sl, orthogonal_map=orth_map)
    assert sl.parametrizations.weight.original.dtype == skiff.float64
    assert sl.weight.dtype == skiff.float64
    np.testing.assert_allclose(_np(sl.weight), _np(tl.weight), atol=1e-13)
    g_t, g_s = _grads(tl, sl)
    np.testing.assert_allclose(g_s, g_t, atol=1e-11 * np.abs(g_t).max())


def test_errors_are_torchs():
    def msg(T, fn):
        with pytest.raises(ValueError) as e:
            fn(T)
        return str(e.value)

    cases = [
        lambda T: T.nn.utils.parametrizations.orthogonal(T.nn.Linear(3, 3), "nope"),
        lambda T: T.nn.utils.parametrizations.orthogonal(T.nn.Linear(3, 3), "weight",
                                                         "exp"),
        lambda T: T.nn.utils.parametrizations.orthogonal(T.nn.Linear(3, 3), "bias"),
        lambda T: T.nn.utils.parametrizations.orthogonal(
            T.nn.Linear(3, 2, dtype=T.complex128), orthogonal_map="householder"),
    ]
    for fn in cases[1:]:
        assert msg(skiff, fn) == msg(torch, fn)
    assert "has no parameter or buffer with name 'nope'" in msg(skiff, cases[0])
    tl, sl = _pair((4, 2))
    torch.nn.utils.parametrizations.orthogonal(tl)
    skiff.nn.utils.parametrizations.orthogonal(sl)
    with pytest.raises(ValueError) as e_t:
        tl.weight = torch.zeros(2, 4, dtype=torch.float64)
    with pytest.raises(ValueError) as e_s:
        sl.weight = skiff.zeros(2, 4, dtype=skiff.float64)
    assert str(e_s.value) == str(e_t.value).replace("torch.Size([4, 2])", "(4, 2)") \
        .replace("torch.Size([2, 4])", "(2, 4)")
