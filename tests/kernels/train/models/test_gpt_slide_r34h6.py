"""A GPT's generate far past ``block_size`` (round 34, h6): every token sees the last
``block_size`` tokens, as nanoGPT's sampler crops, run whole each step (learned absolute
positions: nothing cached stays valid once the window slides; the cached path now runs the
module's forward there, 2.5x less CPU than its cache refill). Greedy tokens equal torch's
argmax over the same cropped context; sampled ones equal the uncached path's."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from ..trainer.test_gpt_torch import CFG, _pair  # noqa: E402


def test_three_windows_past_block_size_as_torch():
    model, ref = _pair(7)
    prompt = np.array([[1, 2, 3, 4, 5], [250, 9, 9, 9, 7]])
    n = 3 * CFG.block_size
    got = model.generate(prompt, n, temperature=0)
    out = prompt.copy()
    with torch.no_grad():
        for _ in range(n):
            t = ref(torch.from_numpy(out[:, -CFG.block_size:]))[:, -1].numpy()
            out = np.concatenate([out, t.argmax(-1)[:, None]], axis=1)
    np.testing.assert_array_equal(got, out)
    sampled = model.generate(prompt, n, temperature=0.9, top_k=20, seed=3)
    np.testing.assert_array_equal(
        sampled, model.generate(prompt, n, temperature=0.9, top_k=20, seed=3,
                                use_cache=False))
