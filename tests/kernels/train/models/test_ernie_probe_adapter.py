"""An adapter trained with peft, used in skiff (round 25 probe): ``load_adapter(model, DIR)``
and ``from_pretrained(ADAPTER_DIR)`` (as transformers loads an adapter folder with peft
installed: the base from ``base_model_name_or_path``) give ``PeftModel``'s logits, for
attention targets and for the fused experts (``target_parameters``); what skiff's LoRA does
not have (DoRA, rsLoRA) and a folder without weights are one line. Before, an adapter folder
was 'not a checkpoint folder: it has no config.json' and skiff had no way to read one."""

from __future__ import annotations

import json

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained
from skiff.kernels.train.models.lora import load_adapter

from .ernie_reference import make_checkpoint, random_ids, torch

peft = pytest.importorskip("peft")


def _peft_adapter(folder, shape, **lora):
    _, ref = make_checkpoint(folder / "base", shape)
    torch.manual_seed(0)
    pm = peft.get_peft_model(ref, peft.LoraConfig(r=4, lora_alpha=8, **lora))
    gen = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for n, p in pm.named_parameters():
            if "lora_B" in n:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.3)
    pm.save_pretrained(folder / "adapter")
    return pm.eval()


@pytest.mark.parametrize("shape,lora", [
    ("dense-gqa-tied", dict(target_modules=["q_proj", "v_proj", "down_proj"])),
    ("moe-shared", dict(target_modules=["q_proj", "o_proj"],
                        target_parameters=["mlp.experts.gate_up_proj",
                                           "mlp.experts.down_proj"])),
    ("moe-interval", dict(target_modules=["v_proj"],
                          target_parameters=["mlp.experts.gate_up_proj"])),
])
def test_peft_adapter_in_skiff_equals_peft(tmp_path, shape, lora):
    pm = _peft_adapter(tmp_path, shape, **lora)
    ids = random_ids(pm.config.vocab_size, (2, 9))
    with torch.no_grad():
        want = pm(torch.tensor(ids)).logits.numpy()
    tol = 1e-4 * np.abs(want).max()
    model = load_adapter(from_pretrained(tmp_path / "base"), tmp_path / "adapter")
    assert np.abs(model(ids).numpy() - want).max() < tol
    cfg = json.loads((tmp_path / "adapter" / "adapter_config.json").read_text())
    cfg["base_model_name_or_path"] = str(tmp_path / "base")  # (the test built it in memory)
    (tmp_path / "adapter" / "adapter_config.json").write_text(json.dumps(cfg))
    again = from_pretrained(tmp_path / "adapter")  # as AutoModelForCausalLM with peft
    assert np.abs(again(ids).numpy() - want).max() < tol


def test_adapter_mistakes(tmp_path):
    _peft_adapter(tmp_path, "dense-gqa-tied", target_modules=["q_proj"])
    cfg_path = tmp_path / "adapter" / "adapter_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["base_model_name_or_path"] = "baidu/ERNIE-4.5-0.3B-PT"
    cfg_path.write_text(json.dumps(cfg))
    with pytest.raises(FileNotFoundError, match="is a LoRA adapter \\(peft\\) of "
                                                "'baidu/ERNIE-4.5-0.3B-PT'.*load_adapter"):
        from_pretrained(tmp_path / "adapter")
    for key, value in (("fan_in_fan_out", True),):  # use_rslora, use_dora: read (round 28)
        cfg_path.write_text(json.dumps({**cfg, key: value}))
        with pytest.raises(ValueError, match=f"{key} = True is not supported"):
            load_adapter(from_pretrained(tmp_path / "base"), tmp_path / "adapter")
    cfg_path.write_text(json.dumps(cfg))
    model = load_adapter(from_pretrained(tmp_path / "base"), tmp_path / "adapter")
    with pytest.raises(ValueError, match="has LoRA adapters already"):
        load_adapter(model, tmp_path / "adapter")
    (tmp_path / "adapter" / "adapter_model.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match="has no adapter_model.safetensors"):
        load_adapter(from_pretrained(tmp_path / "base"), tmp_path / "adapter")


def test_generate_on_an_adapter_folder_from_the_terminal(tmp_path, monkeypatch, capsys):
    """``python -m skiff generate ADAPTER_DIR --prompt ... --json``: the base named by the
    adapter with the adapter on it, the tokens of peft's greedy ``generate``. (Round 40:
    the CLI's ``main`` in this process, in the folder a terminal would be in.)"""
    from types import SimpleNamespace

    from skiff.cli import main

    from .ernie_reference import LINES, add_tokenizer

    def _cli(*args, cwd):
        monkeypatch.chdir(cwd)
        capsys.readouterr()
        rc = main(list(args))
        out = capsys.readouterr()
        return SimpleNamespace(returncode=rc, stdout=out.out, stderr=out.err)

    pm = _peft_adapter(tmp_path, "dense-gqa-tied", target_modules=["q_proj", "v_proj"])
    add_tokenizer(tmp_path / "base", "\n".join(LINES), pm.config.vocab_size)
    cfg_path = tmp_path / "adapter" / "adapter_config.json"
    cfg_path.write_text(json.dumps({**json.loads(cfg_path.read_text()),
                                    "base_model_name_or_path": "../base"}))  # relative
    out = _cli("generate", str(tmp_path / "adapter"), "--prompt", "Hello world",
               "--max-new-tokens", "8", "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    model = from_pretrained(tmp_path / "adapter")
    ids = model.tokenizer.encode("Hello world")
    with torch.no_grad():
        want = pm.generate(input_ids=torch.tensor(ids[None]), max_new_tokens=8,
                           do_sample=False)[0, len(ids):].tolist()
    eos = model.generation_config.get("eos_token_id", model.config.eos_token_id)
    if want and want[-1] == eos:
        want = want[:-1]
    assert doc["result"]["text"] == model.tokenizer.decode(want)  # unstripped (round 46)
    (tmp_path / "base" / "config.json").unlink()
    out = _cli("generate", str(tmp_path / "adapter"), "--prompt", "hi", cwd=tmp_path)
    assert out.returncode == 2 and "is a LoRA adapter (peft)" in out.stderr


def test_a_relative_base_is_the_adapters_when_the_working_folder_holds_another(tmp_path,
                                                                                monkeypatch):
    """``base_model_name_or_path: ../base`` where the working folder's ``../base`` is some
    other folder (CI's clone beside a /tmp/base): the checkpoint beside the adapter is taken,
    not refused for the decoy's missing config.json."""
    from skiff.kernels.train.models.hf_checkpoint import adapter_base

    _peft_adapter(tmp_path, "dense-gqa-tied", target_modules=["q_proj", "v_proj"])
    cfg_path = tmp_path / "adapter" / "adapter_config.json"
    cfg_path.write_text(json.dumps({**json.loads(cfg_path.read_text()),
                                    "base_model_name_or_path": "../base"}))
    (tmp_path / "x" / "base").mkdir(parents=True)   # the decoy: no config.json
    (tmp_path / "x" / "work").mkdir()
    monkeypatch.chdir(tmp_path / "x" / "work")
    assert adapter_base(tmp_path / "adapter").resolve() == (tmp_path / "base").resolve()
    (tmp_path / "base" / "config.json").unlink()
    with pytest.raises(FileNotFoundError, match="is a LoRA adapter"):
        adapter_base(tmp_path / "adapter")
