"""Round 27: packed sequences (nn/packed_sequence.py) against torch 2.13 in float64:
``pack_padded_sequence`` / ``pad_packed_sequence`` / ``pack_sequence`` fields, and ``LSTM``,
``GRU``, ``RNN`` (layers, both directions, batch_first, unsorted lengths) on packed input:
outputs, final states and the gradients of the input and of every weight."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.nn.utils import rnn as trnn

import skiff
from skiff.nn.utils import rnn as srnn

RNG = np.random.default_rng(77)
LENGTHS = np.array([3, 6, 2, 5])  # unsorted, the longest (6) is the padded length


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach())


def test_pack_fields_match_torch():
    x = RNG.standard_normal((4, 6, 3))
    for sorted_ in (False, True):
        lens = np.sort(LENGTHS)[::-1].copy() if sorted_ else LENGTHS
        s = srnn.pack_padded_sequence(skiff.tensor(x), skiff.tensor(lens), batch_first=True,
                                      enforce_sorted=sorted_)
        t = trnn.pack_padded_sequence(torch.tensor(x), torch.tensor(lens), batch_first=True,
                                      enforce_sorted=sorted_)
        np.testing.assert_array_equal(_np(s.data), _np(t.data))
        np.testing.assert_array_equal(_np(s.batch_sizes), _np(t.batch_sizes))
        if not sorted_:
            np.testing.assert_array_equal(_np(s.sorted_indices), _np(t.sorted_indices))
            np.testing.assert_array_equal(_np(s.unsorted_indices), _np(t.unsorted_indices))
        ps, ls = srnn.pad_packed_sequence(s, batch_first=True, padding_value=-1.0,
                                          total_length=7)
        pt, lt = trnn.pad_packed_sequence(t, batch_first=True, padding_value=-1.0,
                                          total_length=7)
        np.testing.assert_array_equal(_np(ps), _np(pt))
        np.testing.assert_array_equal(_np(ls), _np(lt))
    seqs = [RNG.standard_normal((n, 2)) for n in (5, 3, 1)]
    s = srnn.pack_sequence([skiff.tensor(a) for a in seqs])
    t = trnn.pack_sequence([torch.tensor(a) for a in seqs])
    np.testing.assert_array_equal(_np(s.data), _np(t.data))
    # a PackedSequence rebuilt from torch's fields (data changed elementwise) unpacks alike
    s2 = srnn.PackedSequence(s.data * 2, s.batch_sizes, s.sorted_indices, s.unsorted_indices)
    t2 = trnn.PackedSequence(t.data * 2, t.batch_sizes, t.sorted_indices, t.unsorted_indices)
    np.testing.assert_array_equal(_np(srnn.pad_packed_sequence(s2)[0]),
                                  _np(trnn.pad_packed_sequence(t2)[0]))
    with pytest.raises(RuntimeError, match="enforce_sorted"):
        srnn.pack_padded_sequence(skiff.tensor(x), LENGTHS, batch_first=True)


@pytest.mark.parametrize("kind,layers,bidir", [("LSTM", 2, True), ("LSTM", 1, False),
                                                ("GRU", 2, True), ("RNN", 1, True)])
def test_recurrent_on_packed_input(kind, layers, bidir):
    torch.manual_seed(0)
    tm = getattr(torch.nn, kind)(3, 4, num_layers=layers, bidirectional=bidir,
                                 batch_first=True).double()
    sm = getattr(skiff.nn, kind)(3, 4, num_layers=layers, bidirectional=bidir,
                                 batch_first=True, dtype=skiff.float64)
    sm.load_state_dict({k: skiff.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    x = RNG.standard_normal((4, 6, 3))
    G = RNG.standard_normal((4, 6, 4 * (2 if bidir else 1)))
    res = []
    for lib, rnn, m in ((skiff, srnn, sm), (torch, trnn, tm)):
        xt = lib.tensor(x, requires_grad=True)
        packed = rnn.pack_padded_sequence(xt, lib.tensor(LENGTHS), batch_first=True,
                                          enforce_sorted=False)
        out, state = m(packed)
        padded, _ = rnn.pad_packed_sequence(out, batch_first=True)
        h = state[0] if kind == "LSTM" else state
        loss = (padded * lib.tensor(G)).sum() + (h * h).sum()
        if kind == "LSTM":
            loss = loss + state[1].sum()
        loss.backward()
        res.append([_np(padded), _np(h), _np(xt.grad)]
                   + [_np(p.grad) for _, p in sorted(m.named_parameters())])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-13)
