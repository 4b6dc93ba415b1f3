"""Round 45 (h11): the confusion matrix drawn where a user looks: a job's run folder
(``confusion.png`` beside ``metrics.json`` and ``loss.png``) and a TrainResult shown in a
notebook. Needs h11's request 3 (``entry.py``'s ``_write_class_metrics`` and ``result.py``'s
``_repr_html_``); the drawing is tested in ``test_class_confusion_plot_r45h11.py``."""

from types import SimpleNamespace

from PIL import Image

from skiff.kernels.train import entry
from skiff.kernels.train.result import TrainResult

REPORT = {"f1": 0.76, "per_class": {"class": ["mid", "neg", "pos"], "precision": [1, .79, 1],
                                    "recall": [.25, 1, 1], "f1": [.4, .88, 1],
                                    "support": [4, 11, 25]},
          "confusion": [[1, 3, 0], [0, 11, 0], [0, 0, 25]]}


def test_a_job_writes_the_confusion_matrix_beside_its_metrics(tmp_path):
    shown = []
    reporter = SimpleNamespace(artifact=lambda name, path, kind: shown.append((name, kind)),
                               log=lambda line: None)
    result = SimpleNamespace(class_metrics=REPORT, best_step=None, steps=100)
    entry._write_class_metrics(result, {}, tmp_path, reporter)
    assert ("confusion matrix", "image") in shown
    image = Image.open(tmp_path / "confusion.png")
    assert image.format == "PNG" and min(image.size) > 100


def test_a_results_notebook_view_shows_the_matrix():
    result = TrainResult(steps=100, epochs=1.0, final_loss=0.3, class_metrics=REPORT)
    assert "alt='confusion matrix'" in result._repr_html_()
    assert "alt='confusion matrix'" not in TrainResult(steps=1, epochs=1.0,
                                                       final_loss=0.3)._repr_html_()
