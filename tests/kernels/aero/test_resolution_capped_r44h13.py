"""Round 44 (h13): the resolution named for a too-coarse nose grid is the threshold also
where the grid's size is capped.

Before: ``solve_nose(adapt='graded', resolution=0.5)`` said "resolution 3 or finer holds it"
and ``resolution=5`` said "20" for the same shape (the estimate took the size as
``1 / resolution``, and at such resolutions the field is at its largest size); a sweep at
resolution 1 said "6". Oracle: the mesher's own test (``too_coarse``) one step either side
of the named value."""

from __future__ import annotations

import re

import numpy as np
import pytest

import skiff.aero
from skiff.kernels.aero.sweep import _check_resolution
from skiff.kernels.solve.flow.adapt import graded_size
from skiff.kernels.solve.flow.nose import NoseShape, too_coarse

SHAPE = NoseShape(3.0, 0.4, 0.15)


def test_a_capped_size_names_the_threshold():
    named = set()
    for given in (0.5, 5):
        with pytest.raises(ValueError, match="too coarse to hold the body") as info:
            skiff.aero.solve_nose(3.0, 0.4, 0.15, adapt="graded", resolution=given)
        named.add(int(re.search(r"resolution (\d+) or finer", str(info.value)).group(1)))
    with pytest.warns(UserWarning, match=r"needs resolution (\d+) or finer") as record:
        _check_resolution(np.array([[3.0, 0.4, 0.15]]), "graded", 1)     # a sweep's check
    named.add(int(re.search(r"needs resolution (\d+) or finer",
                            str(record[0].message)).group(1)))
    assert len(named) == 1, named          # one shape, one threshold
    need = named.pop()
    assert too_coarse(SHAPE, graded_size(SHAPE, need, 1000.0)) is None
    assert too_coarse(SHAPE, graded_size(SHAPE, need - 1, 1000.0)) is not None
