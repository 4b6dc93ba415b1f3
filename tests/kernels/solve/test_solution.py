"""Solution: notebook view, npz and VTK export, reporter events; GPU agreement (marked gpu)."""

from __future__ import annotations

import base64
import io
import json

import numpy as np
import pytest

from skiff.kernels.solve import Solver, poisson, solve
from skiff.kernels.solve.solution import write_vtk


@pytest.fixture(scope="module")
def sol3d():
    return solve(poisson((16, 12, 8)), method="cg", precond="mg", rtol=1e-8)


def test_repr_html_has_two_pngs(sol3d):
    html = sol3d._repr_html_()
    imgs = [part.split('"')[0] for part in html.split("data:image/png;base64,")[1:]]
    assert len(imgs) == 2
    from PIL import Image

    for data in imgs:
        im = Image.open(io.BytesIO(base64.b64decode(data)))
        assert im.format == "PNG" and im.size[0] > 100
    assert "converged" in repr(sol3d)
    assert sol3d.bandwidth > 0 and sol3d.time > 0


def test_save_npz_roundtrip(sol3d, tmp_path):
    path = sol3d.save(tmp_path / "s.npz")
    data = np.load(path)
    np.testing.assert_array_equal(data["field"], sol3d.field)
    summary = json.loads(str(data["summary"]))
    assert summary["iterations"] == sol3d.iterations
    assert len(data["residuals"]) == sol3d.iterations + 1


def _read_vtk(path):
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    header = [ln.decode() for ln in lines[:10]]
    dims = tuple(int(v) for v in header[4].split()[1:])
    n = int(np.prod(dims))
    offset = sum(len(ln) + 1 for ln in lines[:10])
    if header[2] == "BINARY":
        vals = np.frombuffer(raw[offset: offset + 8 * n], dtype=">f8")
    else:
        vals = np.array([float(v) for v in raw[offset:].split()[:n]])
    return header, vals.reshape(dims[::-1]).transpose(2, 1, 0)   # back to (x, y, z)


@pytest.mark.parametrize("fmt", ["vtk", "vtk-ascii"])
def test_save_vtk_structured_points(sol3d, tmp_path, fmt):
    path = sol3d.save(tmp_path / "s.vtk", format=fmt)
    header, vals = _read_vtk(path)
    assert header[0] == "# vtk DataFile Version 3.0"
    assert header[3] == "DATASET STRUCTURED_POINTS"
    assert header[4] == "DIMENSIONS 16 12 8"
    assert header[7] == f"POINT_DATA {16 * 12 * 8}"
    np.testing.assert_allclose(vals, sol3d.field, rtol=1e-15)


def test_vtk_2d(tmp_path):
    u = np.arange(12.0).reshape(4, 3)
    write_vtk(tmp_path / "a.vtk", u, binary=False)
    header, vals = _read_vtk(tmp_path / "a.vtk")
    assert header[4] == "DIMENSIONS 4 3 1"
    np.testing.assert_array_equal(vals[:, :, 0], u)


def test_save_rejects_unknown_format(sol3d, tmp_path):
    with pytest.raises(ValueError, match="unknown format 'csv'"):
        sol3d.save(tmp_path / "s.csv")


class _Recorder:
    def __init__(self):
        self.metrics, self.progress_calls, self.infos = [], [], []
        self.run_dir = None

    def metric(self, name, value, *, step=None):
        self.metrics.append((name, step, value))

    def progress(self, done, total=None, *, unit="step", message=None):
        self.progress_calls.append((done, total, unit))

    def info(self, **fields):
        self.infos.append(fields)

    def log(self, msg, level="info"):
        pass

    def check(self):
        pass


def test_reporter_gets_the_residual_curve():
    rec = _Recorder()
    seen = []
    sol = Solver(poisson((32, 32), source=1.0), method="cg", precond="jacobi").solve(
        rtol=1e-6, reporter=rec, callback=lambda x: seen.append(float(x.sum())))
    res = [v for name, _, v in rec.metrics if name == "residual"]
    assert len(res) == sol.iterations + 1 == len(seen) + 1
    np.testing.assert_allclose(res, np.array(sol.residuals) / sol.bnorm)
    assert rec.progress_calls[-1][2] == "decades"
    assert rec.progress_calls[-1][0] == pytest.approx(rec.progress_calls[-1][1], rel=1e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("method,precond", [("cg", "mg"), ("cg", "jacobi"), ("mg", "none"),
                                            ("pipecg", "jacobi"), ("cg", "amg")])
def test_gpu_matches_cpu(method, precond):
    p = poisson((64, 64, 32))
    cpu = solve(p, method=method, precond=precond, rtol=1e-10, device="cpu")
    gpu = solve(p, method=method, precond=precond, rtol=1e-10, device="cuda")
    assert gpu.converged and gpu.device.startswith("cuda")
    np.testing.assert_allclose(gpu.field, cpu.field, rtol=1e-7, atol=1e-10)
