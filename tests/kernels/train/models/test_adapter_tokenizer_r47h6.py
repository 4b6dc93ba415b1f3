"""Round 47 (h6): a LoRA job's ``hf-adapter`` folder (:func:`save_adapter`) had no tokenizer
files, so a transformers/peft user's ``AutoTokenizer.from_pretrained(adapter)`` failed. The
base checkpoint's tokenizer files are now written beside the adapter, as peft's users do
with ``tokenizer.save_pretrained``. The oracle: transformers and peft alone load the folder
(``AutoTokenizer``, ``AutoPeftModelForCausalLM``, which finds the base itself) and their
greedy tokens of a prompt equal skiff's, the prompt's ids the base tokenizer's."""

from __future__ import annotations

import numpy as np
import pytest

from .ernie_reference import make_sentencepiece_checkpoint, torch, transformers

peft = pytest.importorskip("peft")


@pytest.fixture(scope="module", autouse=True)
def _torch_rng_kept():
    state = torch.get_rng_state()
    yield
    torch.set_rng_state(state)


def test_the_adapter_folder_loads_its_tokenizer_and_generates_as_skiff(tmp_path):
    import skiff
    from skiff.kernels.train.models import from_pretrained

    base, adapter = tmp_path / "base", tmp_path / "adapter"
    _, base_tok = make_sentencepiece_checkpoint(base)
    model = from_pretrained(base)
    skiff.models.apply_lora(model, r=4, alpha=8, target_modules=["q_proj", "v_proj"])
    rng = np.random.default_rng(47)
    for name, p in model.named_parameters():
        if "lora_B" in name:  # off its zero init: the adapter changes the tokens
            p._data = p._data + rng.normal(0, 0.3, p.shape).astype(np.float32)
    written = skiff.models.save_adapter(model, adapter)
    assert {"tokenizer.model", "tokenizer_config.json"} <= set(written)

    tok = transformers.AutoTokenizer.from_pretrained(adapter)  # failed: no tokenizer files
    text = "Hello world, hello"
    ids = tok(text).input_ids
    assert ids == base_tok(text).input_ids and len(ids) > 2
    assert tok.chat_template == base_tok.chat_template
    pm = peft.AutoPeftModelForCausalLM.from_pretrained(adapter).eval()
    with torch.no_grad():
        want = pm.generate(torch.tensor([ids]), max_new_tokens=6, do_sample=False,
                           pad_token_id=tok.pad_token_id)[0].tolist()
    got = np.asarray(model.eval().generate(np.array([ids]), max_new_tokens=6,
                                           do_sample=False))[0].tolist()
    assert got == want and len(want) == len(ids) + 6
    assert tok.decode(want[len(ids):]) == model.tokenizer.decode(got[len(ids):])
