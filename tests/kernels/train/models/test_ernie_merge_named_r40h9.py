"""``merge_and_unload(adapter_names=[...])`` (round 40, h9; was refused unless the names
were the active adapters): peft folds in the adapters named (active or not; several are
added), and drops the others. Logits of the merged model equal peft's, on the checkpoint
with biases and the MoE one, for an inactive adapter, both orders of two, the active one
alone, and an empty list (peft: the base model)."""

from __future__ import annotations

import numpy as np
import pytest

from .ernie_reference import make_checkpoint, peft_pair, random_ids, saved_adapter, torch


@pytest.fixture(scope="module", params=["dense-mha-untied-bias", "moe-shared"])
def folders(request, tmp_path_factory):
    d = tmp_path_factory.mktemp("merge_named")
    make_checkpoint(d / "base", request.param)
    a = saved_adapter(d / "base", d / "a", ["q_proj", "v_proj"], 4, 1)
    b = saved_adapter(d / "base", d / "b", ["q_proj", "o_proj"], 2, 2)
    return d / "base", {"default": a, "b": b}


def test_merge_named_adapters_as_peft(folders):
    base, paths = folders
    ids = random_ids(80, (2, 7), seed=40)
    seen = []
    for names in (["b"], ["b", "default"], ["default"], []):
        pm, model = peft_pair(base, paths)
        with torch.no_grad():
            want = pm.merge_and_unload(adapter_names=names)(torch.tensor(ids)).logits.numpy()
        merged = model.merge_and_unload(adapter_names=names)
        got = np.asarray(merged(ids).numpy())
        scale = float(np.abs(want).max())
        np.testing.assert_allclose(got, want, atol=1e-5 * scale, err_msg=str(names))
        assert not any("lora" in n for n, _ in merged.named_parameters())
        seen.append(want)
    assert np.abs(seen[0] - seen[2]).max() > 1e-2  # the inactive adapter's own outputs
    assert np.abs(seen[0] - seen[1]).max() > 1e-2
