"""A train job loads the library that draws its ``loss.png`` before its first step (round 46
h11): loaded after the last step (1.4-2.9 s under load), that time was outside every ETA,
and a 1000-step mlp's ETA at 50% was 0.57-0.59x the time left (0.87-0.96x loaded first).

``python -m skiff train`` runs on a thread here; every ``import`` statement is recorded
(``builtins.__import__`` runs for each, whether the module was loaded before or not), and
so is the job's first step: the chart's modules must be imported before it."""

import builtins
import threading


def test_the_loss_chart_library_is_loaded_before_the_first_step(tmp_path, monkeypatch,
                                                                 capsys):
    from skiff.cli import main
    from skiff.jobs import reporter

    rows = [f"{i % 7 / 7:.3f},{(i * 3) % 5 / 5:.3f},{int(i % 7 > 3)}" for i in range(40)]
    (tmp_path / "t.csv").write_text("a,b,label\n" + "\n".join(rows) + "\n")
    seen, lock = [], threading.Lock()
    real_import, progress = builtins.__import__, reporter.RunReporter.progress

    def recorded(name, *args, **kwargs):
        if name in ("matplotlib.figure", "matplotlib.backends.backend_agg"):
            with lock:
                seen.append("chart")
        return real_import(name, *args, **kwargs)

    def first(self, done, *args, **kwargs):
        if done:
            with lock:
                seen.append("step")
        return progress(self, done, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", recorded)
    monkeypatch.setattr(reporter.RunReporter, "progress", first)
    monkeypatch.chdir(tmp_path)
    assert main(["train", "mlp", "t.csv", "--steps", "3", "--runner", "thread"]) == 0
    capsys.readouterr()
    assert "step" in seen and "chart" in seen[:seen.index("step")], seen
    assert list((tmp_path / "skiff-runs").glob("*/loss.png")) or \
        list(tmp_path.glob("**/loss.png"))  # still drawn
