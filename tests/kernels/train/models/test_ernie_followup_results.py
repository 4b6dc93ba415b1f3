"""What a train job of a checkpoint wrote, named in its result (follow-up of the round 25
probe): ``python -m skiff train ernie ... --json`` gives ``hf_model`` (and, with LoRA,
``hf_adapter``), the folders transformers and peft load: the merged model's logits equal
``PeftModel`` on the base with the adapter. Before, they were only artifacts in
``events.jsonl``. And ``load_adapter`` is public (``skiff.models.load_adapter``): a peft
adapter put on a skiff model gives ``PeftModel``'s logits."""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pytest

from .ernie_reference import LINES, add_tokenizer, make_checkpoint, random_ids, torch, transformers

peft = pytest.importorskip("peft")


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    folder = tmp_path_factory.mktemp("base")
    _, ref = make_checkpoint(folder, "dense-gqa-tied")
    add_tokenizer(folder, "\n".join(LINES), ref.config.vocab_size)
    data = folder.parent / "corpus.txt"
    data.write_text("\n".join(LINES * 3))
    return folder, data


def _train_json(*words) -> dict:
    from skiff.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["train", "ernie", *words, "--json"])
    assert code == 0, out.getvalue()
    return json.loads(out.getvalue())["result"]


def _logits(model, ids):
    with torch.no_grad():
        return model(torch.tensor(ids)).logits.numpy()


@pytest.mark.parametrize("lora", [False, True])
def test_train_json_names_the_saved_folders(base, lora):
    folder, data = base
    words = [str(data), "--from", str(folder), "--steps", "2", "--block-size", "16",
             "--lr", "0.01"]
    result = _train_json(*words, *(["--lora-r", "4", "--lora-alpha", "8"] if lora else []))
    trained = transformers.AutoModelForCausalLM.from_pretrained(result["hf_model"]).eval()
    original = transformers.AutoModelForCausalLM.from_pretrained(folder).eval()
    ids = random_ids(trained.config.vocab_size, (2, 7))
    assert not np.allclose(_logits(trained, ids), _logits(original, ids))  # trained weights
    if not lora:
        assert "hf_adapter" not in result
        return
    from skiff.kernels.train.entry import CheckpointTrainResult
    from skiff.kernels.train.result import TrainResult

    shown = CheckpointTrainResult.of(TrainResult(2, 1.0, 0.5), hf_model=result["hf_model"],
                                     hf_adapter=result["hf_adapter"])._repr_html_()
    assert result["hf_model"] in shown and result["hf_adapter"] in shown  # the notebook's view
    adapted = peft.PeftModel.from_pretrained(original, result["hf_adapter"]).eval()
    want = _logits(adapted, ids)
    assert np.abs(_logits(trained, ids) - want).max() < 1e-4 * np.abs(want).max()


def test_load_adapter_is_public(tmp_path):
    import skiff.models
    from skiff.kernels.train import models

    folder, ref = make_checkpoint(tmp_path / "base", "dense-gqa-tied")
    torch.manual_seed(0)
    pm = peft.get_peft_model(ref, peft.LoraConfig(r=4, lora_alpha=8,
                                                  target_modules=["q_proj", "v_proj"]))
    with torch.no_grad():
        for n, p in pm.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.3)
    pm.save_pretrained(tmp_path / "adapter")
    ids = random_ids(ref.config.vocab_size, (2, 9))
    want = _logits(pm.eval(), ids)
    assert "load_adapter" in skiff.models.__all__ and "load_adapter" in models.__all__
    model = skiff.models.load_adapter(skiff.models.from_pretrained(tmp_path / "base"),
                                      tmp_path / "adapter")
    assert np.abs(model(ids).numpy() - want).max() < 1e-4 * np.abs(want).max()
