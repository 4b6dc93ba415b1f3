"""Round 45 (h11): the confusion matrix was numbers only (``metrics.json``, predict's notes);
a scikit-learn user draws it with ``ConfusionMatrixDisplay``. :func:`confusion_png` draws it
so: true classes down, predicted across, each cell's count written, darker for more rows.
The oracle: the matrix counted here from the pairs, and the rendered pixels' darkness."""

import io

import numpy as np
from PIL import Image

from skiff.kernels.backend.figures import render_png
from skiff.kernels.train.class_metrics import confusion_figure, confusion_png


def test_the_confusion_matrix_is_drawn_true_down_predicted_across(tmp_path):
    truth = ["mid"] * 4 + ["neg"] * 11 + ["pos"] * 25
    pred = ["mid", "neg", "neg", "neg"] + ["neg"] * 11 + ["pos"] * 25
    classes = ["mid", "neg", "pos"]
    m = np.zeros((3, 3), int)
    for t, p in zip(truth, pred):
        m[classes.index(t), classes.index(p)] += 1
    fig = confusion_figure(classes, m)
    ax = fig.axes[0]
    np.testing.assert_array_equal(ax.images[0].get_array(), m)
    assert [t.get_text() for t in ax.get_xticklabels()] == classes
    assert [t.get_text() for t in ax.get_yticklabels()] == classes
    assert ax.get_xlabel() == "predicted class" and ax.get_ylabel() == "true class"
    written = {(round(t.get_position()[1]), round(t.get_position()[0])): t.get_text()
               for t in ax.texts}
    assert written == {(t, p): str(m[t, p]) for t in range(3) for p in range(3)}
    png = Image.open(io.BytesIO(render_png(fig))).convert("L")
    height = png.size[1]

    def shade(t, p):  # the grey level at the cell's centre, a little off the count's text
        x, y = ax.transData.transform((p + 0.3, t + 0.3))
        return png.getpixel((int(x), int(height - y)))

    assert shade(2, 2) < shade(1, 1) < shade(0, 1) < shade(0, 2)  # 25, 11, 3, 0 rows
    path = tmp_path / "confusion.png"
    assert confusion_png(classes, m, path) == path.read_bytes()
