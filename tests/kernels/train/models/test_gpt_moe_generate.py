"""gpt-moe generates: the cached decoder runs the MoE feed-forward through the module's own
forward (it read a dense MLP's ``c_fc`` and failed on every gpt-moe job's ``generate``)."""

import numpy as np

from skiff.kernels.train.core.tensor import no_grad
from skiff.kernels.train.models.gpt import _KVRunner
from skiff.kernels.train.parallel.moe import gpt_moe


def _model():
    return gpt_moe(n_layer=2, n_embd=32, n_head=4, vocab_size=64, block_size=16)


def test_cached_logits_equal_the_full_forward():
    m = _model()
    ids = np.random.default_rng(0).integers(0, 64, (1, 6))
    m.eval()
    with no_grad():
        cached = _KVRunner(m).next_logits(ids)
        full = m.forward(ids)._data[:, -1, :]
    np.testing.assert_allclose(cached, full, rtol=1e-5, atol=1e-5)


def test_greedy_with_cache_equals_without_past_the_block():
    m = _model()
    for layer in m.moe_layers:  # room for every token: the full forward of 16 tokens drops
        layer.capacity_factor = 2.0  # over-capacity ones where the cache's one token is never
    prompts = np.random.default_rng(1).integers(0, 64, (3, 5))
    for row in prompts:
        a = m.generate(row[None], 20, temperature=0)  # 25 tokens: the 16-token context slides
        b = m.generate(row[None], 20, temperature=0, use_cache=False)
        np.testing.assert_array_equal(a, b)
    out = m.generate(prompts, 4, temperature=0.8, top_k=5, seed=0)
    assert out.shape == (3, 9) and ((0 <= out) & (out < 64)).all()
