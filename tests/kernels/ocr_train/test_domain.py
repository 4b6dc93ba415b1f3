"""Rendered domain sets (kernels/ocr_train/domain.py): each domain writes a label file the
loader reads back whole, with texts the shipped dictionary spells; seeds repeat."""

from __future__ import annotations

import pytest

from skiff.kernels.ocr_train.domain import DOMAINS, DomainFontsMissing, write_domain_set
from skiff.kernels.ocr_train.labels import Dictionary, read_labels


@pytest.fixture(scope="module")
def v6_dictionary():
    import onnx

    from skiff.kernels.ocr.models import MODEL_SETS

    proto = onnx.load(str(MODEL_SETS["ch"].path("rec")), load_external_data=False)  # v6
    return Dictionary.from_model(proto)


@pytest.mark.parametrize("domain", sorted(DOMAINS))
def test_a_domain_set_reads_back_whole_and_repeats_by_seed(tmp_path, domain, v6_dictionary):
    try:
        labels = write_domain_set(tmp_path / "a", 12, seed=3, domain=domain)
    except DomainFontsMissing as exc:
        pytest.skip(str(exc))
    again = write_domain_set(tmp_path / "b", 12, seed=3, domain=domain)
    other = write_domain_set(tmp_path / "c", 12, seed=4, domain=domain)
    got = read_labels(labels, v6_dictionary)  # every text spelled by the shipped dictionary
    assert len(got.rows) == 12 and not got.errors, got.errors
    assert labels.read_text() == again.read_text() != other.read_text()
    texts = [line.split("\t", 1)[1] for line in labels.read_text().splitlines()]
    assert all(texts) and len(set(texts)) > 6


def test_an_unknown_domain_is_named():
    with pytest.raises(ValueError, match="brush"):
        write_domain_set("/nonexistent", 1, domain="handwriting")


def test_epoch_batches_hold_every_crop_and_like_widths():
    import random

    import numpy as np

    from skiff.kernels.ocr_train.finetune import epoch_batches

    rng = random.Random(5)
    widths = [rng.uniform(120, 280) for _ in range(203)]
    for pool in (1, 16):
        batches = epoch_batches(widths, 12, pool, random.Random(1))
        flat = [i for b in batches for i in b]
        assert all(len(b) == 12 for b in batches) and len(batches) == 17  # ceil(203 / 12)
        assert set(flat) == set(range(203))  # every crop, 1 topped up to fill the last
        if pool == 1:
            random_width = np.mean([max(widths[i] for i in b) for b in batches])
        else:
            like_width = np.mean([max(widths[i] for i in b) for b in batches])
    # random batches pad to near the widest crop; batches from pools pad far less
    assert random_width > 255 and like_width < random_width - 40, (random_width, like_width)
    assert epoch_batches(widths, 12, 16, random.Random(1)) != \
        epoch_batches(widths, 12, 16, random.Random(2))  # still shuffled
