"""Round 31 (h14): a grid with cells cut out (``grid_problem(sdf=...)``: a disc) drew those
cells as u = 0, a disc of "zero pressure". With the active cells on the Solution
(``Solution.active``, the problem's ``mask``), the plot leaves them blank. The oracle is the
signed distance itself: the blank cells are exactly those with ``sdf < 0``."""

from __future__ import annotations

import numpy as np

import skiff
from skiff.kernels.solve.problems import grid_problem
from skiff.kernels.solve.solution import field_figure

N = 32


def _disc():
    c = (np.arange(N) + 0.5) / N
    X, Y = np.meshgrid(c, c, indexing="ij")
    sdf = np.hypot(X - 0.5, Y - 0.4) - 0.2
    return sdf, grid_problem((N, N), source=1.0, sdf=sdf)


def _drawn(fig):
    ax = fig.axes[0]
    return ax.images[0].get_array(), fig.axes[1]


def test_cells_outside_the_domain_are_blank_not_zero():
    sdf, problem = _disc()
    sol = skiff.solve(problem)
    assert sol.active is not None
    assert np.array_equal(sol.active, np.reshape(problem.mask, sol.field.shape))
    drawn, bar = _drawn(field_figure(sol))
    assert np.ma.isMaskedArray(drawn)
    blank = np.ma.getmaskarray(drawn).T        # imshow draws u.T
    assert np.array_equal(blank, sdf < 0)
    assert np.allclose(drawn.compressed(), sol.field.T[sdf.T >= 0])
    assert "outside the domain" in bar.get_ylabel()


def test_a_full_grid_is_drawn_whole():
    sol = skiff.solve(grid_problem((N, N), source=1.0))
    drawn, bar = _drawn(field_figure(sol))
    assert not np.ma.getmaskarray(drawn).any() and bar.get_ylabel() == "u"
