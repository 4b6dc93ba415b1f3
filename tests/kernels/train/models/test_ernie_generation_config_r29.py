"""``model.generation_config`` read and written as transformers' ``GenerationConfig``
(round 29; ``model.generation_config.pad_token_id = tok.pad_token_id``, the line most
fine-tuning scripts have, was an AttributeError on skiff's dict): the values and defaults
read as transformers', values set by attribute or a whole ``GenerationConfig`` assigned
steer ``generate`` as they steer transformers', and ``save_pretrained`` writes them."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, random_ids, torch, transformers

NAMES = ["pad_token_id", "eos_token_id", "bos_token_id", "max_length", "do_sample",
         "temperature", "top_k", "top_p", "num_beams", "repetition_penalty", "use_cache"]


@pytest.fixture()
def pair(tmp_path):
    folder, ref = make_checkpoint(tmp_path / "m", "dense-gqa-tied")
    ref.generation_config = transformers.GenerationConfig.from_pretrained(folder)
    return ref, from_pretrained(folder), tmp_path


def test_reads_as_transformers(pair):
    ref, model, _ = pair
    for name in NAMES:
        assert getattr(model.generation_config, name) == getattr(ref.generation_config, name), \
            name
    with pytest.raises(AttributeError, match="no option"):
        model.generation_config.no_such_option  # noqa: B018


def test_set_by_attribute_steers_generate_and_save(pair):
    ref, model, tmp = pair
    ids = torch.tensor(random_ids(model.config.vocab_size, (2, 6), seed=4))
    mask = torch.ones_like(ids)
    mask[0, :2] = 0
    with torch.no_grad():
        free = ref.generate(ids, attention_mask=mask, max_new_tokens=6, do_sample=False,
                            eos_token_id=None)
    for gc in (ref.generation_config, model.generation_config):
        gc.pad_token_id = 7
        gc.eos_token_id = int(free[1, 8])  # row 1 stops at its third new token
        gc.max_new_tokens = 5
        gc.do_sample = False
    want = ref.generate(ids, attention_mask=mask).numpy()
    np.testing.assert_array_equal(model.generate(ids, attention_mask=mask), want)
    assert (want[1, 9:] == 7).all()
    model.save_pretrained(tmp / "saved")
    back = transformers.GenerationConfig.from_pretrained(tmp / "saved")
    assert (back.pad_token_id, back.max_new_tokens) == (7, 5)
    assert copy.deepcopy(model.generation_config).max_new_tokens == 5


def test_assign_a_generation_config(pair):
    ref, model, _ = pair
    ids = torch.tensor(random_ids(model.config.vocab_size, (1, 5), seed=8))
    gc = transformers.GenerationConfig(max_new_tokens=3, do_sample=False, eos_token_id=None)
    ref.generation_config = copy.deepcopy(gc)
    model.generation_config = gc
    assert model.generation_config.max_new_tokens == 3
    np.testing.assert_array_equal(model.generate(ids), ref.generate(ids).numpy())
    model.generation_config = json.loads(json.dumps({"max_new_tokens": 2}))
    assert model.generate(ids).shape == (1, 7)
