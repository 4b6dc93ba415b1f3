"""numba fast twins of the solve kernels (imported only when numba is available).

All grids are 3D ``(n0, n1, n2)``; a 2D grid has ``n0 == 1``. Neighbours across the grid's
edge are skipped by weighting them with zero (the index is clamped), so the inner loops carry
no branches except at the two ends of a row. Reference twins are in :mod:`.fused`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# ------------------------------------------------------------------ stencil apply (+ dot)


@njit(cache=True)
def apply_const(u, a3, d0, d1, d2, out):
    n0, n1, n2 = u.shape
    a0, a1, a2 = a3[0], a3[1], a3[2]
    dot = 0.0
    for k in range(n0):
        km, kp = max(k - 1, 0), min(k + 1, n0 - 1)
        wkm, wkp = (a0 if k > 0 else 0.0), (a0 if k < n0 - 1 else 0.0)
        for j in range(n1):
            jm, jp = max(j - 1, 0), min(j + 1, n1 - 1)
            wjm, wjp = (a1 if j > 0 else 0.0), (a1 if j < n1 - 1 else 0.0)
            dkj = d0[k] + d1[j]
            for i in range(n2):
                s = (dkj + d2[i]) * u[k, j, i] - (wkm * u[km, j, i] + wkp * u[kp, j, i]
                                                  + wjm * u[k, jm, i] + wjp * u[k, jp, i])
                if i > 0:
                    s -= a2 * u[k, j, i - 1]
                if i < n2 - 1:
                    s -= a2 * u[k, j, i + 1]
                out[k, j, i] = s
                dot += s * u[k, j, i]
    return dot


@njit(cache=True)
def apply_var(u, c0, c1, c2, diag, out):
    n0, n1, n2 = u.shape
    dot = 0.0
    for k in range(n0):
        km, kp = max(k - 1, 0), min(k + 1, n0 - 1)
        fkm, fkp = (1.0 if k > 0 else 0.0), (1.0 if k < n0 - 1 else 0.0)
        for j in range(n1):
            jm, jp = max(j - 1, 0), min(j + 1, n1 - 1)
            fjm, fjp = (1.0 if j > 0 else 0.0), (1.0 if j < n1 - 1 else 0.0)
            for i in range(n2):
                s = diag[k, j, i] * u[k, j, i] - (
                    fkm * c0[k, j, i] * u[km, j, i] + fkp * c0[k + 1, j, i] * u[kp, j, i]
                    + fjm * c1[k, j, i] * u[k, jm, i] + fjp * c1[k, j + 1, i] * u[k, jp, i])
                if i > 0:
                    s -= c2[k, j, i] * u[k, j, i - 1]
                if i < n2 - 1:
                    s -= c2[k, j, i + 1] * u[k, j, i + 1]
                out[k, j, i] = s
                dot += s * u[k, j, i]
    return dot


# ------------------------------------------------------------------ red-black Gauss-Seidel
# One sweep updates the first colour on row r and the second colour on row r - lag in the same
# pass (lag: one plane in 3D, one row in 2D), so the grid is read once per sweep.


@njit(cache=True)
def _gs_row_const(u, f, a3, d0, d1, d2, k, j, start):
    n0, n1, n2 = u.shape
    a0, a1, a2 = a3[0], a3[1], a3[2]
    km, kp = max(k - 1, 0), min(k + 1, n0 - 1)
    wkm, wkp = (a0 if k > 0 else 0.0), (a0 if k < n0 - 1 else 0.0)
    jm, jp = max(j - 1, 0), min(j + 1, n1 - 1)
    wjm, wjp = (a1 if j > 0 else 0.0), (a1 if j < n1 - 1 else 0.0)
    dkj = d0[k] + d1[j]
    for i in range(start, n2, 2):
        s = f[k, j, i] + wkm * u[km, j, i] + wkp * u[kp, j, i] + wjm * u[k, jm, i] \
            + wjp * u[k, jp, i]
        if i > 0:
            s += a2 * u[k, j, i - 1]
        if i < n2 - 1:
            s += a2 * u[k, j, i + 1]
        u[k, j, i] = s / (dkj + d2[i])


@njit(cache=True)
def rbgs_const(u, f, a3, d0, d1, d2, sweeps, reverse):
    n0, n1, n2 = u.shape
    lag = n1 if n0 > 1 else 1
    rows = n0 * n1
    first = 1 if reverse else 0
    for _ in range(sweeps):
        for r in range(rows + lag):
            if r < rows:
                k, j = r // n1, r % n1
                _gs_row_const(u, f, a3, d0, d1, d2, k, j, (k + j + first) % 2)
            q = r - lag
            if q >= 0:
                k, j = q // n1, q % n1
                _gs_row_const(u, f, a3, d0, d1, d2, k, j, (k + j + first + 1) % 2)
    return u


@njit(cache=True)
def _gs_row_var(u, f, c0, c1, c2, diag, k, j, start):
    n0, n1, n2 = u.shape
    km, kp = max(k - 1, 0), min(k + 1, n0 - 1)
    fkm, fkp = (1.0 if k > 0 else 0.0), (1.0 if k < n0 - 1 else 0.0)
    jm, jp = max(j - 1, 0), min(j + 1, n1 - 1)
    fjm, fjp = (1.0 if j > 0 else 0.0), (1.0 if j < n1 - 1 else 0.0)
    for i in range(start, n2, 2):
        s = f[k, j, i] + fkm * c0[k, j, i] * u[km, j, i] + fkp * c0[k + 1, j, i] * u[kp, j, i] \
            + fjm * c1[k, j, i] * u[k, jm, i] + fjp * c1[k, j + 1, i] * u[k, jp, i]
        if i > 0:
            s += c2[k, j, i] * u[k, j, i - 1]
        if i < n2 - 1:
            s += c2[k, j, i + 1] * u[k, j, i + 1]
        u[k, j, i] = s / diag[k, j, i]


@njit(cache=True)
def rbgs_var(u, f, c0, c1, c2, diag, sweeps, reverse):
    n0, n1, n2 = u.shape
    lag = n1 if n0 > 1 else 1
    rows = n0 * n1
    first = 1 if reverse else 0
    for _ in range(sweeps):
        for r in range(rows + lag):
            if r < rows:
                k, j = r // n1, r % n1
                _gs_row_var(u, f, c0, c1, c2, diag, k, j, (k + j + first) % 2)
            q = r - lag
            if q >= 0:
                k, j = q // n1, q % n1
                _gs_row_var(u, f, c0, c1, c2, diag, k, j, (k + j + first + 1) % 2)
    return u


# ------------------------------------------------------------------ residual + restriction


@njit(cache=True)
def residual_restrict_const(u, f, a3, d0, d1, d2, fc):
    """fc = mean of the fine residuals of each coarse cell; returns |r|^2."""
    n0, n1, n2 = u.shape
    m0, m1, m2 = fc.shape
    f0, f1, f2 = n0 // m0, n1 // m1, n2 // m2
    w = 1.0 / (f0 * f1 * f2)
    a0, a1, a2 = a3[0], a3[1], a3[2]
    fc[:] = 0.0
    rr = 0.0
    for k in range(n0):
        km, kp = max(k - 1, 0), min(k + 1, n0 - 1)
        wkm, wkp = (a0 if k > 0 else 0.0), (a0 if k < n0 - 1 else 0.0)
        for j in range(n1):
            jm, jp = max(j - 1, 0), min(j + 1, n1 - 1)
            wjm, wjp = (a1 if j > 0 else 0.0), (a1 if j < n1 - 1 else 0.0)
            dkj = d0[k] + d1[j]
            K, J = k // f0, j // f1
            for i in range(n2):
                s = f[k, j, i] - (dkj + d2[i]) * u[k, j, i] + (
                    wkm * u[km, j, i] + wkp * u[kp, j, i] + wjm * u[k, jm, i]
                    + wjp * u[k, jp, i])
                if i > 0:
                    s += a2 * u[k, j, i - 1]
                if i < n2 - 1:
                    s += a2 * u[k, j, i + 1]
                rr += s * s
                fc[K, J, i // f2] += w * s
    return rr


@njit(cache=True)
def residual_restrict_var(u, f, c0, c1, c2, diag, fc):
    n0, n1, n2 = u.shape
    m0, m1, m2 = fc.shape
    f0, f1, f2 = n0 // m0, n1 // m1, n2 // m2
    w = 1.0 / (f0 * f1 * f2)
    fc[:] = 0.0
    rr = 0.0
    for k in range(n0):
        km, kp = max(k - 1, 0), min(k + 1, n0 - 1)
        fkm, fkp = (1.0 if k > 0 else 0.0), (1.0 if k < n0 - 1 else 0.0)
        for j in range(n1):
            jm, jp = max(j - 1, 0), min(j + 1, n1 - 1)
            fjm, fjp = (1.0 if j > 0 else 0.0), (1.0 if j < n1 - 1 else 0.0)
            K, J = k // f0, j // f1
            for i in range(n2):
                s = f[k, j, i] - diag[k, j, i] * u[k, j, i] + (
                    fkm * c0[k, j, i] * u[km, j, i] + fkp * c0[k + 1, j, i] * u[kp, j, i]
                    + fjm * c1[k, j, i] * u[k, jm, i] + fjp * c1[k, j + 1, i] * u[k, jp, i])
                if i > 0:
                    s += c2[k, j, i] * u[k, j, i - 1]
                if i < n2 - 1:
                    s += c2[k, j, i + 1] * u[k, j, i + 1]
                rr += s * s
                fc[K, J, i // f2] += w * s
    return rr


# ------------------------------------------------------------------ prolongation


@njit(cache=True)
def _weights_1d(n, m, slo, shi):
    """(lower index, upper index, lower weight, upper weight) per fine cell along one axis."""
    i0 = np.empty(n, np.int64)
    i1 = np.empty(n, np.int64)
    w0 = np.empty(n)
    w1 = np.empty(n)
    f = n // m
    for i in range(n):
        if f == 1:
            i0[i], i1[i], w0[i], w1[i] = i, i, 1.0, 0.0
            continue
        c = i // 2
        nb = c - 1 if i % 2 == 0 else c + 1
        w0[i], w1[i] = 0.75, 0.25
        if nb < 0:
            nb, w1[i] = c, 0.25 * slo
        elif nb >= m:
            nb, w1[i] = c, 0.25 * shi
        i0[i], i1[i] = c, nb
    return i0, i1, w0, w1


@njit(cache=True)
def prolong_add(u, ec, signs):
    """u += P ec with (tri)linear cell-centred interpolation; ``signs`` are the ghost factors
    (-1 Dirichlet, +1 Neumann) of the six sides (axis0 lo, hi, axis1 lo, hi, axis2 lo, hi)."""
    n0, n1, n2 = u.shape
    m0, m1, m2 = ec.shape
    k0, k1, v0, v1 = _weights_1d(n0, m0, signs[0], signs[1])
    j0, j1, x0, x1 = _weights_1d(n1, m1, signs[2], signs[3])
    i0, i1, y0, y1 = _weights_1d(n2, m2, signs[4], signs[5])
    for k in range(n0):
        for j in range(n1):
            a00 = v0[k] * x0[j]
            a01 = v0[k] * x1[j]
            a10 = v1[k] * x0[j]
            a11 = v1[k] * x1[j]
            ka, kb, ja, jb = k0[k], k1[k], j0[j], j1[j]
            for i in range(n2):
                ia, ib = i0[i], i1[i]
                e = (a00 * (y0[i] * ec[ka, ja, ia] + y1[i] * ec[ka, ja, ib])
                     + a01 * (y0[i] * ec[ka, jb, ia] + y1[i] * ec[ka, jb, ib]))
                if a10 != 0.0:
                    e += (a10 * (y0[i] * ec[kb, ja, ia] + y1[i] * ec[kb, ja, ib])
                          + a11 * (y0[i] * ec[kb, jb, ia] + y1[i] * ec[kb, jb, ib]))
                u[k, j, i] += e
    return u


# ------------------------------------------------------------------ Krylov vector updates


@njit(cache=True)
def axpy_norm(x, r, p, q, alpha):
    """x += alpha p; r -= alpha q; returns |r|^2 (one pass over four vectors)."""
    xf, rf, pf, qf = x.ravel(), r.ravel(), p.ravel(), q.ravel()
    rr = 0.0
    for i in range(xf.size):
        xf[i] += alpha * pf[i]
        v = rf[i] - alpha * qf[i]
        rf[i] = v
        rr += v * v
    return rr


@njit(cache=True)
def jacobi_dot(r, invdiag, z):
    """z = invdiag * r; returns (r, z)."""
    rf, df, zf = r.ravel(), invdiag.ravel(), z.ravel()
    rz = 0.0
    for i in range(rf.size):
        v = df[i] * rf[i]
        zf[i] = v
        rz += rf[i] * v
    return rz


@njit(cache=True)
def pipecg_update(vs, alpha, beta):
    """The vector recurrences of pipelined CG in one pass, with its three dot products.

    ``vs`` stacks (x, r, u, w, z, q, s, p, m, n) as rows of one 2D array (updated in place):
    z = n + b z; q = m + b q; s = w + b s; p = u + b p; x += a p; r -= a s; u -= a q;
    w -= a z. Returns (r.u, w.u, r.r).
    """
    x, r, u, w, z, q, s, p, m, n = (vs[0], vs[1], vs[2], vs[3], vs[4], vs[5], vs[6], vs[7],
                                    vs[8], vs[9])
    g = 0.0
    d = 0.0
    rr = 0.0
    for i in range(x.size):
        zi = n[i] + beta * z[i]
        qi = m[i] + beta * q[i]
        si = w[i] + beta * s[i]
        pi = u[i] + beta * p[i]
        z[i], q[i], s[i], p[i] = zi, qi, si, pi
        x[i] += alpha * pi
        ri = r[i] - alpha * si
        ui = u[i] - alpha * qi
        wi = w[i] - alpha * zi
        r[i], u[i], w[i] = ri, ui, wi
        g += ri * ui
        d += wi * ui
        rr += ri * ri
    return g, d, rr
