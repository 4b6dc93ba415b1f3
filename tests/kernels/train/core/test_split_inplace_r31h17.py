"""Round 31 (h17): in-place ops on ``split``/``chunk``/``unbind`` pieces of a tensor in the
graph. torch 2.13 (the oracle) refuses them ("... is a view and is being modified inplace ...
returns multiple views"); skiff did not, and left the split tensor's values and gradients
wrong. Both must refuse the same programs, and agree on the ones torch allows (no_grad
writes, ``.clone()``d pieces, ``tensor_split``, pieces of a tensor outside the graph)."""

import numpy as np
import pytest

import skiff

torch = pytest.importorskip("torch")


def _base(m):
    w = m.arange(8, dtype=m.float64).reshape(2, 4).requires_grad_()
    return w, w * 2


def _chunk_mul(m):
    _, y = _base(m)
    a, _ = y.chunk(2, dim=1)
    a.mul_(3)


def _split_add(m):
    _, y = _base(m)
    a, b = y.split(1, dim=0)
    b.add_(a)


def _split_sizes_sigmoid(m):
    _, y = _base(m)
    _, b = y.split([1, 3], dim=1)
    b.sigmoid_()


def _unbind_mul(m):
    _, y = _base(m)
    a, b = y.unbind(0)
    a.mul_(b)


def _leaf_chunk(m):
    w, _ = _base(m)
    a, _ = w.chunk(2, 1)
    a.mul_(2)


def _slice_of_piece(m):
    _, y = _base(m)
    a, _ = y.split(1)
    a[0, 1:3].mul_(3)


def _setitem(m):
    _, y = _base(m)
    a, _ = y.split(1)
    a[0, 0] = 5.0


def _view_of_piece(m):
    _, y = _base(m)
    a, _ = y.split(2, dim=1)
    a.t().add_(1)


def _no_grad_base_grad_value(m):
    y = m.ones(4, dtype=m.float64)
    s = m.tensor(2.0, dtype=m.float64, requires_grad=True)
    a, _ = y.split(2)
    a.mul_(s)


REFUSED = [_chunk_mul, _split_add, _split_sizes_sigmoid, _unbind_mul, _leaf_chunk,
           _slice_of_piece, _setitem, _view_of_piece, _no_grad_base_grad_value]


@pytest.mark.parametrize("prog", REFUSED, ids=[f.__name__[1:] for f in REFUSED])
def test_refused_as_torch_refuses(prog):
    with pytest.raises(RuntimeError, match="modified inplace"):
        prog(torch)
    with pytest.raises(RuntimeError, match=r"output \d of (split|unbind) is a view .*clone"):
        prog(skiff)


def _no_grad_write(m):
    w, y = _base(m)
    with m.no_grad():
        a, b = y.split(2, dim=1)
        a.mul_(3)
        b.unbind(0)[1].add_(1)
    (y * y).sum().backward()
    return y.detach(), w.grad


def _cloned(m):
    w, y = _base(m)
    a, b = y.split([1, 3], dim=1)
    a = a.clone()
    a.mul_(3)
    b = b.clone()
    b.sigmoid_()
    (a * b).sum().backward()
    return a.detach(), w.grad


def _tensor_split(m):
    w, y = _base(m)
    a, _ = y.tensor_split(2, dim=1)
    a.mul_(3)
    (y * y).sum().backward()
    return y.detach(), w.grad


def _outside_graph(m):
    y = m.arange(6, dtype=m.float64)
    a, _ = y.chunk(2)
    a.mul_(3)
    y.unbind(0)[5].add_(10)
    return y, y


ALLOWED = [_no_grad_write, _cloned, _tensor_split, _outside_graph]


@pytest.mark.parametrize("prog", ALLOWED, ids=[f.__name__[1:] for f in ALLOWED])
def test_allowed_programs_match_torch(prog):
    for got, want in zip(prog(skiff), prog(torch)):
        np.testing.assert_allclose(np.asarray(got.detach().numpy()), want.detach().numpy(),
                                   rtol=1e-12)
