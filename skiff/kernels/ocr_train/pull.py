"""Pulling a fine-tune's weights part of the way back to where they started (WiSE-FT).

A fine-tune that forgets general text (reads rendered general lines more than half a point
worse than its base) often reads its own held-out crops as well or better with its weights
``start + a * (tuned - start)`` for ``a`` of 0.5-0.7 (round 40: vertical drawer labels, 60
steps on PP-OCRv6: held-out 0.9875 and general 0.9879 (base 0.9986) unpulled; 0.9938 and
1.0000 at a = 0.5; round 36/37 measured the same on small print). No training: each ``a``
costs one export and one reading of the held-out and general sets. ``start`` is the weights
the run began from (the base, with a grown classifier's new columns as drawn).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["PULLS", "Pulled", "choose_pull", "pull_back", "snapshot", "set_pull"]

# the shares of the way from the start tried when a run forgets (1.0: the tuned weights)
PULLS = (0.7, 0.5)


def snapshot(module) -> dict[str, np.ndarray]:
    """A copy of every parameter of ``module`` (an ``OnnxModule``)."""
    return {k: p.numpy().copy() for k, p in module.named_parameters()}


def set_pull(module, start: dict, tuned: dict, share: float) -> None:
    """Set ``module``'s weights to ``start + share * (tuned - start)`` (1.0: ``tuned``)."""
    for k, w1 in tuned.items():
        w0 = start.get(k)
        if w0 is None or w0.shape != w1.shape or share == 1.0:
            w = w1
        else:
            w = (w0 + np.float32(share) * (w1 - w0)).astype(w1.dtype)
        getattr(module, k)._data[...] = w


@dataclass
class Pulled:
    share: float          # of the way from the start to the tuned weights (1.0: unpulled)
    val: float | None     # held-out character accuracy with them
    general: float | None  # rendered general text's


def choose_pull(tried: list[Pulled], general_before: float, allowed: float = 0.005) \
        -> Pulled:
    """The weights to keep: the tuned ones (``tried[0]``, share 1.0) unless a pull reads
    general text better while reading the held-out crops no more than ``allowed`` worse;
    of those, the best held-out + general reading (ties: the larger share, less pulled).
    ``general_before`` is the base's general reading (kept for what the log says)."""
    first = tried[0]

    def val(p):
        return p.val if p.val is not None and p.val == p.val else 0.0

    better = [p for p in tried[1:] if p.general is not None and first.general is not None
              and p.general > first.general and val(p) >= val(first) - allowed]
    if not better:
        return first
    return max(better, key=lambda p: (round(val(p) + p.general, 9), p.share))


def pull_back(module, start: dict, export: Callable[[], object],
              measure: Callable[[object], tuple], first: Pulled, general_before: float,
              shares=PULLS) -> tuple[Pulled, list[Pulled]]:
    """Try ``shares`` of the way back from ``module``'s weights to ``start``: for each,
    set the weights, ``export()`` (the file's path) and ``measure(path)`` -> (held-out,
    general); keep the chosen one in ``module`` (``first``: the unpulled run, measured)
    and return it with every reading."""
    tuned = snapshot(module)
    tried = [first]
    for share in shares:
        set_pull(module, start, tuned, share)
        val, general = measure(export())
        tried.append(Pulled(share, val, general))
    chosen = choose_pull(tried, general_before)
    set_pull(module, start, tuned, chosen.share)
    return chosen, tried
