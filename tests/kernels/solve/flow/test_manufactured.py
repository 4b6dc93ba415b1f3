"""The Navier-Stokes discretisation against a manufactured solution: the measured order of
accuracy of Taylor-Hood P2/P1 (velocity ~3, pressure ~2 in L2), for the steady Newton solve
and for the time stepper run to its steady state."""

from __future__ import annotations

import numpy as np

from skiff.kernels.solve.flow import FlowProblem, Stepper, TaylorHood, run_steps, solve_steady
from skiff.kernels.solve.flow.steady import initial_state

pi = np.pi
NU = 0.1


def exact(x, y):
    """Velocity from the stream function sin^2(pi x) sin^2(pi y) (divergence-free, zero on the
    unit square's sides) and pressure cos(pi x) cos(pi y)."""
    u = pi * np.sin(pi * x) ** 2 * np.sin(2 * pi * y)
    v = -pi * np.sin(2 * pi * x) * np.sin(pi * y) ** 2
    return u, v, np.cos(pi * x) * np.cos(pi * y)


def body_force(x, y):
    """f = (u . grad) u - nu lap u + grad p, written out by hand."""
    s2x, s2y = np.sin(pi * x) ** 2, np.sin(pi * y) ** 2
    u, v, _ = exact(x, y)
    ux, uy = pi ** 2 * np.sin(2 * pi * x) * np.sin(2 * pi * y), \
        2 * pi ** 2 * s2x * np.cos(2 * pi * y)
    vx, vy = -2 * pi ** 2 * np.cos(2 * pi * x) * s2y, \
        -pi ** 2 * np.sin(2 * pi * x) * np.sin(2 * pi * y)
    lap_u = 2 * pi ** 3 * np.cos(2 * pi * x) * np.sin(2 * pi * y) \
        - 4 * pi ** 3 * s2x * np.sin(2 * pi * y)
    lap_v = 4 * pi ** 3 * np.sin(2 * pi * x) * s2y \
        - 2 * pi ** 3 * np.sin(2 * pi * x) * np.cos(2 * pi * y)
    px, py = -pi * np.sin(pi * x) * np.cos(pi * y), -pi * np.cos(pi * x) * np.sin(pi * y)
    return u * ux + v * uy - NU * lap_u + px, u * vx + v * vy - NU * lap_v + py


def _problem(level):
    from skfem import MeshTri

    mesh = MeshTri.init_sqsymmetric().refined(level).with_boundaries(
        {"box": lambda x: np.ones_like(x[0], dtype=bool)})
    th = TaylorHood(mesh)
    fixed = th.velocity_dofs("box")
    gx, gy, _ = exact(*th.velocity_points)
    px, py = th.pressure_points
    corner = np.array([int(np.argmin(px + py))])            # the vertex (0, 0): p = 1
    prob = FlowProblem(th, NU, fixed, gx, gy,
                       fx=th.load(lambda x, y: body_force(x, y)[0]),
                       fy=th.load(lambda x, y: body_force(x, y)[1]),
                       pin=corner, pin_values=np.array([1.0]))
    return prob


def _errors(prob, st):
    th = prob.th
    xq = th.V.mapping.F(th.V.X)
    u, v, p = exact(xq[0], xq[1])
    eu = (th.at_quad(st.ux) - u) ** 2 + (th.at_quad(st.uy) - v) ** 2
    ph = np.asarray(th.Q.interpolate(st.p))
    ep = (ph - p) ** 2
    return float(np.sqrt((eu * th.dx).sum())), float(np.sqrt((ep * th.dx).sum()))


def test_newton_order_of_accuracy():
    errs = [_errors(prob, solve_steady(prob)) for prob in map(_problem, (1, 2, 3))]
    eu, ep = np.array(errs).T
    order_u, order_p = np.log2(eu[:-1] / eu[1:]), np.log2(ep[:-1] / ep[1:])
    assert np.all(order_u > 2.7), (eu, order_u)       # P2 velocity: 3
    assert np.all(order_p > 1.7), (ep, order_p)       # P1 pressure: 2
    assert eu[-1] < 2e-3 and ep[-1] < 2e-2


def test_time_stepper_reaches_the_galerkin_steady_state():
    """At a steady state of the rotational pressure correction the correction and the
    divergence vanish, so the stepper must land on Newton's discrete solution (an independent
    solve of the same equations). (The standard, non-rotational form would not here: it keeps
    p = 0 on its free side instead of the continuity rows there, which this closed box with
    velocity given on every side does not allow.)"""
    prob = _problem(2)
    ref = solve_steady(prob)
    px = prob.th.pressure_points
    outlet = np.flatnonzero(np.isclose(px[0], 1.0))            # free pressure on x = 1
    state = initial_state(prob)                                # at rest, walls moving

    def boundary(t):
        return prob.gx, prob.gy

    stepper = Stepper(prob, 0.05, boundary, outlet)
    st = run_steps(stepper, state, 120)
    du = np.abs(np.concatenate([st.ux - ref.ux, st.uy - ref.uy])).max()
    assert du < 1e-5 * np.abs(ref.ux).max(), du
    # pressure: the stepper's outlet pins p = 0 where Newton pins p(0, 0) = 1: equal up to a
    # constant
    dp = (st.p - st.p.mean()) - (ref.p - ref.p.mean())
    assert np.abs(dp).max() < 1e-4, np.abs(dp).max()
    assert stepper.iterations["pressure"] > 0 and stepper.times["pressure"] > 0


def test_time_stepper_second_order_in_time():
    """u(t) = s(t) U, p(t) = s(t) P with s = 1 + sin(3t)/2 and the matching body force at each
    time: the error at t = 1 against the exact solution falls ~4x when dt halves (BDF2 with
    the rotational correction), on a mesh fine enough for the spatial error to be well below."""
    prob = _problem(4)
    th = prob.th
    U, V, P = exact(*th.velocity_points)

    def s(t):
        return 1 + 0.5 * np.sin(3 * t)

    def ds(t):
        return 1.5 * np.cos(3 * t)

    def convection(x, y):          # (U . grad) U, the part of the force that goes with s^2
        f = body_force(x, y)
        rest = [NU * lap for lap in _laplacian(x, y)]
        grad_p = (-pi * np.sin(pi * x) * np.cos(pi * y), -pi * np.cos(pi * x) * np.sin(pi * y))
        return f[0] + rest[0] - grad_p[0], f[1] + rest[1] - grad_p[1]

    loads = {name: [th.load(lambda x, y, k=k, fn=fn: fn(x, y)[k]) for k in (0, 1)]
             for name, fn in (("U", exact), ("C", convection), ("F", body_force))}
    Ux, Uy = loads["U"]
    Cx, Cy = loads["C"]
    Fx, Fy = loads["F"]

    def forcing(t):     # s' U + s^2 (U.grad)U + s (-nu lap U + grad P)
        return (ds(t) * Ux + s(t) ** 2 * Cx + s(t) * (Fx - Cx),
                ds(t) * Uy + s(t) ** 2 * Cy + s(t) * (Fy - Cy))

    corner = np.array([int(np.argmin(th.pressure_points.sum(axis=0)))])   # p free elsewhere
    xq = th.V.mapping.F(th.V.X)
    ue, ve, _ = exact(xq[0], xq[1])
    errors = []
    for dt in (0.04, 0.02):
        st0 = initial_state(prob)
        st0.ux[:], st0.uy[:], st0.p[:] = U, V, exact(*th.pressure_points)[2]
        stepper = Stepper(prob, dt, lambda t: (s(t) * U, s(t) * V), corner, forcing=forcing)
        st = run_steps(stepper, st0, int(round(1.0 / dt)))
        e2 = (th.at_quad(st.ux) - s(1.0) * ue) ** 2 + (th.at_quad(st.uy) - s(1.0) * ve) ** 2
        errors.append(float(np.sqrt((e2 * th.dx).sum())))
    order = np.log2(errors[0] / errors[1])
    assert order > 1.8, (errors, order)
    assert errors[1] < 1e-3, errors


def _laplacian(x, y):
    s2x, s2y = np.sin(pi * x) ** 2, np.sin(pi * y) ** 2
    lap_u = 2 * pi ** 3 * np.cos(2 * pi * x) * np.sin(2 * pi * y) \
        - 4 * pi ** 3 * s2x * np.sin(2 * pi * y)
    lap_v = 4 * pi ** 3 * np.sin(2 * pi * x) * s2y \
        - 2 * pi ** 3 * np.sin(2 * pi * x) * np.cos(2 * pi * y)
    return lap_u, lap_v
