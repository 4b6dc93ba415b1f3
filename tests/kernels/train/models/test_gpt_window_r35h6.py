"""A GPT's generate past ``block_size`` on the raw arrays (round 35, h6): the slid window
ran through the module's forward (2.47 CPU s for 300 tokens against torch's crop loop's
1.94); the raw-array runner's refill had been 2.5x slower only because its tanh-GELU took
``x ** 3`` (numpy's float32 power: 4 ms for 128 x 512). Now ``x * x * x`` and the window
runs on the runner, its last layer for the last position only: 1.25 CPU s. The window's
logits equal torch's over the same crop; the GELU equals torch's."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from skiff.kernels.train.models.gpt import _gelu_tanh, _KVRunner  # noqa: E402

from ..trainer.test_gpt_torch import CFG, _pair  # noqa: E402


def test_gelu_as_torch():
    x = np.random.default_rng(0).standard_normal((64, 40)).astype(np.float32) * 4
    want = torch.nn.functional.gelu(torch.from_numpy(x), approximate="tanh").numpy()
    np.testing.assert_allclose(_gelu_tanh(np, x), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("width", [1, 7, CFG.block_size])
def test_window_logits_as_torch(width):
    model, ref = _pair(3)
    ids = np.random.default_rng(width).integers(0, CFG.vocab_size, (2, width))
    runner = _KVRunner(model)
    runner.next_logits(ids[:, :2])  # a cache held before: a window ignores it
    got = runner.window_logits(ids)
    with torch.no_grad():
        want = ref(torch.from_numpy(ids))[:, -1].numpy()
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)  # float64 both
    assert runner.length == 0 and runner.k == []  # nothing stale kept


def test_past_the_window_sampled_as_uncached():
    model, _ = _pair(5)
    prompt = np.array([[3, 1, 4, 1, 5, 9, 2, 6]])
    n = 2 * CFG.block_size
    np.testing.assert_array_equal(
        model.generate(prompt, n, temperature=0.8, top_k=30, seed=1),
        model.generate(prompt, n, temperature=0.8, top_k=30, seed=1, use_cache=False))
