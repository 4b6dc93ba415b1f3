"""A transformers user hands skiff torch's own objects: ``model.to(torch.bfloat16)`` was
"unknown device", and an embedding given a torch tensor of ids (a tokenizer's
``return_tensors="pt"``) failed on its dtype. Oracle: torch's own module on the same weights."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import skiff  # noqa: E402
from skiff import nn  # noqa: E402


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bfloat16, torch.float32])
def test_module_to_a_torch_dtype_casts_as_torch(dtype):
    t = torch.nn.Linear(3, 2)
    s = nn.Linear(3, 2)
    s.load_state_dict({k: skiff.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    assert s.to(dtype) is s
    t.to(dtype)
    for (name, got), want in zip(s.state_dict().items(), t.state_dict().values()):
        assert str(got.dtype) == str(want.dtype).split(".")[1], name
        np.testing.assert_array_equal(np.asarray(got.float()), want.float().numpy())


def test_embedding_takes_torch_ids():
    t = torch.nn.Embedding(11, 4, padding_idx=0)
    s = nn.Embedding(11, 4, padding_idx=0)
    s.load_state_dict({"weight": skiff.tensor(t.weight.detach().numpy())})
    ids = torch.tensor([[0, 3, 10], [5, 5, 1]])
    np.testing.assert_array_equal(s(ids).detach().numpy(), t(ids).detach().numpy())
    with pytest.raises(TypeError, match="integers"):
        s(torch.tensor([1.0, 2.0]))
