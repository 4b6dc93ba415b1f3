"""%ocr VAR where VAR holds a string: refused before any job as a mistyped path on the line
is, naming the variable (it used to run a job that ended "no such file: 'text'")."""
import pytest

from skiff.kinds.ocr import KIND


def _values(*inputs):
    return {"inputs": list(inputs)}


def test_a_string_that_is_no_file_is_refused_naming_the_variable(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError) as info:
        KIND.prepare(_values("s"), user_ns={"s": "text"})
    assert "variable 's'" in str(info.value) and "'text'" in str(info.value)
    assert "no such file" in str(info.value)
    # in a list too, and a folder is named as one
    (tmp_path / "scans").mkdir()
    with pytest.raises(FileNotFoundError, match="variable 'pages'.*'scans', a folder"):
        KIND.prepare(_values("pages"), user_ns={"pages": ["scans"]})
    # the same refusal as a path on the line
    with pytest.raises(FileNotFoundError, match="no such file"):
        KIND.prepare(_values("nofile.png"), user_ns={})


def test_a_string_naming_a_file_still_makes_a_job(tmp_path, monkeypatch):
    from PIL import Image

    monkeypatch.chdir(tmp_path)
    Image.new("L", (20, 10), 255).save(tmp_path / "a.png")
    request = KIND.prepare(_values("s"), user_ns={"s": "a.png", "t": tmp_path / "a.png"})
    assert request.config["inputs"] == ["<variable s>"]
    assert KIND.prepare(_values("t"), user_ns={"t": tmp_path / "a.png"}).config["inputs"] \
        == ["<variable t>"]
