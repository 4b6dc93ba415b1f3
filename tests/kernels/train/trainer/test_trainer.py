"""The Trainer: three lines, losses, accumulation, reproducibility, exact resume, NaN stop,
validation, reporting, and bad input with messages that say what is wrong."""

from __future__ import annotations

import json

import numpy as np
import pytest

from skiff.jobs.reporter import Reporter
from skiff.kernels.train import models
from skiff.kernels.train.checkpoint import list_checkpoints, load_checkpoint
from skiff.kernels.train.core import random as train_random
from skiff.kernels.train.data import ArrayDataset, TextDataset, make_blobs, make_shapes
from skiff.kernels.train.models import GPT, MLP, GPTConfig
from skiff.kernels.train.result import TrainResult
from skiff.kernels.train.trainer import Trainer, TrainingDiverged


class Recorder(Reporter):
    """Keeps what the trainer reports; asks to stop after ``stop_after`` progress calls."""

    def __init__(self, stop_after=None):
        self.metrics, self.logs, self.infos, self.progress_calls = [], [], [], []
        self.stop_after = stop_after

    def progress(self, done, total=None, *, unit="step", message=None):
        self.progress_calls.append((done, total))

    def metric(self, name, value, *, step=None):
        self.metrics.append((name, value, step))

    def log(self, message, *, level="info"):
        self.logs.append((level, message))

    def info(self, **fields):
        self.infos.append(fields)

    def should_stop(self):
        return self.stop_after is not None and self.progress_calls and \
            self.progress_calls[-1][0] >= self.stop_after


def _mlp(seed=0, dtype=None):
    train_random.seed(seed)
    m = MLP(2, 4, (16,))
    return m.to(dtype=dtype) if dtype else m


def _weights(model):
    return {k: v.copy() for k, v in model.state_dict().items()}


def test_three_lines_train_and_report():
    rep = Recorder()
    data = make_blobs(256)
    model = _mlp()
    trainer = Trainer(model, strategy="auto", lr=1e-2, batch_size=32, reporter=rep)
    result = trainer.train(data, epochs=3)
    assert isinstance(result, TrainResult) and result.steps == 24
    assert result.losses[-1] < 0.5 * result.losses[0]
    assert result.strategy["strategy"] == "single" and result.strategy["reasons"]
    names = {m[0] for m in rep.metrics}
    assert {"loss", "lr", "samples_per_s", "memory_bytes", "grad_norm"} <= names
    assert rep.progress_calls[-1] == (24, 24)
    assert any("plan" in i for i in rep.infos)
    # the plan's one-line summary is the first plan line of the log (round 30)
    plan_lines = [m for _, m in rep.logs if m.startswith("plan: ")]
    assert plan_lines[0] == f"plan: {trainer.plan['summary']}"
    assert plan_lines[0].startswith("plan: single") and "per device" in plan_lines[0]
    assert result.samples_per_s > 0 and result.peak_memory_bytes > 0
    # the planner's step time and memory, recorded next to the measured ones, by hand: the
    # MLP 2 -> 16 -> 4 has 2*16 + 16 + 16*4 + 4 = 116 parameters, fp32, AdamW (2 moments)
    est = trainer.plan["estimate"]
    mem = est["memory"]
    assert (mem["params"], mem["grads"], mem["optimizer"]) == (116 * 4, 116 * 4, 116 * 8)
    # one "layer" of width 3 (planner's view of an MLP), 1 token a row, the 32 rows the
    # Trainer runs at once (it cuts micro-batches only in a pipeline; round 30: it costed
    # one row): 3 * (10 + 24 + 5/3) * 4 / 2 bytes kept for backward, + 1 fp32 logit, a row
    assert mem["activations"] == round(32 * (3 * (10 + 24 + 5 / 3) * 4 / 2 + 4)) == 6976
    assert result.predicted["peak_memory_bytes"]["predicted"] == 464 + 464 + 928 + 6976
    # time: (6 * 116 + 12 * 3) flops per token x 32 tokens at the measured flop rate, then
    # AdamW reading and writing 116 * (4 + 4 + 2 * 8) bytes at 10 GB/s
    flops = trainer.plan["cluster"]["flops"]
    assert est["time"]["optimizer"] == pytest.approx(116 * 24 / 10e9, rel=1e-12)
    assert result.predicted["step_time_s"]["predicted"] == pytest.approx(
        (6 * 116 + 12 * 3) * 32 / flops + 116 * 24 / 10e9, rel=1e-12)
    assert result.predicted["step_time_s"]["measured"] == result.step_time_s > 0
    assert any("predicted_vs_measured" in i for i in rep.infos)
    doc = json.loads(json.dumps(result.to_json()))
    assert doc["steps"] == 24 and len(doc["history"]) == 24
    assert "data:image/png;base64," in result._repr_html_()
    # accuracy on the training blobs is high: the model really learned
    acc = trainer.evaluate(data)["val_accuracy"]
    assert acc > 0.9


def test_text_tokens_per_second_and_validation_each_epoch():
    rep = Recorder()
    train_random.seed(0)
    model = GPT(GPTConfig(block_size=16, n_layer=1, n_head=2, n_embd=16))
    ds = TextDataset("sonnets", block_size=16)
    train, val = TextDataset(ds.text[:3000], 16), TextDataset(ds.text[3000:3600], 16)
    result = Trainer(model, lr=3e-3, batch_size=32, reporter=rep).train(
        train, epochs=2, val_dataset=val)
    assert result.tokens_per_s > 0
    assert [v["epoch"] for v in result.val_history] == [1, 2]
    assert all("val_loss" in v for v in result.val_history)
    assert any(m[0] == "val_loss" for m in rep.metrics)


def test_same_seed_same_weights_other_seed_other_weights():
    data = make_blobs(128)
    runs = []
    for seed in (0, 0, 1):
        m = _mlp()
        Trainer(m, lr=1e-2, batch_size=16, seed=seed).train(data, steps=6)
        runs.append(_weights(m))
    assert all(np.array_equal(runs[0][k], runs[1][k]) for k in runs[0])
    assert not all(np.array_equal(runs[0][k], runs[2][k]) for k in runs[0])


def test_gradient_accumulation_equals_the_big_batch():
    data = make_blobs(64)
    a, b = _mlp(dtype="float64"), _mlp(dtype="float64")
    Trainer(a, lr=1e-2, batch_size=16, grad_accum=2, schedule="constant").train(data, steps=1)
    Trainer(b, lr=1e-2, batch_size=32, schedule="constant").train(data, steps=1)
    wa, wb = _weights(a), _weights(b)
    for k in wa:
        np.testing.assert_allclose(wa[k], wb[k], rtol=0, atol=1e-12)


def test_interrupted_and_resumed_run_ends_bit_identical(tmp_path):
    """float64 GPT with dropout, cosine schedule, accumulation: stop at step 4, resume."""
    text = TextDataset("sonnets", block_size=8).text[:2000]
    ds = TextDataset(text, block_size=8)

    def make():
        train_random.seed(3)
        return GPT(GPTConfig(block_size=8, n_layer=1, n_head=2, n_embd=8,
                             dropout=0.1)).to(dtype="float64")

    kw = dict(lr=3e-3, batch_size=4, grad_accum=2, seed=5, warmup_steps=2)
    ref = make()
    Trainer(ref, **kw).train(ds, steps=10)

    part = make()
    r1 = Trainer(part, checkpoint_dir=tmp_path, checkpoint_every=3, reporter=Recorder(4),
                 **kw).train(ds, steps=10)
    assert r1.steps == 4 and r1.stopped == "cancelled"
    assert [p.name for p in list_checkpoints(tmp_path)][-1] == "step-00000004.npz"
    resumed = make()
    r2 = Trainer(resumed, checkpoint_dir=tmp_path, resume=True, **kw).train(ds, steps=10)
    assert r2.steps == 10 and len(r2.history) == 10
    wr, wz = _weights(ref), _weights(resumed)
    for k in wr:
        assert np.array_equal(wr[k], wz[k]), k


def test_nan_loss_stops_naming_the_step_and_keeps_the_last_good_checkpoint(tmp_path):
    x = np.random.default_rng(0).standard_normal((40, 2))

    class Lazy:  # a dataset read row by row (an ArrayDataset refuses NaN at once)
        def __len__(self):
            return 40

        def __getitem__(self, i):  # row 25 lands in batch 4 (items 24..31) with shuffle=False
            return (np.full(2, np.nan) if i == 25 else x[i]), np.int64(0)

    ds = Lazy()
    model = _mlp(dtype="float64")
    trainer = Trainer(model, batch_size=8, shuffle=False, checkpoint_dir=tmp_path,
                      checkpoint_every=1)
    with pytest.raises(TrainingDiverged, match=r"step 4.*step-00000003\.npz"):
        trainer.train(ds, epochs=1)
    last = list_checkpoints(tmp_path)[-1]
    assert last.name == "step-00000003.npz"
    saved = load_checkpoint(last)["model"]
    for k, v in model.state_dict().items():  # the model was not touched by the bad step
        assert np.isfinite(v).all() and np.array_equal(saved[k], v)


def test_loss_override_and_mse_for_float_targets():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 3)).astype("f4")
    y = (x @ np.array([[1.0], [-2.0], [0.5]], dtype="f4"))
    train_random.seed(0)
    m = MLP(3, 1, (8,))
    r = Trainer(m, lr=3e-2, batch_size=16).train(ArrayDataset(x, y), epochs=20)
    assert r.losses[-1] < 0.2 * r.losses[0]
    calls = []

    def l1(out, target):
        calls.append(1)
        return (out - target).abs().mean()

    Trainer(m, lr=1e-2, batch_size=16, loss=l1).train(ArrayDataset(x, y), steps=2)
    assert len(calls) == 2


def test_the_default_rate_fits_a_users_module_and_a_model_keeps_its_own():
    """Three lines with no rate given: a user's module gets Adam's usual 1e-3 and fits a
    linear target (3e-4, the old default, left R^2 at about 0.2 after the same 20 epochs
    of warm-up and cosine decay); a model that carries its rate (gpt-mini) keeps it."""
    from skiff import nn

    rng = np.random.default_rng(0)
    x = rng.standard_normal((2000, 10)).astype("f4")
    y = (x @ rng.standard_normal((10, 1))).astype("f4")
    train_random.seed(0)
    model = nn.Sequential(nn.Linear(10, 1))
    trainer = Trainer(model)
    assert trainer.lr == 1e-3
    trainer.train((x, y), epochs=20)
    pred = trainer.predict(x)
    r2 = 1 - float(((pred - y) ** 2).mean() / y.var())
    assert r2 > 0.6, r2
    gpt = GPT(GPTConfig(vocab_size=16, block_size=8, n_layer=1, n_head=1, n_embd=8, lr=5e-4))
    assert Trainer(gpt).lr == 5e-4


def test_cnn_learns_shapes():
    """Learning, not a lucky last batch: held-out accuracy well above chance (4 classes, 0.25;
    0.73 measured) and the last steps' mean loss well below chance's ln 4 (0.66 measured)."""
    from skiff.kernels.train.core.tensor import Tensor, no_grad

    train_random.seed(0)
    model = models.get("cnn")
    r = Trainer(model, lr=1e-2, batch_size=32).train(make_shapes(256), epochs=5)
    assert np.mean(r.losses[-4:]) < 0.6 * np.log(4)
    images, labels = make_shapes(256, seed=1).arrays  # shapes the model never saw
    with no_grad():
        predicted = model(Tensor(images)).numpy().argmax(1)
    assert (predicted == labels).mean() > 0.6


# bad input ---------------------------------------------------------------------------------
def test_shape_mismatch_shows_both_shapes():
    ds = ArrayDataset(np.zeros((8, 2), "f4"), np.zeros((8, 3), "i8"))
    with pytest.raises(ValueError, match=r"\(4, 4\).*\(4, 3\)"):
        Trainer(_mlp(), batch_size=4).train(ds, steps=1)
    ds = ArrayDataset(np.zeros((8, 2), "f4"), np.zeros((8, 2), "f4"))
    with pytest.raises(ValueError, match=r"\(4, 4\).*\(4, 2\)"):
        Trainer(_mlp(), batch_size=4).train(ds, steps=1)


@pytest.mark.parametrize("targets, loss, match", [
    (np.array(["a"] * 8), "auto", "dtype <U1"),
    (np.zeros(8, "c8"), "auto", "dtype complex64"),  # (bool labels are class ids 0/1)
    (np.zeros(8, "f4"), "cross_entropy", "integer class-id targets, got dtype float32"),
    (np.full(8, 7, "i8"), "auto", r"\[0, 4\).*got 7"),
])
def test_wrong_targets_are_named(targets, loss, match):
    ds = ArrayDataset(np.zeros((8, 2), "f4"), targets)
    with pytest.raises((TypeError, ValueError), match=match):
        Trainer(_mlp(), batch_size=4, loss=loss).train(ds, steps=1)


def test_empty_dataset_and_unknown_model():
    with pytest.raises(ValueError, match="empty"):
        Trainer(_mlp()).train(ArrayDataset(np.zeros((0, 2)), np.zeros(0, "i8")), epochs=1)
    with pytest.raises(ValueError, match="gpt-huge.*mlp, cnn, gpt-mini, gpt-small"):
        models.get("gpt-huge")
    with pytest.raises(ValueError, match="epochs or steps"):
        Trainer(_mlp()).train(make_blobs(8), epochs=1, steps=1)
    with pytest.raises(ValueError, match="batch_size.*0"):
        Trainer(_mlp(), batch_size=0)


@pytest.mark.gpu
def test_gpt_trains_on_the_gpu_as_on_the_cpu():
    ds = TextDataset(TextDataset("sonnets", 16).text[:3000], block_size=16)
    results = {}
    for device in ("cpu", "cuda"):
        train_random.seed(0)
        model = GPT(GPTConfig(block_size=16, n_layer=1, n_head=2, n_embd=32))
        results[device] = Trainer(model, lr=3e-3, batch_size=8, device=device).train(
            ds, steps=5)
        sample = model.generate(np.array([[72, 101]]), 5, temperature=0)
        assert sample.shape == (1, 7)
        results[device + "_sample"] = sample
    np.testing.assert_allclose(results["cuda"].losses, results["cpu"].losses, rtol=1e-3)


def test_gpt_trains_on_packed_batches():
    train_random.seed(0)
    model = GPT(GPTConfig(block_size=32, n_layer=1, n_head=2, n_embd=32))
    ds = TextDataset(TextDataset("sonnets", 32).text[:4000], block_size=32, packed=True)
    result = Trainer(model, lr=3e-3, batch_size=8).train(ds, steps=12)
    assert result.losses[-1] < result.losses[0] - 0.5
    assert result.tokens_per_s > 0 and result.samples_per_s > 0


@pytest.mark.parametrize("kwargs,needle", [
    ({"lr": 0.1}, r"lr is a setting of the Trainer, given when it is made: "
                  r"Trainer\(model, lr=0.1\)"),
    ({"batch_size": 8}, "batch_size is a setting of the Trainer"),
    ({"epoch": 2}, "unexpected keyword argument 'epoch' \\(did you mean 'epochs'\\?\\)"),
    ({"validation_split": 0.2}, "did you mean 'val_split'"),
])
def test_a_setting_given_to_train_says_where_it_goes(kwargs, needle):
    """`trainer.train(data, lr=0.1)` was Python's bare "unexpected keyword argument" (round 22)."""
    import numpy as np

    from skiff.kernels.train.core.nn import Linear
    from skiff.kernels.train.trainer import Trainer

    x = np.zeros((8, 3), np.float32)
    y = np.zeros(8, np.int64)
    with pytest.raises(TypeError, match=needle):
        Trainer(Linear(3, 2)).train((x, y), **kwargs)
