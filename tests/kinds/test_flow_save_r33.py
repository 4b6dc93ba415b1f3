"""`solve train-nose ... --save nose.vtu` writes the flow for ParaView (round 33: the flow
kernels gained `save`, the front still refused `--save` for the flow problems). The oracle:
the written VTK XML file itself (an unstructured grid with the velocity and pressure arrays
the flow has) and, for a wrong suffix, one line naming what --save writes."""

import json
import os
import xml.etree.ElementTree as ET

import pytest


def test_nose_flow_saved_for_paraview(tmp_path, runs_dir, monkeypatch, capsys):
    # ``python -m skiff`` in this process, from tmp_path (``skiff.__main__`` is
    # ``sys.exit(main())``): a subprocess paid the interpreter's imports again (round 46)
    from skiff.cli import main

    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    status = main(["solve", "train-nose", "--clearance", "0.3", "--re", "100", "--adapt",
                   "graded", "--resolution", "14", "--save", "nose.vtu", "--json"])
    out = capsys.readouterr()
    assert status == 0, out.err[-2000:]
    doc = json.loads(out.out)
    assert doc["job"]["status"] == "done"
    path = tmp_path / "nose.vtu"
    assert path.is_file()
    root = ET.parse(path).getroot()
    assert root.get("type") == "UnstructuredGrid"
    names = {a.get("Name") for a in root.iter("DataArray")}
    assert {"velocity", "pressure"} <= {n.lower() for n in names if n}, names


def test_flow_save_suffix_refused_in_one_line():
    from skiff.kinds.solve import to_config

    with pytest.raises(ValueError, match=r"--save writes \.vtu or \.vtk"):
        to_config({"problem": "cylinder", "save": "flow.png"})
    config = to_config({"problem": "cylinder", "save": "flow.vtu"})
    assert os.path.isabs(config["save"]) and config["save"].endswith("flow.vtu")
