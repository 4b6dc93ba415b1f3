"""Round 35 (h5): ``result.class_metrics`` names the classes a dataset carries.

``Trainer(...).train(ImageFolder("photos"))`` (skiff's, or any dataset with torchvision's
``classes`` list) reported per-class precision and recall for classes '0', '1' where
``python -m skiff train cnn photos/`` said 'cats', 'dogs'. The oracle: the validation
rows' labels counted per class index, against each named class's support."""

from __future__ import annotations

import numpy as np

import skiff


class _Named:  # what torchvision's ImageFolder / a user's dataset class carries
    classes = ["ham", "spam", "eggs"]

    def __init__(self):
        rng = np.random.default_rng(0)
        self.x = rng.standard_normal((90, 4)).astype(np.float32)
        self.y = np.argmax(self.x[:, :3], axis=1).astype(np.int64)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


def test_a_datasets_classes_name_the_report():
    skiff.seed(0)
    model = skiff.nn.Sequential(skiff.nn.Linear(4, 3))
    data = _Named()
    val = _Named()
    result = skiff.Trainer(model, batch_size=16, lr=0.05).train(data, epochs=2,
                                                               val_dataset=val)
    per = result.class_metrics["per_class"]
    assert per["class"] == ["ham", "spam", "eggs"]
    assert per["support"] == np.bincount(val.y, minlength=3).tolist()


def test_an_image_folders_classes(tmp_path):
    from PIL import Image

    from skiff.kernels.train.image_folder import ImageFolder

    rng = np.random.default_rng(1)
    for c, (name, n) in enumerate((("cats", 14), ("dogs", 8))):
        (tmp_path / name).mkdir()
        for i in range(n):
            a = (rng.random((12, 12, 3)) * 60).astype(np.uint8)
            a[..., c * 2] += 180
            Image.fromarray(a).save(tmp_path / name / f"{i}.png")
    folder = ImageFolder(tmp_path, size=12)
    skiff.seed(0)
    model = skiff.nn.Sequential(skiff.nn.Flatten(), skiff.nn.Linear(3 * 12 * 12, 2))
    result = skiff.Trainer(model, batch_size=8).train(folder, epochs=2, val_split=0.3)
    per = result.class_metrics["per_class"]
    assert per["class"] == ["cats", "dogs"] == folder.classes
    held = folder.labels[folder.held_out(0.3)[1].index]  # stratified (round 45): 4 and 3
    assert per["support"] == np.bincount(held, minlength=2).tolist()


def test_no_names_keeps_the_ids():
    skiff.seed(0)
    x = np.random.default_rng(2).standard_normal((40, 2)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    result = skiff.Trainer(skiff.nn.Sequential(skiff.nn.Linear(2, 2))).train(
        (x, y), epochs=1, val_split=0.25)
    assert result.class_metrics["per_class"]["class"] == ["0", "1"]
