"""``--lora-dora``, ``--lora-rslora`` and ``--lora-modules-to-save`` from a cell and the
terminal: the job adapts the model with peft's options of those names, and peft loads the
adapter the job wrote on the base with the trained model's logits (the oracle)."""
from __future__ import annotations

import json
import shlex

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained

from .ernie_reference import add_tokenizer, make_checkpoint, torch, transformers

TEXT = ("The sea was calm and the small boat drifted east. " * 3
        + "A gull cried over the harbour wall. ") * 4


def _config(line: str) -> dict:
    from skiff.kinds.train import KIND

    return KIND.to_config(vars(KIND.command.parse(shlex.split(line))))


def test_lora_option_flags_parse_and_need_a_rank():
    cfg = _config("gpt-mini --lora-r 2 --lora-dora --lora-rslora "
                  "--lora-modules-to-save lm_head,norm")
    assert cfg["lora"] == {"r": 2, "alpha": 4.0, "targets": ["q_proj", "v_proj"],
                           "dora": True, "rslora": True,
                           "modules_to_save": ["lm_head", "norm"]}
    assert _config("gpt-mini --lora-r 2")["lora"] == {"r": 2, "alpha": 4.0,
                                                       "targets": ["q_proj", "v_proj"]}
    for flag in ("--lora-dora", "--lora-rslora", "--lora-modules-to-save lm_head"):
        with pytest.raises(ValueError, match=f"{flag.split()[0]} needs --lora-r R"):
            _config(f"gpt-mini {flag}")


def test_train_magic_dora_rslora_modules_to_save_read_by_peft(tmp_path):
    peft = pytest.importorskip("peft")
    from IPython.core.interactiveshell import InteractiveShell

    make_checkpoint(tmp_path / "ckpt", "dense-gqa-tied")
    add_tokenizer(tmp_path / "ckpt", TEXT, vocab_size=96)
    (tmp_path / "my.txt").write_text(TEXT)
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "skiff")
    job = shell.run_line_magic(
        "train", f"ernie {tmp_path / 'my.txt'} --from {tmp_path / 'ckpt'} --lora-r 4 "
                 "--lora-dora --lora-rslora --lora-modules-to-save lm_head --steps 6 "
                 "--block-size 16 --batch-size 4 --lr 1e-2 --wait")
    assert job.status == "done", job.error
    saved = json.loads((job.run_dir / "hf-adapter" / "adapter_config.json").read_text())
    assert saved["use_dora"] and saved["use_rslora"] and saved["modules_to_save"] == ["lm_head"]
    trained = job.value.model
    base = from_pretrained(tmp_path / "ckpt")
    ref = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "ckpt")
    loaded = peft.PeftModel.from_pretrained(ref, job.run_dir / "hf-adapter").eval()
    ids = trained.tokenizer.encode("the small boat")[None, :]
    with torch.no_grad():
        want = loaded(torch.tensor(ids)).logits.numpy()
    got = trained(ids).numpy()
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()
    assert np.abs(got - base(ids).numpy()).max() > 1e-3  # the adapters did change it
