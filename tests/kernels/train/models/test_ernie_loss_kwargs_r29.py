"""The forward keywords transformers' Trainer and generation pass (round 29; each was
"unexpected keyword argument"): ``num_items_in_batch`` (gradient accumulation: the loss is
the sum over the micro-batch divided by the label count of the whole batch) and
``logits_to_keep`` (the last k positions, or given positions). Losses, gradients and logits
against transformers, with the prompt's labels -100 and a padded row."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, random_ids, torch


@pytest.fixture(scope="module", params=["dense-gqa-tied", "moe-shared"])
def pair(request, tmp_path_factory):
    folder, ref = make_checkpoint(tmp_path_factory.mktemp(request.param), request.param)
    return ref, from_pretrained(folder)


def batch(vocab, seed):
    ids = random_ids(vocab, (2, 9), seed=seed)
    labels = ids.copy()
    labels[:, :4] = -100            # the prompt: no loss
    mask = np.ones_like(ids)
    mask[1, 7 - seed % 2:] = 0      # a right-padded row
    labels[mask == 0] = -100
    return ids, labels, mask


def test_gradient_accumulation_with_num_items_in_batch(pair):
    """Two micro-batches, each loss divided by the label count of both (as transformers'
    Trainer passes it): the accumulated gradients and each loss equal transformers'."""
    ref, model = pair
    micro = [batch(model.config.vocab_size, s) for s in (1, 2)]
    total = sum(int((lab[:, 1:] != -100).sum()) for _, lab, _ in micro)
    ref.zero_grad()
    for p in model.parameters():
        p._grad = None
    for ids, labels, mask in micro:
        kw = dict(attention_mask=torch.tensor(mask), labels=torch.tensor(labels),
                  num_items_in_batch=torch.tensor(total))
        want = ref(torch.tensor(ids), **kw).loss
        want.backward()
        got = model(torch.tensor(ids), **kw).loss
        got.backward()
        assert abs(float(got.item()) - float(want.item())) < 1e-5 * abs(float(want.item()))
    theirs = dict(ref.named_parameters())
    compared = 0
    for name, p in model.named_parameters():  # experts are stored fused in transformers
        if name not in theirs or theirs[name].grad is None:  # (and the frozen router bias)
            continue
        compared += 1
        g = theirs[name].grad.numpy()
        # float32 gradients (round 48 h9): 5.6e-6 of the largest apart at worst over the
        # native, OpenBLAS Sandybridge + ATen avx2 / default, numpy-without-AVX2 paths (the
        # BLAS kernels' sum orders), 0.56 of the 1e-5 used; 1e-4 of it keeps 18x
        np.testing.assert_allclose(np.asarray(p.grad.numpy()), g,
                                   atol=1e-4 * max(1e-3, np.abs(g).max()), err_msg=name)
    assert compared >= 10


@pytest.mark.parametrize("keep", [1, 3, 0, [0, 2, 5]])
def test_logits_to_keep(pair, keep):
    ref, model = pair
    ids = torch.tensor(random_ids(model.config.vocab_size, (2, 7), seed=4))
    arg = torch.tensor(keep) if isinstance(keep, list) else keep
    with torch.no_grad():
        want = ref(ids, logits_to_keep=arg).logits.numpy()
    got = model(ids, logits_to_keep=arg)
    assert got.logits.shape == want.shape
    # float32 (round 48 h9): 3.4e-6 of the largest apart at worst (native, OpenBLAS
    # Sandybridge + ATen avx2 / default, numpy without AVX2); 1e-4 of it keeps 30x
    np.testing.assert_allclose(np.asarray(got.numpy()), want, atol=1e-4 * np.abs(want).max())


def test_logits_to_keep_with_labels_is_one_error(pair):
    _, model = pair
    ids = random_ids(model.config.vocab_size, (1, 5))
    with pytest.raises(ValueError, match="leave logits_to_keep out"):
        model(ids, labels=ids, logits_to_keep=1)
