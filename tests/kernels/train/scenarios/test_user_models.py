"""A user's CNN, BatchNorm modes, saving and loading weights, float64, sampling from a GPT."""

import numpy as np
import pytest

import skiff
from skiff import nn
from skiff.kernels.train.core import random as train_random


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.flat = nn.Flatten()
        self.fc = nn.Linear(8 * 4 * 4, 2)

    def forward(self, x):
        return self.fc(self.flat(self.pool(self.bn(self.conv(x)).relu())))


def _images(n=128, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3, 8, 8)).astype(np.float32)
    y = (x[:, 0].mean(axis=(1, 2)) > 0).astype(np.int64)
    x[:, 0] += np.where(y == 1, 0.5, -0.5)[:, None, None]  # make it learnable in a few epochs
    return x, y


def test_cnn_with_batchnorm_trains_and_predicts_in_eval_mode():
    x, y = _images()
    model = SmallCNN()
    trainer = skiff.Trainer(model, lr=1e-2, batch_size=32)
    result = trainer.train((x, y), epochs=4, val_dataset=(x, y))
    assert result.val_history[-1]["val_accuracy"] > 0.85
    assert model.training  # predict/evaluate leave the mode as they found it
    p1 = trainer.predict(x[:10])
    p2 = trainer.predict(x)[:10]  # eval mode: running stats, so a row's output is its own
    np.testing.assert_allclose(p1, p2, rtol=1e-5, atol=1e-6)
    # by hand, independent of the batch: running statistics of BatchNorm
    bn = model.bn
    h = model.conv(x[:10]).numpy()
    mean = bn.running_mean.numpy()[None, :, None, None]
    var = bn.running_var.numpy()[None, :, None, None]
    w = bn.weight.numpy()[None, :, None, None]
    b = bn.bias.numpy()[None, :, None, None]
    hb = np.maximum((h - mean) / np.sqrt(var + bn.eps) * w + b, 0)
    pooled = hb.reshape(10, 8, 4, 2, 4, 2).max(axis=(3, 5)).reshape(10, -1)
    ref = pooled @ model.fc.weight.numpy().T + model.fc.bias.numpy()
    np.testing.assert_allclose(p1, ref, rtol=1e-4, atol=1e-4)
    # model(x) on a numpy array works too (train mode: batch statistics)
    assert model(x[:4]).shape == (4, 2)


def test_weights_round_trip_through_npz_and_checkpoints(tmp_path):
    x, y = _images(64)
    model = SmallCNN()
    trainer = skiff.Trainer(model, lr=1e-2, batch_size=32, checkpoint_dir=tmp_path / "ck")
    result = trainer.train((x, y), steps=3)
    want = trainer.predict(x)

    np.savez(tmp_path / "w.npz", **model.state_dict())
    fresh = SmallCNN()
    fresh.load_state_dict(dict(np.load(tmp_path / "w.npz")))
    np.testing.assert_array_equal(skiff.Trainer(fresh).predict(x), want)

    for source in (tmp_path / "w.npz", str(result.checkpoint)):  # a path, or a checkpoint
        fresh = SmallCNN()
        fresh.load_state_dict(source)
        np.testing.assert_array_equal(skiff.Trainer(fresh).predict(x), want)
    with pytest.raises(FileNotFoundError, match="no weights file at"):
        SmallCNN().load_state_dict(str(tmp_path / "nope.npz"))


def test_float64_model_trains_in_float64():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((128, 3))
    y = x @ np.array([1.0, -2.0, 0.5])
    model = nn.Sequential(nn.Linear(3, 1)).double().to("cpu")
    assert all(p.dtype == np.float64 for p in model.parameters())
    trainer = skiff.Trainer(model, lr=0.05, batch_size=32, schedule="constant")
    trainer.train((x, y), epochs=30)
    pred = trainer.predict(x)
    assert pred.dtype == np.float64
    assert float(np.mean((pred[:, 0] - y) ** 2)) < 1e-3


def test_gpt_samples_text_from_a_string_prompt():
    from skiff.kernels.train.models import get

    train_random.seed(0)
    model = get("gpt-mini")
    text = model.generate("ROMEO:", 12, seed=1)
    assert isinstance(text, str) and text.startswith("ROMEO:")
    assert text == model.generate_text("ROMEO:", 12, seed=1)
    ids = model.generate(skiff.data.TextDataset.encode("ROMEO:")[None], 12, seed=1)
    assert skiff.data.TextDataset.decode(ids[0]) == text


def test_dropout_is_off_in_predict_and_evaluate():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 4)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    model = nn.Sequential(nn.Linear(4, 16), nn.Dropout(0.5), nn.ReLU(), nn.Linear(16, 2))
    trainer = skiff.Trainer(model, lr=1e-2, batch_size=16)
    trainer.train((x, y), epochs=2)
    a, b = trainer.predict(x), trainer.predict(x)
    np.testing.assert_array_equal(a, b)
    w1, b1 = model[0].weight.numpy(), model[0].bias.numpy()
    w2, b2 = model[3].weight.numpy(), model[3].bias.numpy()
    ref = np.maximum(x @ w1.T + b1, 0) @ w2.T + b2  # no dropout, no rescaling
    np.testing.assert_allclose(a, ref, rtol=1e-5, atol=1e-5)
    assert model.training
    assert not np.allclose(model(x).numpy(), ref, atol=1e-3)  # train mode: dropout is on


def test_channels_last_images_get_the_transpose_hint():
    rng = np.random.default_rng(0)
    nhwc = rng.standard_normal((4, 8, 8, 3)).astype(np.float32)
    with pytest.raises(ValueError, match=r"has 8 channels.*expects 3; images channels-last "
                                         r"\(N, H, W, C\)\? use X.transpose\(0, 3, 1, 2\)"):
        SmallCNN()(nhwc)
    cnn = skiff.models.CNN(in_channels=3, num_classes=2, image_size=8)
    with pytest.raises(ValueError, match=r"CNN expects inputs of shape \(B, 3, 8, 8\), got "
                                         r"\(4, 8, 8, 3\); channels-last"):
        cnn(nhwc)
    assert cnn(nhwc.transpose(0, 3, 1, 2)).shape == (4, 2)
