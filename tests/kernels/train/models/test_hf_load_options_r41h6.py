"""transformers' ``from_pretrained`` keywords on skiff's (round 41, h6; each was a
``TypeError``): ``torch_dtype``, ``device_map``, ``trust_remote_code`` (ERNIE-4.5's model
cards pass it), ``attn_implementation``, ...; 8-bit / 4-bit weights refused with the
reason."""

from __future__ import annotations

import numpy as np
import pytest

from .ernie_reference import make_checkpoint, torch

transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("load_options")
    make_checkpoint(d, "dense-gqa-tied")
    return d


def test_a_transformers_users_load_call(folder):
    from skiff.kernels.train.models import from_pretrained

    ref = transformers.AutoModelForCausalLM.from_pretrained(
        folder, torch_dtype=torch.bfloat16, device_map="cpu", low_cpu_mem_usage=True)
    model = from_pretrained(folder, torch_dtype=torch.bfloat16, device_map={"": "cpu"},
                            trust_remote_code=True, attn_implementation="eager",
                            low_cpu_mem_usage=True)
    assert str(model.model.embed_tokens.weight.dtype) == "bfloat16"
    want = ref.model.layers[0].self_attn.q_proj.weight.detach().float().numpy()
    got = model.model.layers[0].self_attn.q_proj.weight.numpy().astype(np.float32)
    np.testing.assert_array_equal(got, want)
    ids = np.array([[5, 9, 11, 40]])
    with torch.no_grad():
        logits = ref(torch.tensor(ids)).logits.float().numpy()
    np.testing.assert_allclose(np.asarray(model(ids).numpy(), dtype=np.float32), logits,
                               atol=0.05 * float(np.abs(logits).max()))
    assert str(from_pretrained(folder, device_map="auto").model.embed_tokens.weight.dtype) \
        == "float32"


@pytest.mark.parametrize("kw, error, words", [
    (dict(load_in_4bit=True), ValueError, "no int8 or 4-bit matrix product"),
    (dict(quantization_config={"load_in_8bit": True}), ValueError, "quantization_config"),
    (dict(device_map={"model.layers.0": 0, "lm_head": "cpu"}), ValueError, "one device"),
    (dict(dtype="float32", torch_dtype="bfloat16"), ValueError, "differ"),
    (dict(attn_implementation="paged"), ValueError, "attn_implementation"),
    (dict(load_in_half=True), TypeError, "load_in_half"),
])
def test_refused_with_the_reason(folder, kw, error, words):
    from skiff.kernels.train.models import from_pretrained

    with pytest.raises(error, match=words):
        from_pretrained(folder, **kw)
