"""The prebuilt Jobs sidebar is committed and current, and every way of installing skiff
finds it: the wheel's data files, the extension points, and ``make lab``'s config folder."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import skiff.lab
from tests.browser.lab import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import labext_sources  # noqa: E402

BUILD = ROOT / "skiff" / "lab" / "labextensions" / "skiff-lab"


def test_the_committed_build_is_that_of_the_sources():
    """Sources edited without ``make labext`` (and the build committed) fail here."""
    stamp = (BUILD / "sources.sha256").read_text().strip()
    assert stamp == labext_sources.fingerprint(), (
        "labextension/ changed since skiff/lab/labextensions/skiff-lab was built: run "
        "`make labext` and commit its output")


def test_the_build_is_a_federated_extension():
    meta = json.loads((BUILD / "package.json").read_text())
    assert meta["name"] == skiff.lab.LABEXTENSION_NAME == BUILD.name
    assert (BUILD / meta["jupyterlab"]["_build"]["load"]).is_file()
    assert (BUILD / "static" / "style.js").is_file()


def test_the_wheel_ships_the_frontend_and_enables_the_server_extension():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    files = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "data-files"]
    shipped = {dest: [p for pattern in srcs for p in ROOT.glob(pattern)]
               for dest, srcs in files.items()}
    assert all(shipped.values()), shipped
    static = {p.name for p in shipped["share/jupyter/labextensions/skiff-lab/static"]}
    assert static == {p.name for p in (BUILD / "static").iterdir()}
    (config,) = shipped["etc/jupyter/jupyter_server_config.d"]
    assert json.loads(config.read_text())["ServerApp"]["jpserver_extensions"] == {
        "skiff.lab": True}
    (point,) = skiff.lab._jupyter_labextension_paths()
    assert (ROOT / "skiff" / "lab" / point["src"]) == BUILD and point["dest"] == BUILD.name
    assert skiff.lab._jupyter_server_extension_points() == [{"module": "skiff.lab"}]


def test_make_labs_config_enables_the_extension(tmp_path):
    subprocess.run([sys.executable, str(ROOT / "tools" / "lab_config.py"), str(tmp_path)],
                   check=True)
    server = json.loads((tmp_path / "jupyter" / "jupyter_server_config.d" / "skiff.json")
                        .read_text())
    assert server["ServerApp"]["jpserver_extensions"] == {"skiff.lab": True}
    lab = json.loads((tmp_path / "jupyter" / "jupyter_lab_config.json").read_text())
    assert lab["LabApp"]["extra_labextensions_path"] == [str(BUILD.parent)]


def test_importing_skiff_lab_loads_no_jupyter_and_its_handlers_no_kernel_side():
    code = ("import sys, skiff.lab; a = sorted(m for m in sys.modules if m.startswith("
            "('jupyter_server', 'tornado', 'IPython', 'ipywidgets')));"
            "import skiff.lab.handlers; b = sorted(m for m in sys.modules if m.startswith("
            "('IPython', 'ipywidgets', 'ipykernel', 'skiff.widgets', 'skiff.magics')));"
            "print(a, b)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout.strip()
    assert out == "[] []", out
