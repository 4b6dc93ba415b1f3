"""numba fast twins of the solve kernels (imported only when numba is available).

All grids are 3D ``(n0, n1, n2)``; a 2D grid has ``n0 == 1``. Neighbours across the grid's
edge are skipped by weighting them with zero (the index is clamped), so the inner loops carry
no branches except at the two ends of a row. Reference twins are in :mod:`.fused`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# ------------------------------------------------------------------ stencil apply (+ dot)
# Loops run over rows (1D views of u), the two row ends are peeled off so the inner loop has no
# branch, and fastmath lets LLVM vectorise the fused dot product.

JIT = {"cache": True, "fastmath": True}


@njit(**JIT)
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
            uc, ukm, ukp, ujm, ujp, o = u[k, j], u[km, j], u[kp, j], u[k, jm], u[k, jp], out[k, j]
            for i in range(1, n2 - 1):
                s = (dkj + d2[i]) * uc[i] - (wkm * ukm[i] + wkp * ukp[i] + wjm * ujm[i]
                                             + wjp * ujp[i]) - a2 * (uc[i - 1] + uc[i + 1])
                o[i] = s
                dot += s * uc[i]
            for i in (0, n2 - 1):
                s = (dkj + d2[i]) * uc[i] - (wkm * ukm[i] + wkp * ukp[i] + wjm * ujm[i]
                                             + wjp * ujp[i])
                if i > 0:
                    s -= a2 * uc[i - 1]
                if i < n2 - 1:
                    s -= a2 * uc[i + 1]
                o[i] = s
                dot += s * uc[i]
                if n2 == 1:
                    break
    return dot


@njit(**JIT)
def apply_var(u, c0, c1, c2, diag, out):
    n0, n1, n2 = u.shape
    dot = 0.0
    for k in range(n0):
        km, kp = max(k - 1, 0), min(k + 1, n0 - 1)
        fkm, fkp = (1.0 if k > 0 else 0.0), (1.0 if k < n0 - 1 else 0.0)
        for j in range(n1):
            jm, jp = max(j - 1, 0), min(j + 1, n1 - 1)
            fjm, fjp = (1.0 if j > 0 else 0.0), (1.0 if j < n1 - 1 else 0.0)
            uc, ukm, ukp, ujm, ujp, o = u[k, j], u[km, j], u[kp, j], u[k, jm], u[k, jp], out[k, j]
            ckm, ckp, cjm, cjp = c0[k, j], c0[k + 1, j], c1[k, j], c1[k, j + 1]
            cx, dg = c2[k, j], diag[k, j]
            if n0 == 1:   # a 2D grid: no axis-0 couplings to read
                for i in range(1, n2 - 1):
                    s = dg[i] * uc[i] - (fjm * cjm[i] * ujm[i] + fjp * cjp[i] * ujp[i]
                                         + cx[i] * uc[i - 1] + cx[i + 1] * uc[i + 1])
                    o[i] = s
                    dot += s * uc[i]
            else:
                for i in range(1, n2 - 1):
                    s = dg[i] * uc[i] - (fkm * ckm[i] * ukm[i] + fkp * ckp[i] * ukp[i]
                                         + fjm * cjm[i] * ujm[i] + fjp * cjp[i] * ujp[i]
                                         + cx[i] * uc[i - 1] + cx[i + 1] * uc[i + 1])
                    o[i] = s
                    dot += s * uc[i]
            for i in (0, n2 - 1):
                s = dg[i] * uc[i] - (fkm * ckm[i] * ukm[i] + fkp * ckp[i] * ukp[i]
                                     + fjm * cjm[i] * ujm[i] + fjp * cjp[i] * ujp[i])
                if i > 0:
                    s -= cx[i] * uc[i - 1]
                if i < n2 - 1:
                    s -= cx[i + 1] * uc[i + 1]
                o[i] = s
                dot += s * uc[i]
                if n2 == 1:
                    break
    return dot


# ------------------------------------------------------------------ red-black Gauss-Seidel
# One sweep updates the first colour on row r and the second colour on row r - lag in the same
# pass (lag: one plane in 3D, one row in 2D), so the grid is read once per sweep. Interior
# cells of a uniform stencil share one diagonal: a multiply instead of a divide.


@njit(**JIT)
def rbgs_const(u, f, a3, d0, d1, d2, sweeps, reverse):
    n0, n1, n2 = u.shape
    lag = n1 if n0 > 1 else 1
    rows = n0 * n1
    first = 1 if reverse else 0
    a0, a1, a2 = a3[0], a3[1], a3[2]
    last = n2 - 1
    tmp = np.empty(max(n2, 1))
    for _ in range(sweeps):
        for r in range(rows + lag):
            for t in range(2):
                q = r - t * lag
                if q < 0 or q >= rows:
                    continue
                k, j = q // n1, q % n1
                start = (k + j + first + t) % 2
                km, kp = max(k - 1, 0), min(k + 1, n0 - 1)
                wkm, wkp = (a0 if k > 0 else 0.0), (a0 if k < n0 - 1 else 0.0)
                jm, jp = max(j - 1, 0), min(j + 1, n1 - 1)
                wjm, wjp = (a1 if j > 0 else 0.0), (a1 if j < n1 - 1 else 0.0)
                dkj = d0[k] + d1[j]
                uc, ukm, ukp, ujm, ujp, fc = u[k, j], u[km, j], u[kp, j], u[k, jm], u[k, jp], \
                    f[k, j]
                if start == 0:
                    s = fc[0] + wkm * ukm[0] + wkp * ukp[0] + wjm * ujm[0] + wjp * ujp[0]
                    if n2 > 1:
                        s += a2 * uc[1]
                    uc[0] = s / (dkj + d2[0])
                if last > 0 and (last - start) % 2 == 0:
                    s = fc[last] + wkm * ukm[last] + wkp * ukp[last] + wjm * ujm[last] \
                        + wjp * ujp[last] + a2 * uc[last - 1]
                    uc[last] = s / (dkj + d2[last])
                # the interior of the row: both colours into a row buffer with a unit-stride,
                # vectorised loop (the other colour's values are only read), then every other
                # value kept; a 2D grid skips the axis-0 terms
                inv = 1.0 / (dkj + 2.0 * a2)
                if n0 == 1:
                    for i in range(1, last):
                        tmp[i] = (fc[i] + wjm * ujm[i] + wjp * ujp[i]
                                  + a2 * (uc[i - 1] + uc[i + 1])) * inv
                else:
                    for i in range(1, last):
                        tmp[i] = (fc[i] + wkm * ukm[i] + wkp * ukp[i] + wjm * ujm[i]
                                  + wjp * ujp[i] + a2 * (uc[i - 1] + uc[i + 1])) * inv
                for i in range(start if start > 0 else 2, last, 2):
                    uc[i] = tmp[i]
    return u


@njit(cache=True, fastmath=True, inline="always")
def _gs_var_end(uc, ukm, ukp, ujm, ujp, fc, ckm, ckp, cjm, cjp, cx, dg, fkm, fkp, fjm, fjp, i,
                n2):
    s = fc[i] + fkm * ckm[i] * ukm[i] + fkp * ckp[i] * ukp[i] + fjm * cjm[i] * ujm[i] \
        + fjp * cjp[i] * ujp[i]
    if i > 0:
        s += cx[i] * uc[i - 1]
    if i < n2 - 1:
        s += cx[i + 1] * uc[i + 1]
    uc[i] = s / dg[i]


@njit(**JIT)
def rbgs_var(u, f, c0, c1, c2, diag, sweeps, reverse):
    n0, n1, n2 = u.shape
    lag = n1 if n0 > 1 else 1
    rows = n0 * n1
    first = 1 if reverse else 0
    for _ in range(sweeps):
        for r in range(rows + lag):
            for t in range(2):
                q = r - t * lag
                if q < 0 or q >= rows:
                    continue
                k, j = q // n1, q % n1
                start = (k + j + first + t) % 2
                km, kp = max(k - 1, 0), min(k + 1, n0 - 1)
                fkm, fkp = (1.0 if k > 0 else 0.0), (1.0 if k < n0 - 1 else 0.0)
                jm, jp = max(j - 1, 0), min(j + 1, n1 - 1)
                fjm, fjp = (1.0 if j > 0 else 0.0), (1.0 if j < n1 - 1 else 0.0)
                uc, ukm, ukp, ujm, ujp, fc = u[k, j], u[km, j], u[kp, j], u[k, jm], u[k, jp], \
                    f[k, j]
                ckm, ckp, cjm, cjp = c0[k, j], c0[k + 1, j], c1[k, j], c1[k, j + 1]
                cx, dg = c2[k, j], diag[k, j]
                if start == 0:
                    _gs_var_end(uc, ukm, ukp, ujm, ujp, fc, ckm, ckp, cjm, cjp, cx, dg,
                                fkm, fkp, fjm, fjp, 0, n2)
                if n2 > 1 and (n2 - 1 - start) % 2 == 0:
                    _gs_var_end(uc, ukm, ukp, ujm, ujp, fc, ckm, ckp, cjm, cjp, cx, dg,
                                fkm, fkp, fjm, fjp, n2 - 1, n2)
                lo = start if start > 0 else 2
                if n0 == 1:
                    for i in range(lo, n2 - 1, 2):
                        uc[i] = (fc[i] + fjm * cjm[i] * ujm[i] + fjp * cjp[i] * ujp[i]
                                 + cx[i] * uc[i - 1] + cx[i + 1] * uc[i + 1]) / dg[i]
                else:
                    for i in range(lo, n2 - 1, 2):
                        uc[i] = (fc[i] + fkm * ckm[i] * ukm[i] + fkp * ckp[i] * ukp[i]
                                 + fjm * cjm[i] * ujm[i] + fjp * cjp[i] * ujp[i]
                                 + cx[i] * uc[i - 1] + cx[i + 1] * uc[i + 1]) / dg[i]
    return u


# ------------------------------------------------------------------ residual + restriction
# The residual of one fine row goes to a row buffer (a vectorisable loop), then is added, with
# its norm, to the coarse row it restricts to.


@njit(**JIT)
def _restrict_row(rbuf, n2, f2, w, fcrow):
    rr = 0.0
    for i in range(n2):
        rr += rbuf[i] * rbuf[i]
    if f2 == 2:
        for c in range(n2 // 2):
            fcrow[c] += w * (rbuf[2 * c] + rbuf[2 * c + 1])
    else:
        for i in range(n2):
            fcrow[i] += w * rbuf[i]
    return rr


@njit(**JIT)
def residual_restrict_const(u, f, a3, d0, d1, d2, fc):
    """fc = mean of the fine residuals of each coarse cell; returns |r|^2."""
    n0, n1, n2 = u.shape
    m0, m1, m2 = fc.shape
    f0, f1, f2 = n0 // m0, n1 // m1, n2 // m2
    w = 1.0 / (f0 * f1 * f2)
    a0, a1, a2 = a3[0], a3[1], a3[2]
    fc[:] = 0.0
    rbuf = np.empty(n2)
    rr = 0.0
    for k in range(n0):
        km, kp = max(k - 1, 0), min(k + 1, n0 - 1)
        wkm, wkp = (a0 if k > 0 else 0.0), (a0 if k < n0 - 1 else 0.0)
        for j in range(n1):
            jm, jp = max(j - 1, 0), min(j + 1, n1 - 1)
            wjm, wjp = (a1 if j > 0 else 0.0), (a1 if j < n1 - 1 else 0.0)
            dkj = d0[k] + d1[j]
            uc, ukm, ukp, ujm, ujp, fr = u[k, j], u[km, j], u[kp, j], u[k, jm], u[k, jp], f[k, j]
            for i in range(1, n2 - 1):
                rbuf[i] = fr[i] - (dkj + d2[i]) * uc[i] + (
                    wkm * ukm[i] + wkp * ukp[i] + wjm * ujm[i] + wjp * ujp[i]) \
                    + a2 * (uc[i - 1] + uc[i + 1])
            for i in (0, n2 - 1):
                s = fr[i] - (dkj + d2[i]) * uc[i] + (
                    wkm * ukm[i] + wkp * ukp[i] + wjm * ujm[i] + wjp * ujp[i])
                if i > 0:
                    s += a2 * uc[i - 1]
                if i < n2 - 1:
                    s += a2 * uc[i + 1]
                rbuf[i] = s
            rr += _restrict_row(rbuf, n2, f2, w, fc[k // f0, j // f1])
    return rr


@njit(**JIT)
def residual_restrict_var(u, f, c0, c1, c2, diag, fc):
    n0, n1, n2 = u.shape
    m0, m1, m2 = fc.shape
    f0, f1, f2 = n0 // m0, n1 // m1, n2 // m2
    w = 1.0 / (f0 * f1 * f2)
    fc[:] = 0.0
    rbuf = np.empty(n2)
    rr = 0.0
    for k in range(n0):
        km, kp = max(k - 1, 0), min(k + 1, n0 - 1)
        fkm, fkp = (1.0 if k > 0 else 0.0), (1.0 if k < n0 - 1 else 0.0)
        for j in range(n1):
            jm, jp = max(j - 1, 0), min(j + 1, n1 - 1)
            fjm, fjp = (1.0 if j > 0 else 0.0), (1.0 if j < n1 - 1 else 0.0)
            uc, ukm, ukp, ujm, ujp, fr = u[k, j], u[km, j], u[kp, j], u[k, jm], u[k, jp], f[k, j]
            ckm, ckp, cjm, cjp = c0[k, j], c0[k + 1, j], c1[k, j], c1[k, j + 1]
            cx, dg = c2[k, j], diag[k, j]
            for i in range(1, n2 - 1):
                rbuf[i] = fr[i] - dg[i] * uc[i] + (
                    fkm * ckm[i] * ukm[i] + fkp * ckp[i] * ukp[i] + fjm * cjm[i] * ujm[i]
                    + fjp * cjp[i] * ujp[i] + cx[i] * uc[i - 1] + cx[i + 1] * uc[i + 1])
            for i in (0, n2 - 1):
                s = fr[i] - dg[i] * uc[i] + (
                    fkm * ckm[i] * ukm[i] + fkp * ckp[i] * ukp[i] + fjm * cjm[i] * ujm[i]
                    + fjp * cjp[i] * ujp[i])
                if i > 0:
                    s += cx[i] * uc[i - 1]
                if i < n2 - 1:
                    s += cx[i + 1] * uc[i + 1]
                rbuf[i] = s
            rr += _restrict_row(rbuf, n2, f2, w, fc[k // f0, j // f1])
    return rr


@njit(**JIT)
def restrict(r, fc):
    """fc = mean of the fine values of each coarse cell; returns |r|^2."""
    n0, n1, n2 = r.shape
    m0, m1, m2 = fc.shape
    f0, f1, f2 = n0 // m0, n1 // m1, n2 // m2
    w = 1.0 / (f0 * f1 * f2)
    fc[:] = 0.0
    rr = 0.0
    for k in range(n0):
        for j in range(n1):
            rr += _restrict_row(r[k, j], n2, f2, w, fc[k // f0, j // f1])
    return rr


# ------------------------------------------------------------------ prolongation


@njit(**JIT)
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


@njit(**JIT)
def prolong_add(u, ec, signs):
    """u += P ec with (tri)linear cell-centred interpolation; ``signs`` are the ghost factors
    (-1 Dirichlet, +1 Neumann) of the six sides (axis0 lo, hi, axis1 lo, hi, axis2 lo, hi).
    Per fine row: combine the (up to four) coarse rows, then interpolate along the row."""
    n0, n1, n2 = u.shape
    m0, m1, m2 = ec.shape
    k0, k1, v0, v1 = _weights_1d(n0, m0, signs[0], signs[1])
    j0, j1, x0, x1 = _weights_1d(n1, m1, signs[2], signs[3])
    i0, i1, y0, y1 = _weights_1d(n2, m2, signs[4], signs[5])
    row = np.empty(m2)
    slo, shi = signs[4], signs[5]
    for k in range(n0):
        for j in range(n1):
            a00, a01 = v0[k] * x0[j], v0[k] * x1[j]
            a10, a11 = v1[k] * x0[j], v1[k] * x1[j]
            e00, e01 = ec[k0[k], j0[j]], ec[k0[k], j1[j]]
            e10, e11 = ec[k1[k], j0[j]], ec[k1[k], j1[j]]
            for c in range(m2):
                row[c] = a00 * e00[c] + a01 * e01[c] + a10 * e10[c] + a11 * e11[c]
            uc = u[k, j]
            if n2 == 2 * m2:
                for c in range(1, m2 - 1):
                    uc[2 * c] += 0.75 * row[c] + 0.25 * row[c - 1]
                    uc[2 * c + 1] += 0.75 * row[c] + 0.25 * row[c + 1]
                uc[0] += 0.75 * row[0] + 0.25 * slo * row[0]
                if m2 > 1:
                    uc[1] += 0.75 * row[0] + 0.25 * row[1]
                    uc[n2 - 2] += 0.75 * row[m2 - 1] + 0.25 * row[m2 - 2]
                    uc[n2 - 1] += 0.75 * row[m2 - 1] + 0.25 * shi * row[m2 - 1]
                else:
                    uc[1] += 0.75 * row[0] + 0.25 * shi * row[0]
            else:
                for i in range(n2):
                    uc[i] += y0[i] * row[i0[i]] + y1[i] * row[i1[i]]
    return u


# ------------------------------------------------------------------ Krylov vector updates


@njit(**JIT)
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


@njit(**JIT)
def jacobi_dot(r, invdiag, z):
    """z = invdiag * r; returns (r, z)."""
    rf, df, zf = r.ravel(), invdiag.ravel(), z.ravel()
    rz = 0.0
    for i in range(rf.size):
        v = df[i] * rf[i]
        zf[i] = v
        rz += rf[i] * v
    return rz


@njit(**JIT)
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


# ------------------------------------------------------------------ transpose restriction
@njit(**JIT)
def _tweights(n, m, slo, shi):
    """Per coarse index: up to four fine indices and weights of (P^T / 2) along one axis
    (identity when the axis is not coarsened)."""
    idx = np.zeros((m, 4), dtype=np.int64)
    w = np.zeros((m, 4))
    if n == m:
        for i in range(m):
            idx[i, 0] = i
            w[i, 0] = 1.0
        return idx, w
    for i in range(m):
        a, b = 2 * i, 2 * i + 1
        idx[i, 0], idx[i, 1] = a, b
        w[i, 0] = 0.375 + (0.125 * slo if i == 0 else 0.0)
        w[i, 1] = 0.375 + (0.125 * shi if i == m - 1 else 0.0)
        if i > 0:
            idx[i, 2] = a - 1
            w[i, 2] = 0.125
        if i < m - 1:
            idx[i, 3] = b + 1
            w[i, 3] = 0.125
    return idx, w


@njit(**JIT)
def restrict_t(r, fc, signs):
    """fc = P^T r / 2^d (the scaled transpose of :func:`prolong_add`); returns |r|^2."""
    n0, n1, n2 = r.shape
    m0, m1, m2 = fc.shape
    k_i, k_w = _tweights(n0, m0, signs[0], signs[1])
    j_i, j_w = _tweights(n1, m1, signs[2], signs[3])
    i_i, i_w = _tweights(n2, m2, signs[4], signs[5])
    row = np.empty(n2)
    for K in range(m0):
        for J in range(m1):
            row[:] = 0.0
            for a in range(4):
                wk = k_w[K, a]
                if wk == 0.0:
                    continue
                for c in range(4):
                    wkj = wk * j_w[J, c]
                    if wkj == 0.0:
                        continue
                    src = r[k_i[K, a], j_i[J, c]]
                    for i in range(n2):
                        row[i] += wkj * src[i]
            out = fc[K, J]
            for i in range(m2):
                out[i] = (i_w[i, 0] * row[i_i[i, 0]] + i_w[i, 1] * row[i_i[i, 1]]
                          + i_w[i, 2] * row[i_i[i, 2]] + i_w[i, 3] * row[i_i[i, 3]])
    rr = 0.0
    rf = r.ravel()
    for i in range(rf.size):
        rr += rf[i] * rf[i]
    return rr


@njit(**JIT)
def _fine_to_coarse(p, n, m, slo, shi):
    """The (up to two) coarse cells fine cell ``p`` restricts to along one axis under P^T / 2,
    with their weights (the second weight is 0 when there is only one)."""
    if n == m:
        return p, 1.0, p, 0.0
    c = p // 2
    if p % 2 == 0:
        return c, 0.375 + (0.125 * slo if c == 0 else 0.0), max(c - 1, 0), \
            (0.125 if c > 0 else 0.0)
    return c, 0.375 + (0.125 * shi if c == m - 1 else 0.0), min(c + 1, m - 1), \
        (0.125 if c < m - 1 else 0.0)


@njit(**JIT)
def residual_restrict_t_const(u, f, a3, d0, d1, d2, fc, signs):
    """fc = P^T (f - A u) / 2^d for a uniform stencil in one pass over the fine grid (the
    residual row into a buffer, restricted along the row, scattered to its coarse rows);
    returns |f - A u|^2."""
    n0, n1, n2 = u.shape
    m0, m1, m2 = fc.shape
    i_i, i_w = _tweights(n2, m2, signs[4], signs[5])
    a0, a1, a2 = a3[0], a3[1], a3[2]
    fc[:] = 0.0
    rbuf = np.empty(n2)
    rc = np.empty(m2)
    rr = 0.0
    for k in range(n0):
        km, kp = max(k - 1, 0), min(k + 1, n0 - 1)
        wkm, wkp = (a0 if k > 0 else 0.0), (a0 if k < n0 - 1 else 0.0)
        ka, kwa, kb, kwb = _fine_to_coarse(k, n0, m0, signs[0], signs[1])
        for j in range(n1):
            jm, jp = max(j - 1, 0), min(j + 1, n1 - 1)
            wjm, wjp = (a1 if j > 0 else 0.0), (a1 if j < n1 - 1 else 0.0)
            ja, jwa, jb, jwb = _fine_to_coarse(j, n1, m1, signs[2], signs[3])
            dkj = d0[k] + d1[j]
            uc, ukm, ukp, ujm, ujp, fr = u[k, j], u[km, j], u[kp, j], u[k, jm], u[k, jp], f[k, j]
            if n0 == 1:
                for i in range(1, n2 - 1):
                    rbuf[i] = fr[i] - (dkj + d2[i]) * uc[i] + wjm * ujm[i] + wjp * ujp[i] \
                        + a2 * (uc[i - 1] + uc[i + 1])
            else:
                for i in range(1, n2 - 1):
                    rbuf[i] = fr[i] - (dkj + d2[i]) * uc[i] + (
                        wkm * ukm[i] + wkp * ukp[i] + wjm * ujm[i] + wjp * ujp[i]) \
                        + a2 * (uc[i - 1] + uc[i + 1])
            for i in (0, n2 - 1):
                s = fr[i] - (dkj + d2[i]) * uc[i] + (
                    wkm * ukm[i] + wkp * ukp[i] + wjm * ujm[i] + wjp * ujp[i])
                if i > 0:
                    s += a2 * uc[i - 1]
                if i < n2 - 1:
                    s += a2 * uc[i + 1]
                rbuf[i] = s
            for i in range(n2):
                rr += rbuf[i] * rbuf[i]
            for i in range(m2):
                rc[i] = (i_w[i, 0] * rbuf[i_i[i, 0]] + i_w[i, 1] * rbuf[i_i[i, 1]]
                         + i_w[i, 2] * rbuf[i_i[i, 2]] + i_w[i, 3] * rbuf[i_i[i, 3]])
            for x in range(2):
                kc, kw = (ka, kwa) if x == 0 else (kb, kwb)
                if kw == 0.0:
                    continue
                for y in range(2):
                    jc, jw = (ja, jwa) if y == 0 else (jb, jwb)
                    w = kw * jw
                    if w == 0.0:
                        continue
                    out = fc[kc, jc]
                    for i in range(m2):
                        out[i] += w * rc[i]
    return rr
