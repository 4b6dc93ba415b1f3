"""Round 43 (h16): torch's top-level names a script run by ``import skiff as torch`` uses, each
against torch 2.13: ``Size``, ``dtype``, ``pi``/``e``/``inf``/``nan``, the memory formats
(accepted where torch accepts them, values unchanged) and the legacy dense
``FloatTensor``/``DoubleTensor``/``LongTensor``."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

import skiff

torch = pytest.importorskip("torch")

X = np.random.default_rng(4316).standard_normal((2, 3, 4, 5))


@pytest.mark.parametrize("name", ["pi", "e", "inf", "nan"])
def test_constants_are_torchs(name):
    ours, theirs = getattr(skiff, name), getattr(torch, name)
    assert type(ours) is type(theirs) is float
    assert ours == theirs or (math.isnan(ours) and math.isnan(theirs))


def test_size_compares_slices_adds_and_counts_as_torchs():
    s, ts = skiff.zeros(2, 3, 4).size(), torch.zeros(2, 3, 4).size()
    S, TS = skiff.Size([2, 3, 4]), torch.Size([2, 3, 4])
    for a, b in ((s, ts), (S, TS), (S, ts), (s, TS)):
        assert a == b and tuple(a) == tuple(b) and hash(a) == hash(b)
    assert S == (2, 3, 4) and S == s and S != (2, 3)
    assert isinstance(S, tuple) and isinstance(s, skiff.Size) and isinstance(S, skiff.Size)
    assert isinstance(skiff.zeros(2).shape, skiff.Size)
    for ours, theirs in ((S[1:], TS[1:]), (S + (5,), TS + (5,)), ((1,) + S, (1,) + TS),
                         (S + S, TS + TS)):
        assert type(ours) is skiff.Size and type(theirs) is torch.Size and ours == theirs
    assert type(S[0]) is type(TS[0]) is int
    assert S.numel() == TS.numel() == 24 and skiff.Size().numel() == torch.Size().numel() == 1
    assert repr(S) == repr(TS)
    with pytest.raises(TypeError):
        torch.Size([2.5])
    with pytest.raises(TypeError):
        skiff.Size([2.5])
    assert skiff.zeros(skiff.Size([2, 3])).shape == torch.zeros(torch.Size([2, 3])).shape


def test_dtype_isinstance_as_torchs():
    for ours, theirs in ((skiff.float32, torch.float32), (skiff.int64, torch.int64),
                         (skiff.bool, torch.bool), (skiff.complex64, torch.complex64),
                         (skiff.zeros(2).dtype, torch.zeros(2).dtype)):
        assert isinstance(ours, skiff.dtype) and isinstance(theirs, torch.dtype)
    assert not isinstance(3, skiff.dtype) and not isinstance(3, torch.dtype)
    assert not isinstance("float32", skiff.dtype) and not isinstance("float32", torch.dtype)


def test_memory_format_names_accepted_values_unchanged():
    x, tx = skiff.tensor(X), torch.tensor(X)
    for name in ("contiguous_format", "channels_last", "preserve_format"):
        assert isinstance(getattr(skiff, name), skiff.memory_format)
        assert isinstance(getattr(torch, name), torch.memory_format)
        assert repr(getattr(skiff, name)) == repr(getattr(torch, name))
        assert pickle.loads(pickle.dumps(getattr(skiff, name))) is getattr(skiff, name)
    cl, tcl = skiff.channels_last, torch.channels_last
    pairs = [
        (x.contiguous(memory_format=cl), tx.contiguous(memory_format=tcl)),
        (x.contiguous(memory_format=skiff.contiguous_format),
         tx.contiguous(memory_format=torch.contiguous_format)),
        (x.to(memory_format=cl), tx.to(memory_format=tcl)),
        (x.to(skiff.float64, memory_format=cl), tx.to(torch.float64, memory_format=tcl)),
        (x.clone(memory_format=cl), tx.clone(memory_format=tcl)),
        (skiff.clone(x, memory_format=cl), torch.clone(tx, memory_format=tcl)),
        (skiff.full_like(x, 2.0, memory_format=cl), torch.full_like(tx, 2.0, memory_format=tcl)),
        (skiff.zeros_like(x, memory_format=cl), torch.zeros_like(tx, memory_format=tcl)),
        (skiff.ones_like(x, memory_format=cl), torch.ones_like(tx, memory_format=tcl)),
    ]
    for ours, theirs in pairs:
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        assert tuple(ours.shape) == tuple(theirs.shape)
    # creators whose values are random or unset: the shape and dtype
    for make in ("empty_like", "randn_like", "rand_like"):
        ours = getattr(skiff, make)(x, memory_format=cl)
        theirs = getattr(torch, make)(tx, memory_format=tcl)
        assert ours.shape == theirs.shape and str(ours.dtype) == str(theirs.dtype)[6:]
    ours = skiff.empty(2, 3, 4, 5, memory_format=cl)
    assert ours.shape == torch.empty(2, 3, 4, 5, memory_format=tcl).shape
    # a value that is not a memory format: torch's TypeError
    with pytest.raises(TypeError):
        tx.contiguous(memory_format=3)
    with pytest.raises(TypeError, match="memory_format"):
        x.contiguous(memory_format=3)
    with pytest.raises(TypeError, match="memory_format"):
        skiff.empty_like(x, memory_format="channels_last")


@pytest.mark.parametrize("name", ["FloatTensor", "DoubleTensor", "LongTensor"])
def test_legacy_tensor_types_as_torchs(name):
    ours, theirs = getattr(skiff, name), getattr(torch, name)
    for args in ((2, 3), (torch.Size([2, 3]),), ([1, 2, 3],), ([[1.5, 2], [3, 4]],), ()):
        sargs = tuple(skiff.Size(a) if isinstance(a, torch.Size) else a for a in args)
        o, t = ours(*sargs), theirs(*args)
        assert o.shape == t.shape and str(o.dtype) == str(t.dtype)[6:]
        if args and not isinstance(args[0], int) and not isinstance(args[0], torch.Size):
            np.testing.assert_array_equal(o.numpy(), t.numpy())
    for dt, tdt in ((skiff.float32, torch.float32), (skiff.float64, torch.float64),
                    (skiff.int64, torch.int64)):
        assert isinstance(skiff.zeros(2, dtype=dt), ours) == isinstance(
            torch.zeros(2, dtype=tdt), theirs)
    x = skiff.tensor(X[0, 0])
    assert x.type(ours).dtype == np.dtype(str(torch.tensor(X[0, 0]).type(theirs).dtype)[6:])
    assert x.to(ours).type() == f"torch.{name}" == torch.tensor(X[0, 0]).type(theirs).type()


def test_legacy_type_of_a_tensor_of_another_dtype_is_torchs_type_error():
    with pytest.raises(TypeError):
        torch.FloatTensor(torch.zeros(2, dtype=torch.float64))
    with pytest.raises(TypeError, match="float32"):
        skiff.FloatTensor(skiff.zeros(2, dtype=skiff.float64))
    a, ta = skiff.zeros(2), torch.zeros(2)
    skiff.FloatTensor(a)[0] = 5.0
    torch.FloatTensor(ta)[0] = 5.0  # torch's shares the storage
    assert float(a[0]) == float(ta[0]) == 5.0
