"""``model.generation_config.save_pretrained(DIR)`` (round 37, h6; an AttributeError: the
options dict had no such method): writes ``generation_config.json`` as transformers'
``GenerationConfig.save_pretrained``; transformers reads it back and generates with it the
tokens skiff generates."""

from __future__ import annotations

import json

import numpy as np

from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, torch, transformers


def test_generation_config_save_pretrained_round_trips(tmp_path):
    _, ref = make_checkpoint(tmp_path / "m", "dense-gqa-tied")
    model = from_pretrained(tmp_path / "m")
    gc = model.generation_config
    gc.max_new_tokens = 4
    gc.repetition_penalty = 1.3
    gc.no_repeat_ngram_size = 2
    gc.eos_token_id = np.int64(3)  # an id taken from an array
    gc.save_pretrained(tmp_path / "gc")
    saved = json.loads((tmp_path / "gc" / "generation_config.json").read_text())
    assert saved["max_new_tokens"] == 4 and saved["eos_token_id"] == 3
    theirs = transformers.GenerationConfig.from_pretrained(tmp_path / "gc")
    assert (theirs.max_new_tokens, theirs.repetition_penalty, theirs.no_repeat_ngram_size) == (
        4, 1.3, 2)
    ids = np.array([[5, 6, 7, 8, 5, 6]])
    with torch.no_grad():
        want = ref.generate(torch.tensor(ids), generation_config=theirs).numpy()
    np.testing.assert_array_equal(model.generate(ids), want)
    assert json.loads(gc.to_json_string()) == saved
