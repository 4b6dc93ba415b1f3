"""``python -m skiff train gpt-moe --steps 2 --name m && python -m skiff generate m "Shall I"``:
the mixture-of-experts GPT a train job wrote continues a text from its name, as gpt-mini's
does; the answer is the job's own weights' greedy continuation."""

from __future__ import annotations

import json
import os

from skiff.cli import main


def _skiff(capsys, *args):
    """``python -m skiff ARGS`` in this process (``skiff.__main__`` is ``sys.exit(main())``):
    its exit status and what it printed; a subprocess each paid the interpreter's and torch's
    imports again (round 46)."""
    capsys.readouterr()
    status = main(list(args))
    out = capsys.readouterr()
    return status, out.out, out.err


def test_a_gpt_moe_job_continues_a_text_by_its_name(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SKIFF_RUNS", str(tmp_path / "runs"))
    status, out, err = _skiff(capsys, "train", "gpt-moe", "--steps", "2", "--name", "m",
                              "--device", "cpu", "--json")
    assert status == 0, err
    run_dir = json.loads(out)["job"]["run_dir"]
    status, out, err = _skiff(capsys, "generate", "m", "Shall I", "--max-new-tokens", "8",
                              "--temperature", "0", "--json")
    assert status == 0, err
    result = json.loads(out)["result"]
    assert result["model"] == "gpt-moe" and result["tokens"] == 8

    from skiff.kernels.train.entry import load_trained_model

    config = json.loads(open(os.path.join(run_dir, "config.json")).read())["config"]
    want = load_trained_model(run_dir, config).generate_text("Shall I", 8, temperature=0)
    assert "Shall I" + result["text"] == want
