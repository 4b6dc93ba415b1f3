"""Round 33 (h10): a flow solve written for ParaView (``NoseFlow.save``, ``FlowResult.save``).

Before: ``%solve train-nose``/``cylinder`` had no file for ParaView (``--save`` was refused for
them, ``NoseFlow`` had no ``save``). Oracles: gmsh reads the legacy ASCII ``.vtk`` (the mesh
as written), the ``.vtu`` is read with the standard library by the VTK XML format's own
rules, and its fields are checked against physics and the DFG benchmark: no slip on the body,
U on the inlet, the stagnation cp of a nose near 1, and the pressure difference across the
cylinder against Schäfer & Turek's published 2D-1 band.
"""

from __future__ import annotations

import base64
import csv
import dataclasses
import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import skiff.aero
from skiff.kernels.backend.report import NullReporter
from skiff.kernels.solve.flow import run_case


@pytest.fixture(scope="module")
def nose():
    return skiff.aero.solve_nose(3, 0.4, 0.3, re=100, adapt="graded", resolution=14)


@pytest.fixture(scope="module")
def cylinder():
    return run_case("2d-1", resolution=24)


def _read_vtu(path):
    """Points, triangles, point data and field data of an UnstructuredGrid .vtu (base64
    inline binary with a UInt64 byte-count header, or ASCII), as the VTK XML format says."""
    root = ET.parse(path).getroot()
    assert root.get("type") == "UnstructuredGrid"
    types = {"Float64": "<f8", "Int64": "<i8", "UInt8": "u1"}

    def values(da):
        dt = np.dtype(types[da.get("type")])
        if da.get("format") == "ascii":
            out = np.array(da.text.split(), float).astype(dt)
        else:
            raw = base64.b64decode(da.text)
            count = int(np.frombuffer(raw[:8], "<u8")[0])
            assert count == len(raw) - 8
            out = np.frombuffer(raw[8:], dt)
        comps = int(da.get("NumberOfComponents", 1))
        return out.reshape(-1, comps) if comps > 1 else out

    piece = root.find("UnstructuredGrid/Piece")
    pts = values(piece.find("Points/DataArray"))
    cells = {da.get("Name"): values(da) for da in piece.find("Cells")}
    assert np.all(cells["types"] == 5)                    # VTK_TRIANGLE
    assert np.array_equal(cells["offsets"], 3 * np.arange(1, len(cells["types"]) + 1))
    tri = cells["connectivity"].reshape(-1, 3)
    data = {da.get("Name"): values(da) for da in piece.find("PointData")}
    fields = {da.get("Name"): float(da.text) for da in root.find("UnstructuredGrid/FieldData")}
    assert int(piece.get("NumberOfPoints")) == len(pts)
    assert int(piece.get("NumberOfCells")) == len(tri)
    return pts, tri, data, fields


def _gmsh_mesh(path):
    import gmsh

    gmsh.initialize(["-v", "0"]) if not gmsh.isInitialized() else None
    try:
        gmsh.clear()
        gmsh.open(str(path))
        tags, xyz, _ = gmsh.model.mesh.getNodes()
        etypes, _, enodes = gmsh.model.mesh.getElements(dim=2)
    finally:
        gmsh.clear()
    order = np.argsort(tags)
    assert list(etypes) == [2]                              # 3-node triangles
    return xyz.reshape(-1, 3)[order], enodes[0].reshape(-1, 3).astype(np.int64) - 1


def test_nose_vtu_holds_the_solved_flow(nose, tmp_path):
    path = nose.save(tmp_path / "nose.vtu")
    pts, tri, data, fields = _read_vtu(path)
    p, t = nose.mesh
    assert np.allclose(pts[:, :2], p.T, atol=0) and np.all(pts[:, 2] == 0)
    assert np.array_equal(tri, t.T)
    assert fields["cd"] == nose.cd and fields["cl"] == nose.cl and fields["re"] == 100
    u = data["velocity"]
    assert u.shape == (len(pts), 3)
    # no slip on the body: the surface's vertices (those cp was read at) are at rest
    surface = {(round(a, 12), round(b, 12)) for a, b in zip(nose.cp["x"], nose.cp["y"])}
    on_body = np.array([(round(a, 12), round(b, 12)) in surface for a, b in pts[:, :2]])
    assert on_body.sum() == len(surface) == len(nose.cp["s"])
    assert np.abs(u[on_body]).max() < 1e-12
    inlet = np.isclose(pts[:, 0], pts[:, 0].min())
    assert np.allclose(u[inlet, 0], 1.0) and np.allclose(u[inlet, 1], 0.0)
    assert np.allclose(data["speed"], np.hypot(u[:, 0], u[:, 1]))
    # the stagnation point: cp near 1 (Bernoulli), above it at Re 100 (the viscous stress,
    # as a cylinder's 1.2 at Re 40, and the domain's blockage): 1.31 on this coarse grid
    assert 1.0 < data["cp"].max() < 1.5
    assert np.isclose(data["cp"].max(), nose.cp["cp"].max())
    assert np.allclose(data["cp"], 2 * data["pressure"])


def test_legacy_vtk_read_by_gmsh_and_binary_equals_ascii(nose, tmp_path):
    ascii_ = nose.save(tmp_path / "a.vtk", format="vtk-ascii")
    xyz, tri = _gmsh_mesh(ascii_)
    p, t = nose.mesh
    assert np.allclose(xyz[:, :2], p.T, rtol=1e-15, atol=1e-15)
    assert np.array_equal(tri, t.T)
    # the binary file (big-endian, as the legacy format asks) says the same numbers
    binary = nose.save(tmp_path / "b.vtk").read_bytes()
    text = ascii_.read_text()
    n = p.shape[1]
    start = binary.index(b"POINTS %d double\n" % n) + len(b"POINTS %d double\n" % n)
    pts = np.frombuffer(binary[start:start + 24 * n], ">f8").reshape(n, 3)
    lines = text.split("\n")
    k = lines.index(f"POINTS {n} double")
    assert np.array_equal(pts, np.array([r.split() for r in lines[k + 1:k + 1 + n]], float))
    cp_at = binary.index(b"SCALARS cp double 1\nLOOKUP_TABLE default\n")
    cp = np.frombuffer(binary[cp_at + 41:cp_at + 41 + 8 * n], ">f8")
    assert np.allclose(cp, 2 * nose.fields["p"], rtol=0, atol=0)
    assert "FIELD FieldData" in text and text.index("FIELD") < text.index("POINT_DATA")


def test_cylinder_export_against_the_published_pressure_difference(cylinder, tmp_path):
    pts, tri, data, fields = _read_vtu(cylinder.save(tmp_path / "cyl.vtu"))
    # DFG 2D-1: dp = p(0.15, 0.2) - p(0.25, 0.2), published band 0.1172 - 0.1176
    def at(x, y):
        k = int(np.argmin(np.hypot(pts[:, 0] - x, pts[:, 1] - y)))
        assert np.hypot(pts[k, 0] - x, pts[k, 1] - y) < 1e-9
        return data["pressure"][k]

    dp = at(0.15, 0.2) - at(0.25, 0.2)
    assert 0.1172 <= dp <= 0.1176
    assert fields["cd"] == cylinder.cd and np.isclose(fields["re"], 20)
    # the parabolic inflow, U_max 0.3 at mid-height of the 0.41 m channel
    inlet = np.isclose(pts[:, 0], 0.0)
    y = pts[inlet, 1]
    assert np.allclose(data["velocity"][inlet, 0], 4 * 0.3 * y * (0.41 - y) / 0.41 ** 2)
    # the surface's cp as CSV: front minus back = dp / (U_mean^2 / 2), U_mean 0.2
    table = np.loadtxt(cylinder.save(tmp_path / "cyl.csv"), delimiter=",", skiprows=1)
    theta, cp = table[:, 0], table[:, 3]
    assert np.isclose(cp[np.argmin(np.abs(theta))] - cp[np.argmin(np.abs(theta - 180))],
                      dp / 0.02, rtol=1e-9)


def test_save_errors_say_what_to_do(tmp_path):
    flow = skiff.aero.solve_nose(3, 0.4, 0.3, re=20, adapt="graded", resolution=14,
                                 keep=False)
    with pytest.raises(ValueError, match="keep=False"):
        flow.save(tmp_path / "x.vtu")
    assert flow.save(tmp_path / "x.csv").read_text().count("\n") == len(flow.cp["s"]) + 1
    with pytest.raises(ValueError, match=r"\.vtu or \.vtk"):
        flow.save(tmp_path / "x.png")
    with pytest.raises(ValueError, match="unknown format"):
        flow.save(tmp_path / "x.vtu", format="paraview")


class _Artifacts(NullReporter):
    def __init__(self, run_dir):
        self.run_dir, self.paths = run_dir, {}

    def artifact(self, name, path, *, kind="file", **kw):
        self.paths[name] = path


def test_the_cylinder_job_saves_and_plots_newtons_convergence(tmp_path):
    """``config['save']`` writes the flow; a steady case's Newton updates are a plot (the
    job drew fields and mesh only). Newton converges quadratically at the end."""
    from skiff.kernels.solve.flow.job import run
    from skiff.kernels.solve.flow.result import convergence_figure

    rep = _Artifacts(tmp_path)
    res = run({"case": "2d-1", "resolution": 24, "save": str(tmp_path / "c.vtu")}, rep)
    assert {"fields", "mesh", "convergence", "flow"} <= set(rep.paths)
    assert rep.paths["flow"] == tmp_path / "c.vtu" and rep.paths["convergence"].exists()
    ups = res.details["newton_updates"]
    assert ups[-1] < 1e-8 and ups[-1] < 10 * ups[-2] ** 2
    line = convergence_figure(res).axes[0].get_lines()[0]
    assert np.array_equal(line.get_ydata(), ups)
    pts, tri, data, fields = _read_vtu(tmp_path / "c.vtu")
    assert len(tri) == res.cells and fields["cd"] == res.cd


def test_json_holds_the_numbers_against_schaefer_turek(cylinder, tmp_path):
    """Round 47 (h14): ``--save run.json`` was refused ("writes .vtu or .vtk ...") though
    the run's record is JSON; a NaN (a Strouhal number with no shedding) must be null, as
    strict readers (``JSON.parse``) refuse ``NaN``. Oracle: Schaefer & Turek's 2D-1 values."""
    def strict(text):
        return json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in the JSON"))

    doc = strict(cylinder.save(tmp_path / "run.json").read_text())
    assert doc["reference"]["cd"] == pytest.approx(5.57954, rel=1e-6)
    assert doc["cd"] == pytest.approx(5.57954, rel=0.01)      # resolution 24
    assert doc["dp"] == pytest.approx(0.11752, rel=0.01)
    assert doc["cd"] == cylinder.values["cd"] and doc["case"] == "2d-1"
    nan = dataclasses.replace(cylinder, values={**cylinder.values, "st": float("nan")})
    assert strict(nan.save(tmp_path / "nan.json").read_text())["st"] is None
    from skiff.kinds.solve import _cylinder_config

    assert _cylinder_config({"case": "2d-1", "save": str(tmp_path / "r.json")})["save"]


def test_a_history_csv_is_refused_before_a_steady_run(nose, tmp_path):
    """Round 47 (h14): ``--save x.history.csv`` on 2D-1 failed the job after the solve (its
    result lost), and a nose's history CSV always said "the unsteady cases 2d-2 and 2d-3"
    (a time-averaged nose's history was never passed). Now a steady run is refused before
    any job, and a time-averaged nose writes ``t, cd, cl``."""
    from skiff.kinds.solve import _cylinder_config, nose_config

    save = str(tmp_path / "x.history.csv")
    with pytest.raises(ValueError, match="case 2d-1 is steady: no time history"):
        _cylinder_config({"case": "2d-1", "save": save})
    assert _cylinder_config({"case": "2d-2", "save": save})["save"] == save
    with pytest.raises(ValueError, match="--flow steady has no time history"):
        nose_config({"flow": "steady", "save": save})
    with pytest.raises(ValueError, match="this nose was solved steady"):
        nose.save(save)
    t = np.linspace(0.1, 1.0, 10)
    averaged = dataclasses.replace(nose, mode="unsteady", history={
        "t": t, "cd": 1 + 0.1 * np.sin(t), "cl": 0.2 * np.cos(t)})
    with averaged.save(save).open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["t", "cd", "cl"] and len(rows) == 10
    assert float(rows[3]["cd"]) == pytest.approx(1 + 0.1 * np.sin(t[3]))


class _Log(NullReporter):
    """A job's reporter with no run folder (no plots drawn): its warnings, record and files."""

    def __init__(self):
        self.warnings, self.record, self.paths = [], {}, {}

    def log(self, message, *, level="info"):
        if level == "warning":
            self.warnings.append(message)

    def info(self, **fields):
        self.record.update(fields)

    def artifact(self, name, path, *, kind="file"):
        self.paths[name] = path
        return path


SUFFIXES = (".vtu", ".vtk", ".npz", ".csv", ".history.csv", ".json")


@pytest.mark.filterwarnings("ignore:--save")
def test_a_jobs_save_never_loses_its_result(cylinder, nose, tmp_path, monkeypatch):
    """Round 47 (h19): ``--flow auto`` with ``--save x.history.csv`` that ended steady failed
    the job after the solve (the result lost); any file the save could not write did the
    same. Now every suffix is written for every flow kind (cylinder 2D-1 / 2D-2 / 2D-3, the
    nose steady / time-averaged / auto ended steady): a steady end's history is one row, its
    steady values (2D-1's cd against Schaefer & Turek's 5.57954); a file that cannot be
    written is a warning and the job returns its result."""
    from skiff.kernels.solve.flow import job, nose_job
    from skiff.kernels.solve.flow.export import save_in_job

    unsteady = {}
    for case in ("2d-2", "2d-3"):     # two BDF steps on the coarsest grid, through the job
        rep = _Log()
        unsteady[case] = job.run({"case": case, "resolution": 16, "dt": 0.01, "t_end": 0.02,
                                  "save": str(tmp_path / "gone" / f"{case}.vtu")}, rep)
        assert unsteady[case].steps == 2 and "flow" not in rep.paths
        assert [w for w in rep.warnings if w.startswith("--save")] == [
            rep.record["save_warning"]] and "not written" in rep.record["save_warning"]
        assert "no folder" in rep.record["save_warning"]
    t = np.linspace(0.1, 1.0, 10)
    averaged = dataclasses.replace(nose, mode="unsteady", history={
        "t": t, "cd": 1 + 0.1 * np.sin(t), "cl": 0.2 * np.cos(t)})
    results = {"2d-1": cylinder, **unsteady, "nose-auto-steady": nose,
               "nose-unsteady": averaged}
    assert nose.mode == "steady" and not nose.history      # auto ended steady
    for name, res in results.items():
        for suffix in SUFFIXES:
            rep = _Log()
            path = save_in_job(res, tmp_path / f"{name}{suffix}", rep)
            assert path is not None and path.is_file() and rep.paths["flow"] == path, (
                name, suffix, rep.warnings)
            if suffix != ".history.csv":
                assert not rep.warnings, (name, suffix, rep.warnings)
                continue
            with path.open(newline="") as f:
                rows = list(csv.DictReader(f))
            if res.history:
                assert not rep.warnings
                assert len(rows) == len(res.history["t"]) and list(rows[0]) == list(res.history)
                assert float(rows[-1]["cd"]) == pytest.approx(res.history["cd"][-1])
            else:                                   # a steady end: one row and a note
                assert len(rows) == 1 and np.isnan(float(rows[0]["t"]))
                assert "ended steady" in rep.warnings[0] and "one row" in rep.warnings[0]
                assert rep.record["save_warning"] == rep.warnings[0]
                cd = res.values["cd"] if name == "2d-1" else res.cd
                assert float(rows[0]["cd"]) == pytest.approx(cd, rel=1e-8)
    assert float(next(csv.DictReader((tmp_path / "2d-1.history.csv").open()))["cd"]) == \
        pytest.approx(5.57954, rel=0.01)                 # Schaefer & Turek 2D-1, resolution 24
    # the nose job, --flow auto ended steady (the solve is this module's nose): one row
    monkeypatch.setattr(nose_job, "solve_nose", lambda *a, **k: nose)
    rep = _Log()
    with pytest.warns(UserWarning, match="ended steady"):       # the CLI's warning line
        out = nose_job.run({"clearance": 0.3, "re": 100, "adapt": "graded", "flow": "auto",
                            "save": str(tmp_path / "auto.history.csv")}, rep)
    assert out is nose and rep.paths["flow"] == tmp_path / "auto.history.csv"
    assert "Newton converged" in rep.warnings[0] and "one row" in rep.warnings[0]
    # a result kept without fields: .vtu is a warning, the job's result returned
    rep = _Log()
    assert save_in_job(dataclasses.replace(nose, mesh=None), tmp_path / "x.vtu", rep) is None
    assert "keep=False" in rep.warnings[0] and "result is kept" in rep.warnings[0]
