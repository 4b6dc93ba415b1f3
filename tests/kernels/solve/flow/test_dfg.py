"""The DFG benchmark "flow around a cylinder" (Schäfer & Turek 1996), case 2D-1: drag
converges to the published value under refinement (quick), and at the benchmark resolution
drag, lift and pressure difference lie inside the published bands (slow)."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.solve.flow import CASES, channel_mesh, run_case, strouhal

CD_REF = 5.57953523384   # the reference value of the benchmark's later high-precision runs


def test_drag_converges_under_refinement():
    runs = [run_case("2d-1", resolution=n, keep_fields=False) for n in (16, 32, 64)]
    err = np.array([abs(r.cd - CD_REF) for r in runs])
    # a doubling of the resolution cuts the error at least 2.5-fold (second order: ~4)
    assert np.all(err[:-1] / err[1:] > 2.5), err
    assert err[-1] / CD_REF < 3e-3
    finest = runs[-1]
    assert 0.0095 < finest.cl < 0.0115 and abs(finest.dp - 0.11752) < 5e-4
    assert abs(finest.la - 0.0847) < 1e-3
    assert finest.steps <= 8 and finest.details["newton_updates"][-1] < 1e-8
    assert finest.cells > runs[0].cells and finest.dofs == finest.to_json()["dofs"]
    assert 0 < finest.linear_seconds < finest.seconds


@pytest.mark.slow
def test_2d1_inside_the_bands_at_the_benchmark_resolution():
    res = run_case("2d-1")
    assert res.in_bands() == {"cd": True, "cl": True, "dp": True, "la": True}, res.values


def test_strouhal_of_a_known_signal():
    t = np.linspace(0.0, 2.0, 4001)
    assert strouhal(t, 0.3 + np.sin(2 * np.pi * 3.0 * t + 0.4), 0.1, 1.0) == \
        pytest.approx(0.3, rel=1e-4)
    assert np.isnan(strouhal(t, np.ones_like(t)))


@pytest.mark.parametrize("kwargs, needle", [
    ({"case": "2d-9"}, "unknown case '2d-9': choose from 2d-1, 2d-2, 2d-3"),
    ({"re": 0.0}, "Reynolds number must be > 0, got 0.0"),
    ({"re": -20.0}, "Reynolds number must be > 0, got -20.0"),
    ({"resolution": 8}, "resolution 8 is too coarse to hold the cylinder"),
    ({"dt": -0.1, "case": "2d-2"}, "dt must be > 0, got -0.1"),
    # a step longer than the run made no step and failed with an IndexError
    ({"dt": 10.0, "case": "2d-2", "resolution": 16}, "dt 10 is longer than the run"),
    ({"dt": 0.5, "t_end": 0.1, "case": "2d-3", "resolution": 16},
     "dt 0.5 is longer than the run .t_end 0.1."),
])
def test_bad_input_one_clear_error(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        run_case(**kwargs)


def test_mesh_holds_the_body_second_order():
    """The cylinder is a polygon with its vertices on the circle, ``resolution`` edges, front
    and back points as nodes."""
    mesh = channel_mesh(48)
    facets = mesh.boundaries["cylinder"]
    assert len(facets) == 48
    verts = np.unique(mesh.facets[:, facets])
    r = np.hypot(mesh.p[0, verts] - 0.2, mesh.p[1, verts] - 0.2)
    np.testing.assert_allclose(r, 0.05, atol=1e-12)
    for point in ((0.15, 0.2), (0.25, 0.2)):
        assert np.hypot(mesh.p[0] - point[0], mesh.p[1] - point[1]).min() < 1e-12
    assert set(mesh.boundaries) == {"inlet", "outlet", "walls", "cylinder"}
    assert CASES["2d-2"].re == pytest.approx(100.0) and CASES["2d-1"].re == pytest.approx(20.0)


def test_other_reynolds_number_has_no_bands():
    res = run_case("2d-1", resolution=16, re=10.0, keep_fields=False)
    assert res.case == "custom" and res.bands == {} and res.re == pytest.approx(10.0)
    # slower flow: a larger drag coefficient (viscous drag dominates at low Re)
    assert res.cd > 6.0


def test_force_probe_equals_the_full_residual():
    """The per-step force (body rows, elements touching the body) is the full momentum
    residual's sum over the body's dofs, time derivative included."""
    from skiff.kernels.solve.flow import FlowState, TaylorHood, momentum_residual
    from skiff.kernels.solve.flow.dfg import Probe, _problem

    th = TaylorHood(channel_mesh(24))
    prob, _ = _problem(th, 1.5)
    rng = np.random.default_rng(1)
    st = FlowState(rng.standard_normal(th.nv), rng.standard_normal(th.nv),
                   rng.standard_normal(th.np))
    dudt = (rng.standard_normal(th.nv), rng.standard_normal(th.nv))
    cd, cl, _ = Probe(prob, 1.0)(st, dudt=dudt)
    rx, ry = momentum_residual(prob, st.ux, st.uy, st.p, dudt=dudt)
    body = th.velocity_dofs("cylinder")
    assert cd == pytest.approx(-20.0 * rx[body].sum(), rel=1e-12)
    assert cl == pytest.approx(-20.0 * ry[body].sum(), rel=1e-12)
