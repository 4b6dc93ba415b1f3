"""Round 35 (h8): ``train ocr-rec --weight-decay X`` reaches the fine-tune's AdamW
(``FineTuneConfig.weight_decay``, 1e-4 by default, was reachable from Python only; the
front refused ``--weight-decay`` for ocr-rec as "not an option", where every other model
takes it). The oracle: the fine-tune's own optimizer, built by ``RecTrainer.train`` from
the config the job's entry makes, holds X; left out, the fine-tune's default."""

from __future__ import annotations

import random

import pytest

from skiff.jobs.launch import dry_run
from skiff.kernels.ocr_train.entry import config_from
from skiff.kernels.ocr_train.finetune import FineTuneConfig


def _labels(tmp_path, n=8):
    path = tmp_path / "labels.txt"
    path.write_text("".join(f"crop{i}.png\tword {i}\n" for i in range(n)))
    return path


@pytest.mark.parametrize("front", ["cli", "magic"])
def test_weight_decay_reaches_the_fine_tune(runs_dir, tmp_path, front):
    labels = _labels(tmp_path)
    config = dry_run("train", f"ocr-rec --data {labels} --weight-decay 0.05",
                     front=front)["config"]
    assert config_from(config, tmp_path).weight_decay == 0.05
    config = dry_run("train", f"ocr-rec --data {labels}", front=front)["config"]
    assert "weight_decay" not in config
    assert config_from(config, tmp_path).weight_decay == FineTuneConfig.weight_decay == 1e-4


def test_the_optimizer_the_fine_tune_builds(tmp_path, monkeypatch):
    import onnx

    from skiff.kernels.ocr.synth import FontsMissing, fonts
    from skiff.kernels.ocr_train import finetune
    from skiff.kernels.ocr_train.data import render_line
    from skiff.kernels.ocr_train.labels import Dictionary
    from skiff.kernels.train.onnx import OnnxModule

    try:
        font = fonts()["latin"]
    except FontsMissing as exc:
        pytest.skip(str(exc))
    labels = _labels(tmp_path)
    config = dry_run("train", f"ocr-rec --data {labels} --weight-decay 0.05 --steps 1 "
                              f"--batch-size 1 --mix 0")["config"]
    cfg = config_from(config, tmp_path)
    built = []
    real = finetune.AdamW

    def spy(params, **kw):
        built.append(kw)
        return real(params, **kw)

    monkeypatch.setattr(finetune, "AdamW", spy)
    path = finetune.base_model_path("ch-v4")
    module = OnnxModule.load(path)
    head = finetune._final_linear(module)
    d = Dictionary.from_model(onnx.load(str(path), load_external_data=False),
                              getattr(module, head[0]).shape[1])
    crop = render_line("word 1", font, 32, random.Random(0))
    cfg.augment = False
    finetune.RecTrainer(module, d, cfg).train([crop], ["word 1"])
    assert built and built[0]["weight_decay"] == 0.05
