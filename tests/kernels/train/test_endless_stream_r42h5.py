"""Round 42 (h5): an endless generator passed with ``epochs=`` (a stream has no epoch) is
refused once what it read fills half the memory the machine has free, at the first sample's
size, where it was read up to 4,194,304 samples first (gigabytes for image-sized samples,
11.9 CPU s for samples of 3 floats); a finite stream and ``steps=`` are read as before.

The machine's free memory is given here (the probe of ``/proc/meminfo`` is replaced by a
figure, 64 MiB) so that 1 MiB samples reach the bound in 32 of them; the generator counts
what it yielded (the oracle: no more than the bound, plus the one that shows it is more)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import skiff
from skiff import nn
from skiff.kernels.train import data_stream


def _model():
    skiff.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 1))


def _endless(counter, width=2**18):  # 1 MiB of float32 per sample: x of 2^18 - 1, and y
    rng = np.random.default_rng(0)
    while True:
        counter.append(1)
        if len(counter) > 200:  # the old rule read on to 4 M samples: stop the test here
            raise AssertionError("read past the memory bound")
        yield rng.standard_normal(width - 1).astype("f4"), np.ones(1, "f4")


def test_an_endless_stream_with_epochs_is_refused_at_half_the_free_memory(monkeypatch):
    monkeypatch.setattr(data_stream, "_available_bytes", lambda: 64 * 2**20, raising=False)
    seen = []
    model = nn.Sequential(nn.Linear(2**18 - 1, 1))
    with pytest.raises(ValueError, match=r"more than 31 samples of 1 MiB.*steps=N"):
        skiff.Trainer(model, batch_size=8).train(_endless(seen), epochs=1)
    # the bound, and the one that shows the stream goes on: 31, since round 44 (h5) counts
    # the Python objects around each sample's 1 MiB too (two arrays and a tuple, 0.3 KB)
    assert len(seen) == 32


def test_a_finite_stream_and_steps_read_as_before(monkeypatch):
    monkeypatch.setattr(data_stream, "_available_bytes", lambda: 64 * 2**20, raising=False)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((40, 4)).astype("f4")
    y = x @ np.array([[1.0], [-2.0], [0.5], [0.0]], "f4")
    # round 42 (h13): the replay is said (a UserWarning in a script; transformers refuses
    # a stream without max_steps): a generator's fresh augmentations are not drawn again
    with pytest.warns(UserWarning, match=r"40 samples were read once and each of the 3 "
                                         r"epochs replays them.*steps=N"):
        streamed = skiff.Trainer(_model(), batch_size=8, shuffle=False).train(
            (s for s in zip(x, y)), epochs=3)
    assert streamed.steps == 15  # 40 samples read once, 5 batches an epoch
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # arrays, or a stream under steps=: nothing to say
        want = skiff.Trainer(_model(), batch_size=8, shuffle=False).train((x, y), epochs=3)
        seen = []
        model = nn.Sequential(nn.Linear(2**18 - 1, 1))
        r = skiff.Trainer(model, batch_size=8).train(_endless(seen), steps=6)  # 48 samples
    np.testing.assert_array_equal([h["loss"] for h in streamed.history],
                                  [h["loss"] for h in want.history])
    assert r.steps == 6 and len(seen) == 48


def test_the_sample_count_bound_names_steps_too(monkeypatch):
    """Round 43 (h5): small samples reach the count bound (4,194,304 samples, 67 s wall
    for samples of 3 floats at load ~24) before the memory bound; its refusal named
    ``itertools.islice`` and a dataset with a length, not ``steps=N``, which the memory
    bound's line names (and which reads only what the steps use)."""
    monkeypatch.setattr(data_stream, "STREAM_LIMIT", 50)
    monkeypatch.setattr(data_stream.read_stream, "__kwdefaults__",
                        {**data_stream.read_stream.__kwdefaults__, "limit": 50})
    seen = []
    with pytest.raises(ValueError, match=r"more than 50 samples \(an endless stream\?\).*"
                                         r"train\(\.\.\., steps=N\)"):
        skiff.Trainer(nn.Sequential(nn.Linear(3, 1)), batch_size=8).train(
            _endless(seen, width=4), epochs=2)
    assert len(seen) == 51
