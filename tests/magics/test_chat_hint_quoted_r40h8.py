"""The notebook form of chat's hint on a gpt-* job runs as written where the run folder's
path has a space (the magic splits its line as a shell does)."""
import re
import shlex

from IPython.core.interactiveshell import InteractiveShell

from skiff.cli import main


def test_the_notebook_hint_runs_with_a_space_in_the_path(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SKIFF_RUNS", str(tmp_path / "runs dir"))
    monkeypatch.setenv("SKIFF_SECRET_FILE", str(tmp_path / "secret"))
    (tmp_path / "notes.txt").write_text("the model learns from notes. " * 200)
    assert main(["train", "gpt-mini", str(tmp_path / "notes.txt"), "--steps", "2",
                 "--name", "notes", "--device", "cpu"]) == 0
    capsys.readouterr()
    assert main(["chat", "notes", "hi"]) == 2
    err = capsys.readouterr().err
    line = re.search(r'\((%generate .+ "text") in a notebook', err).group(1)
    words = shlex.split(line)
    assert len(words) == 3 and " " in words[1], words   # the folder is one word
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    job = ip.run_line_magic("generate", line[len("%generate "):].replace('"text"', '"the"')
                            + " --max-new-tokens 3 --wait")
    assert job.status == "done"
