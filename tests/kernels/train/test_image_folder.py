"""A folder of class folders of images as a training set (image_folder.py), the ``cnn`` job
on it from a terminal and ``predict`` on new images (image_predict.py)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from PIL import Image, ImageDraw

from skiff.kernels.train.image_folder import ImageFolder, ImageFolderError, load_image


def _shapes(root, n=40, grey=False, seed=0):
    """Circles, squares and triangles of random colours and sizes on a dark ground."""
    rng = np.random.default_rng(seed)
    for cls in ("circle", "square", "triangle"):
        (root / cls).mkdir(parents=True, exist_ok=True)
        for i in range(n):
            w, h = (int(v) for v in rng.integers(40, 100, 2))
            im = Image.new("RGB", (w, h), tuple(int(v) for v in rng.integers(0, 60, 3)))
            d = ImageDraw.Draw(im)
            s = min(w, h) * rng.uniform(0.5, 0.8)
            cx, cy = w / 2, h / 2
            col = tuple(int(v) for v in rng.integers(160, 256, 3))
            box = [cx - s / 2, cy - s / 2, cx + s / 2, cy + s / 2]
            if cls == "circle":
                d.ellipse(box, fill=col)
            elif cls == "square":
                d.rectangle(box, fill=col)
            else:
                d.polygon([(cx, cy - s / 2), (cx - s / 2, cy + s / 2), (cx + s / 2, cy + s / 2)],
                          fill=col)
            if grey:
                im = im.convert("L")
            im.save(root / cls / f"{i}.{'png' if i % 2 else 'jpg'}")
    return root


def test_the_folder_is_read_shuffled_standardised_and_what_was_left_out_said(tmp_path):
    root = _shapes(tmp_path / "shapes", n=20)
    (root / "square" / "broken.png").write_text("not a png")
    (root / "circle" / "readme.txt").write_text("no image suffix: not counted")
    seen = []
    data = ImageFolder(root, size=16, seed=1, progress=lambda done, total: seen.append(
        (done, total)))
    assert data.classes == ["circle", "square", "triangle"] and data.channels == 3
    assert 10 <= len(seen) <= 25 and seen[-1] == (61, 61)  # reading said how far it was
    assert len(data) == 60 and data.images.shape == (60, 3, 16, 16)
    assert np.bincount(data.labels).tolist() == [20, 20, 20]
    assert len(set(data.labels[-6:].tolist())) > 1  # a held-out tail samples the classes
    x, y = data.take(np.arange(60))
    assert x.dtype == np.float32 and y.dtype == np.int64
    np.testing.assert_allclose(x.mean(axis=(0, 2, 3)), 0, atol=1e-4)
    np.testing.assert_allclose(x.std(axis=(0, 2, 3)), 1, atol=1e-3)
    assert any("1 file that is no image left out (the first: square/broken.png)" in n
               for n in data.notes)
    grey = ImageFolder(_shapes(tmp_path / "grey", n=4, grey=True), size=8)
    assert grey.channels == 1 and grey.images.shape[1] == 1


def test_an_image_is_cut_to_its_centred_square():
    im = Image.new("L", (120, 40), 0)
    ImageDraw.Draw(im).rectangle([55, 15, 64, 24], fill=255)  # a dot in the middle
    im.paste(255, (0, 0, 30, 40))  # a bar at the left edge, outside the centred square
    path = "/tmp/skiff-test-centre.png"
    im.save(path)
    try:
        a = load_image(path, 8, 1)
    finally:
        os.remove(path)
    assert a.shape == (1, 8, 8)
    assert a[0, 3:5, 3:5].min() > 150 and a[0, :, 0].max() < 50  # the dot kept, the bar cut


@pytest.mark.parametrize("make,needle", [
    (lambda r: None, "no class folders with images"),
    (lambda r: Image.new("RGB", (9, 9)).save(r / "loose.png"), "images lie in it directly"),
    (lambda r: (r / "only").mkdir() or Image.new("RGB", (9, 9)).save(r / "only" / "a.png"),
     "1 class folder with images"),
])
def test_a_folder_that_is_no_training_set_says_what_it_holds(tmp_path, make, needle):
    root = tmp_path / "photos"
    root.mkdir()
    make(root)
    with pytest.raises(ImageFolderError, match=needle):
        ImageFolder(root)
    with pytest.raises(ImageFolderError, match="multiple of 4"):
        ImageFolder(_shapes(tmp_path / "ok", n=2), size=30)


def _skiff(*args, env):
    """``python -m skiff ARGS`` in this process (round 41 h9: an interpreter each was ~2 CPU
    s of imports; the job runs in a thread of this one, ``--json`` waits for it)."""
    from types import SimpleNamespace

    from skiff.cli import main

    capsys, monkeypatch = env
    monkeypatch.setenv("SKIFF_RUNS", str(monkeypatch.runs))
    capsys.readouterr()
    try:
        code = main([str(a) for a in args])
    except SystemExit as exc:  # argparse's refusal
        code = exc.code
    out = capsys.readouterr()
    return SimpleNamespace(returncode=code, stdout=out.out, stderr=out.err)


@pytest.fixture
def cli(capsys, monkeypatch, tmp_path):
    monkeypatch.runs = tmp_path / "runs"
    return capsys, monkeypatch


def test_cnn_trains_on_the_folder_and_predicts_new_images(tmp_path, cli):
    root = _shapes(tmp_path / "photos", n=40)
    env = cli
    out = _skiff("train", "cnn", str(root), "--epochs", "15", "--lr", "3e-3", "--image-size",
                 "16", "--json", env=env)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    run_dir, result = doc["job"]["run_dir"], doc["result"]
    assert result["val_history"][-1]["val_accuracy"] > 0.8, result["val_history"]
    assert any("120 images of 3 classes" in n for n in result["notes"])
    meta = json.load(open(os.path.join(run_dir, "images.json")))
    assert meta["classes"] == ["circle", "square", "triangle"] and meta["size"] == 16
    new = _shapes(tmp_path / "new", n=10, seed=9)  # images it never saw, in class folders
    pred = _skiff("predict", run_dir, str(new), "--json", env=env)
    assert pred.returncode == 0, pred.stderr
    got = json.loads(pred.stdout)
    assert got["score"]["accuracy"] > 0.8 and got["score"]["rows"] == 30
    one = _skiff("predict", run_dir, str(new / "square" / "3.png"), env=env)
    assert one.returncode == 0 and one.stdout.splitlines()[1].startswith("3.png,"), one.stdout


@pytest.mark.parametrize("line,needle", [
    ("mlp {root}", "a folder of class folders of images trains cnn"),
    ("cnn {empty}", "a folder without class folders of images"),
    ("cnn {root} --image-size 30", "--image-size must be a multiple of 4"),
    ("mlp blobs --image-size 16", "--image-size is for cnn on a folder"),
])
def test_image_folder_mistakes_are_said_before_any_job(tmp_path, line, needle):
    from skiff.kinds.train import COMMAND, to_config

    root = _shapes(tmp_path / "photos", n=2)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match=needle):
        to_config(vars(COMMAND.parse(line.format(root=root, empty=tmp_path / "empty"))))


def test_the_trainer_takes_an_image_folder_in_a_notebook(tmp_path):
    from skiff.kernels.train.models.cnn import CNN
    from skiff.kernels.train.trainer import Trainer

    data = ImageFolder(_shapes(tmp_path / "photos", n=12), size=16)
    trainer = Trainer(CNN(in_channels=3, num_classes=3, image_size=16), batch_size=8)
    result = trainer.train(data, epochs=1, val_split=0.25)
    assert result.steps == 4 and "val_accuracy" in result.val_history[-1]


def test_new_images_are_read_like_the_trained_set(tmp_path):
    train = ImageFolder(_shapes(tmp_path / "photos", n=6), size=16)
    new_root = tmp_path / "new"
    _shapes(new_root, n=3, seed=5)
    import shutil

    shutil.rmtree(new_root / "circle")  # two of the three classes
    new = ImageFolder(new_root, like=train)
    assert new.classes == train.classes and new.size == 16 and new.channels == 3
    np.testing.assert_array_equal(new.mean, train.mean)
    assert set(new.labels.tolist()) == {1, 2}  # square and triangle keep their numbers
    meta = tmp_path / "images.json"
    meta.write_text(json.dumps(train.to_json()))
    assert ImageFolder(new_root, like=meta).labels.tolist() == new.labels.tolist()
    (new_root / "hexagon").mkdir()
    Image.new("RGB", (9, 9)).save(new_root / "hexagon" / "a.png")
    with pytest.raises(ImageFolderError, match="'hexagon' not among the trained classes"):
        ImageFolder(new_root, like=train)


def test_augmented_batches_are_mirrored_and_shifted_copies_and_validation_is_not(tmp_path):
    from skiff.kernels.train.image_folder import augment

    rng = np.random.default_rng(6)
    x = rng.standard_normal((12, 3, 16, 16)).astype(np.float32)
    out = augment(x, np.random.default_rng(0))
    s = 2  # an eighth of 16
    seen = set()
    for k in range(12):
        matches = []
        for flip in (False, True):
            src = x[k][..., ::-1] if flip else x[k]
            padded = np.pad(src, ((0, 0), (s, s), (s, s)), mode="reflect")
            matches += [(flip, dy, dx) for dy in range(2 * s + 1) for dx in range(2 * s + 1)
                        if np.array_equal(padded[:, dy:dy + 16, dx:dx + 16], out[k])]
        assert matches, k  # each image is one mirrored-or-not shifted copy of its input
        seen.add(matches[0][0])
    assert seen == {False, True}  # both ways happen
    data = ImageFolder(_shapes(tmp_path / "photos", n=10), size=16)
    train, val = data.held_out(0.2, augment=True)
    assert len(train) == 24 and len(val) == 6
    # the held-out images: each class's last in the shuffled order (stratified, round 45)
    assert sorted([*train.index, *val.index]) == list(range(30))
    xv, _ = val.take(np.arange(6))
    np.testing.assert_array_equal(xv, data.take(val.index)[0])  # never augmented
    xt, yt = train.take(np.arange(24))
    assert not np.array_equal(xt, data.take(train.index)[0])
    np.testing.assert_array_equal(yt, data.labels[train.index])


def test_cnn_trains_with_augmentation_from_a_terminal(tmp_path, cli):
    root = _shapes(tmp_path / "photos", n=40)
    env = cli
    out = _skiff("train", "cnn", str(root), "--epochs", "20", "--lr", "3e-3", "--image-size",
                 "16", "--augment", "--json", env=env)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)["result"]
    assert result["val_history"][-1]["val_accuracy"] > 0.7, result["val_history"][-1]
    assert any("mirrored and shifted at random" in n for n in result["notes"])
    bad = _skiff("train", "mlp", "blobs", "--augment", env=env)
    assert bad.returncode == 2 and "--augment is for cnn on a folder" in bad.stderr


def test_a_set_too_large_for_memory_is_refused_before_reading(tmp_path, monkeypatch):
    from skiff.kernels.train import image_folder

    monkeypatch.setattr(image_folder, "MAX_BYTES", 100_000)
    with pytest.raises(ImageFolderError, match=r"would hold .* a smaller --image-size \(32 fits\)"):
        ImageFolder(_shapes(tmp_path / "photos", n=10), size=64)


def test_predict_on_files_none_of_which_is_an_image_is_a_mistake(tmp_path):
    """``predict JOB broken.png`` (or a folder of such files) printed a header, no rows, and
    exited 0; now it is one line (exit 2 from the command)."""
    from skiff.kernels.train import models
    from skiff.kernels.train.image_predict import predict_images

    run = tmp_path / "run"
    run.mkdir()
    models.get("cnn", in_channels=1, num_classes=2, image_size=16).save(str(run / "model.npz"))
    (run / "images.json").write_text(json.dumps({"classes": ["a", "b"], "size": 16,
                                                 "channels": 1, "mean": [0.5], "std": [0.2]}))
    (tmp_path / "broken.png").write_bytes(b"\x89PNG not really")
    with pytest.raises(ImageFolderError, match=r"^broken.png is no image skiff can read \("):
        predict_images(run, tmp_path / "broken.png")
    (tmp_path / "bad").mkdir()
    for k in range(3):
        (tmp_path / "bad" / f"{k}.jpg").write_bytes(b"nope")
    with pytest.raises(ImageFolderError, match=r"bad: none of its 3 files is an image"):
        predict_images(run, tmp_path / "bad")
    Image.new("L", (20, 20), 200).save(tmp_path / "bad" / "ok.png")  # one good: predicted
    got = predict_images(run, tmp_path / "bad")
    assert got.files == ["ok.png"] and "3 files that are no image left out" in got.notes[0]
