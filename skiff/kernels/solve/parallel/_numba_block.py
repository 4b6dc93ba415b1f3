"""numba twins of the block smoother (:mod:`.operator`): one colour of red-black Gauss-Seidel
on a padded block, visiting only the cells of that colour (stride 2 along the row).

``u`` is padded (ghosts current), ``f`` and ``invdiag`` are the interior; ``p0`` is 0 on a 2D
grid (axis 0 has one cell and no ghosts), the other axes always carry one ghost layer;
``par`` is the parity of the block's first cell in the global grid.
"""

from __future__ import annotations

from numba import njit

JIT = {"cache": True, "fastmath": True}


@njit(**JIT)
def colour_const(u, f, a3, invdiag, p0, par, colour):
    m0, m1, m2 = f.shape
    a0, a1, a2 = a3[0], a3[1], a3[2]
    for k in range(m0):
        kk = k + p0
        for j in range(m1):
            jj = j + 1
            row, below, above = u[kk, jj], u[kk, jj - 1], u[kk, jj + 1]
            fr, dr = f[k, j], invdiag[k, j]
            start = (colour - par - k - j) % 2
            if p0:
                back, front = u[kk - 1, jj], u[kk + 1, jj]
                for i in range(start, m2, 2):
                    ii = i + 1
                    s = a2 * (row[ii - 1] + row[ii + 1]) + a1 * (below[ii] + above[ii]) + \
                        a0 * (back[ii] + front[ii])
                    row[ii] = (fr[i] + s) * dr[i]
            else:
                for i in range(start, m2, 2):
                    ii = i + 1
                    s = a2 * (row[ii - 1] + row[ii + 1]) + a1 * (below[ii] + above[ii])
                    row[ii] = (fr[i] + s) * dr[i]


@njit(**JIT)
def colour_var(u, f, c0, c1, c2, invdiag, p0, par, colour):
    m0, m1, m2 = f.shape
    for k in range(m0):
        kk = k + p0
        for j in range(m1):
            jj = j + 1
            row, below, above = u[kk, jj], u[kk, jj - 1], u[kk, jj + 1]
            w2, w1lo, w1hi = c2[kk, jj], c1[kk, jj], c1[kk, jj + 1]
            fr, dr = f[k, j], invdiag[k, j]
            start = (colour - par - k - j) % 2
            for i in range(start, m2, 2):
                ii = i + 1
                s = w2[ii] * row[ii - 1] + w2[ii + 1] * row[ii + 1] + w1lo[ii] * below[ii] + \
                    w1hi[ii] * above[ii]
                if p0:
                    s += c0[kk, jj, ii] * u[kk - 1, jj, ii] + c0[kk + 1, jj, ii] * u[kk + 1, jj, ii]
                row[ii] = (fr[i] + s) * dr[i]
