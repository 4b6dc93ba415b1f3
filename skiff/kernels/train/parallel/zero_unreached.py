"""ZeRO's optimizer step when some parameters had no gradient on any rank this step.

The optimizer of ZeRO-1/2 sees one flat slice of all parameters, with one gradient and
one step count. A parameter that no rank's graph reached (a layer a model never calls, a
branch no rank's data took) has no gradient on one device or under torch DDP
(``find_unused_parameters=True``) with ``ZeroRedundancyOptimizer``: the optimizer skips it
(no weight decay, no moment update) and its own step count stays behind, so Adam's bias
correction of its later steps uses its own count. Here the flat step is done for the slice
and the pieces of unreached parameters are put back (weights and every state array of the
slice's size); pieces whose step counts differ (skipped in earlier steps) are stepped in
one pass per count, the state's scalar ``step`` set to theirs for that pass.
"""

from __future__ import annotations

import numpy as np

__all__ = ["UnreachedSteps"]


def _state_arrays(st: dict | None, n: int) -> list[str]:
    """The keys of the slice-sized arrays in one optimizer state (moments, buffers)."""
    if not st:
        return []
    return [k for k, v in st.items() if getattr(v, "shape", None) == (n,)]


class UnreachedSteps:
    """Per parameter of a ZeRO run: how many steps it was skipped (no rank reached it)."""

    def __init__(self, count: int):
        self.skips = np.zeros(count, dtype=np.int64)

    def step(self, run, optimizer, shard, pieces: list[tuple[int, int, int]],
             reached: np.ndarray | None) -> None:
        """One optimizer step of ``shard`` (``run()``: the optimizer's own step); ``pieces``
        are ``(param index, start, stop)`` within the slice, ``reached[i]`` whether any rank
        had parameter i's gradient."""
        if reached is not None:
            self.skips[~np.asarray(reached, bool)] += 1
        active = [pc for pc in pieces if reached is None or reached[pc[0]]]
        idle = [pc for pc in pieces if not (reached is None or reached[pc[0]])]
        counts: dict[int, list] = {}
        for pc in active:
            counts.setdefault(int(self.skips[pc[0]]), []).append(pc)
        st = optimizer.state.get(shard)
        if not idle and set(counts) <= {0}:  # the usual step: every piece reached, in step
            run()
            return
        if not active:  # nothing of this slice to step (the ranks still gather it)
            return
        n = shard._data.shape[0]
        keys = _state_arrays(st, n)
        before = {k: st[k].copy() for k in keys}
        data0 = shard._data.copy()
        base = st.get("step") if st else None
        out_data = data0.copy()
        out = {k: v.copy() for k, v in before.items()}
        fresh = st is None
        for skipped, group in counts.items():
            shard._data[...] = data0
            for k in keys:
                st[k][...] = before[k]
            if st is not None and base is not None:
                st["step"] = type(base)(base - skipped)
            run()
            st = optimizer.state.get(shard)
            if fresh and st is not None:  # the first step made the state: the idle pieces
                keys = _state_arrays(st, n)  # keep its fresh (zero) values
                before = {k: shard.xp.zeros_like(st[k]) for k in keys}
                out = {k: v.copy() for k, v in before.items()}
                fresh = False
            for _, a, b in group:
                out_data[a:b] = shard._data[a:b]
                for k in keys:
                    out[k][a:b] = st[k][a:b]
        shard._data[...] = out_data
        for k in keys:
            st[k][...] = out[k]
        if st is not None and "step" in st:
            st["step"] = type(st["step"])((base if base is not None else 0) + 1)
