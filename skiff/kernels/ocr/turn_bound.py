"""Crops no reading the other way up could turn: settled before they are read twice.

:meth:`.reading.LineReading.read_both_ways` reads a crop whose direction is not settled
turned by 180 degrees too, and :func:`.rec.choose_turns` turns it when the mean of its own
vote (the turned reading's score gain, leaned for numbers and seven-segment digits) and its
page's (the width-weighted mean of the page's votes) exceeds a margin. A turned reading scores
at most 1, so before it is read each vote has an upper bound: ``1 - score`` of the first
reading (1 for an empty one), plus ``UPRIGHT_PRIOR`` where the crop is turned now (turning it
back would bring it to the image's own way up) and ``SEGMENT_LEAN`` where the first reading
looks like seven-segment digits upside down. A page whose every crop stays within the margin
at those bounds keeps every crop as it is whatever the turned readings say, so its crops are
settled here and read once (on the mixed benchmark set about three quarters of the columns
read twice: clean lines read at 0.95-0.99 the direction model was not sure of). Pages that
could turn are read both ways as before, and a page's vote only counts its own crops, so
their outcome is the same.
"""

from __future__ import annotations

import inspect

import numpy as np

from .reading import BY_PAGE, SEGMENT_LEAN, SURE_REC, UNSETTLED, UPRIGHT_PRIOR
from .rec import choose_turns, looks_turned_segments

__all__ = ["settle_unturnable", "TURN_MARGIN"]

# choose_turns' own margin (read_both_ways passes none): a crop turns above it
TURN_MARGIN = float(inspect.signature(choose_turns).parameters["margin"].default)


def settle_unturnable(texts, flags, settled, widths, pages) -> np.ndarray:
    """``settled`` with the crops :meth:`read_both_ways` would read twice marked ``BY_PAGE``
    on every page where no turned reading could turn any of them (a copy; ``texts`` are the
    first readings ``[(text, score)]``, ``flags`` which crops are turned now, ``widths`` the
    crops' widths, ``pages`` each crop's page)."""
    settled = np.array(settled, copy=True)
    if not len(settled):
        return settled
    poor = np.array([not t or score < SURE_REC for t, score in texts], bool)
    idx = np.flatnonzero((settled == UNSETTLED) | (poor & (settled != BY_PAGE)))
    if not len(idx):
        return settled
    flags = np.asarray(flags, bool)
    bound = np.array([(1.0 - texts[k][1] if texts[k][0] else 1.0)
                      + (UPRIGHT_PRIOR if flags[k] else 0.0)
                      + (SEGMENT_LEAN if looks_turned_segments(texts[k][0]) else 0.0)
                      for k in idx], np.float64)
    w = np.asarray(widths, np.float64)[idx]
    on = np.asarray(pages)[idx]
    for page in np.unique(on):
        mine = on == page
        vote = float(np.dot(bound[mine], w[mine]) / max(1.0, w[mine].sum()))
        # a small allowance for rounding: the bound must clear the margin, not touch it
        if np.all(0.5 * (bound[mine] + vote) <= TURN_MARGIN - 1e-6):
            settled[idx[mine]] = BY_PAGE
    return settled
