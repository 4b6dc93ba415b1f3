"""The cylinder's surface distributions: pressure coefficient ``cp(theta)`` and skin
friction ``cf(theta)``, and the forces they integrate to.

``theta`` is the angle from the front (upstream) stagnation point, in degrees, growing over
the top (90: the top, 180: the back point); ``cp = (p - p_ref) / (1/2 rho U_mean^2)`` with
``p_ref`` the inlet's mean pressure; ``cf = tau_w / (1/2 rho U_mean^2)``, ``tau_w`` the wall
shear stress along the surface direction of growing ``theta`` (it changes sign where the flow
separates). ``cp`` is the P1 pressure at the cylinder's vertices; ``cf`` one facet's
(straight edge of the polygonal cylinder) mean over its quadrature points; ``cd_surface``,
``cl_surface`` integrate ``-p n + nu (grad u + grad u^T) n`` over the facets: the textbook
surface integral of the stress, independent of the volume-integral forces the benchmark
values use (their difference is a measure of the discretisation error).
"""

from __future__ import annotations

import numpy as np

from .mesh import DFG_CHANNEL

__all__ = ["cylinder_surface"]


def cylinder_surface(th, st, nu: float, u_mean: float, diameter: float,
                     channel=DFG_CHANNEL) -> dict:
    """``theta, x, y, cp`` at the cylinder's vertices and ``theta_cf, cf`` at its facets'
    midpoints, each ordered by the angle, and the surface-integral coefficients
    ``cd_surface``, ``cl_surface``, ``cd_pressure`` (the pressure's share of the drag)."""
    from skfem import ElementTriP1, ElementTriP2, FacetBasis

    mesh = th.mesh
    facets = mesh.boundaries["cylinder"]
    fb = FacetBasis(mesh, ElementTriP2(), facets=facets, intorder=4)
    fq = FacetBasis(mesh, ElementTriP1(), facets=facets, intorder=4)
    inlet = th.pressure_dofs("inlet")
    p_ref = float(np.mean(np.asarray(st.p)[inlet]))
    ux, uy = fb.interpolate(st.ux), fb.interpolate(st.uy)
    p = np.asarray(fq.interpolate(np.asarray(st.p) - p_ref))
    n = -np.asarray(fb.normals)                 # the cylinder's outward normal (into the fluid)
    gu, gv = np.asarray(ux.grad), np.asarray(uy.grad)               # (2, F, Q)
    # the viscous stress nu (grad u + grad u^T) n
    sxx, syy, sxy = 2 * gu[0], 2 * gv[1], gu[1] + gv[0]
    tx = nu * (sxx * n[0] + sxy * n[1])
    ty = nu * (sxy * n[0] + syy * n[1])
    dx = np.asarray(fb.dx)                                           # (F, Q) weights
    qx, qy = np.asarray(fb.global_coordinates())
    cx, cy = channel.centre
    # the direction of growing theta (over the top from the front): clockwise seen from +z,
    # theta = atan2(y - cy, cx - x)
    ex, ey = n[1], -n[0]
    scale = 0.5 * u_mean ** 2
    fx = np.sum((-p * n[0] + tx) * dx)
    fy = np.sum((-p * n[1] + ty) * dx)
    fpx = np.sum(-p * n[0] * dx)
    length = dx.sum(axis=1)
    mean = lambda v: np.sum(v * dx, axis=1) / length          # noqa: E731
    mx, my = mean(qx), mean(qy)
    angle = lambda x, y: np.degrees(np.arctan2(y - cy, cx - x)) % 360.0    # noqa: E731
    theta_f = angle(mx, my)
    of = np.argsort(theta_f)
    # cp at the cylinder's vertices: the P1 pressure's nodal values (the front and back
    # points, where the benchmark reads dp, are vertices)
    verts = th.pressure_dofs("cylinder")
    vx, vy = np.asarray(th.pressure_points)[:, verts]
    theta = angle(vx, vy)
    ov = np.argsort(theta)
    cp = (np.asarray(st.p)[verts] - p_ref) / scale
    return {"theta": theta[ov], "x": vx[ov], "y": vy[ov], "cp": cp[ov],
            "theta_cf": theta_f[of], "cf": mean(tx * ex + ty * ey)[of] / scale,
            "cd_surface": float(fx / (scale * diameter)),
            "cl_surface": float(fy / (scale * diameter)),
            "cd_pressure": float(fpx / (scale * diameter))}
