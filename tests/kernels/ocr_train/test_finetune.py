"""Fine-tuning raises held-out accuracy on a domain the base model reads poorly
(seven-segment displays), quickly, on a tiny set."""

from __future__ import annotations

import pytest

from skiff.kernels.ocr_train.finetune import FineTuneConfig, fine_tune


@pytest.fixture(scope="module")
def sets(tmp_path_factory, fonts):
    from skiff.kernels.ocr_train.domain import DomainFontsMissing, write_domain_set

    root = tmp_path_factory.mktemp("dseg")
    try:
        return (write_domain_set(root / "train", 48, seed=21),
                write_domain_set(root / "val", 24, seed=22))
    except DomainFontsMissing as exc:
        pytest.skip(str(exc))


def test_quick_fine_tune_raises_held_out_accuracy(sets, tmp_path):
    train, val = sets
    cfg = FineTuneConfig(data=str(train), val_data=str(val), base="ch-v4",
                         out=str(tmp_path / "rec"), steps=12, batch_size=8, lr=5e-4, seed=0)
    result = fine_tune(cfg)
    assert result.train_rows == 48 and result.val_rows == 24 and not result.errors
    # measured through onnxruntime on the exported file, as %ocr --rec-model runs it
    assert result.val_after > result.val_before + 0.1, result
    assert (tmp_path / "rec" / "rec.onnx").is_file()
