"""Beam sampling: transformers' ``generate(num_beams=N, do_sample=True)``.

Each step the beams' log-probabilities go through the processors, then through the
sampling warpers as transformers applies them to log-probabilities (temperature: divided;
top-k: below the k-th largest is ``-inf``; top-p: the smallest tail whose probability sums
to at most ``1 - top_p`` is ``-inf``; each keeps at least ``min_keep`` tokens, the number of
eos ids + 1 (at least 2), so a beam can always go on); the running scores are added and the
``K`` candidates of a prompt are drawn without replacement from ``softmax`` over its
``N * V`` accumulated scores, then ordered by score (:func:`make_draw`). The rest is beam
search's (``ernie_beam``).

``generator``: a ``numpy.random.Generator`` (or ``seed``), or a ``torch.Generator``: then the
draw is ``torch.multinomial(probs, K, generator=...)``, transformers' own call, so a
generator seeded as transformers' global one gives its candidates.
"""

from __future__ import annotations

import numpy as np

__all__ = ["warp_log_probs", "make_draw"]


def warp_log_probs(logp: np.ndarray, temperature: float, top_k, top_p: float,
                   min_keep: int) -> np.ndarray:
    """(n, V) float32 log-probabilities after transformers' temperature, top-k and top-p
    warpers (in that order), in place."""
    if temperature is not None and temperature != 1.0:
        logp /= np.float32(temperature)
    V = logp.shape[1]
    if top_k:
        k = min(max(int(top_k), min_keep), V)
        kth = np.partition(logp, V - k, axis=1)[:, V - k:V - k + 1]
        logp[logp < kth] = -np.inf
    if top_p is not None and top_p < 1.0:
        order = np.argsort(logp, axis=1, kind="stable")  # ascending, as transformers
        ranked = np.take_along_axis(logp, order, 1)
        e = np.exp(ranked - ranked.max(axis=1, keepdims=True))
        cum = np.cumsum(e / e.sum(axis=1, keepdims=True), axis=1)
        drop = cum <= (1 - top_p)
        drop[:, V - min_keep:] = False
        mask = np.zeros_like(drop)
        np.put_along_axis(mask, order, drop, 1)
        logp[mask] = -np.inf
    return logp


def make_draw(seed=None, generator=None):
    """``draw(acc (B, M) float32, K) -> (B, K)`` candidate indices, sampled without
    replacement from ``softmax(acc)`` of each row and ordered by ``acc`` (best first)."""
    from .ernie_generate import is_torch_generator, sampling_rng

    torch_gen = generator if is_torch_generator(generator) else None
    if torch_gen is None:
        rng = sampling_rng(seed, generator)

    def draw(acc: np.ndarray, K: int) -> np.ndarray:
        z = acc - acc.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        if torch_gen is not None:
            import torch

            picked = torch.multinomial(torch.from_numpy(np.ascontiguousarray(p)), K,
                                       generator=torch_gen)
            # ordered by score as transformers' ``sort(descending=True)`` orders them (ties
            # at -inf / -1e9 included)
            lp = torch.gather(torch.from_numpy(np.ascontiguousarray(acc)), 1, picked)
            order = lp.sort(dim=-1, descending=True)[1]
            return torch.gather(picked, 1, order).numpy().astype(np.int64)
        else:  # without replacement: the largest p / Exp(1) keys (torch's own method; a
            # row with fewer than K possible tokens fills up with impossible ones, -inf)
            keys = p.astype(np.float64) / rng.exponential(size=p.shape)
            picked = np.argsort(-keys, axis=1, kind="stable")[:, :K]
        lp = np.take_along_axis(acc, picked, 1)
        order = np.argsort(-lp, axis=1, kind="stable")
        return np.take_along_axis(picked, order, 1).astype(np.int64)

    return draw
