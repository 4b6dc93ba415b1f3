"""Round 33 (h15): printed forms of the convolution, pooling, batch-norm and upsampling
modules, compared with torch 2.13's."""
import pytest

import skiff.nn as snn

torch = pytest.importorskip("torch")
tnn = torch.nn

REPRS = [
    ("Conv2d", (3, 4, 3), {}), ("Conv2d", (3, 4, 3), {"padding": 1}),
    ("Conv2d", (2, 4, 3), {"padding": 1, "groups": 2, "bias": False, "dilation": 2,
                           "padding_mode": "reflect"}),
    ("Conv2d", (2, 4, (1, 3)), {"stride": (2, 1), "padding": (0, 1)}),
    ("Conv2d", (2, 4, 3), {"padding": "same"}),
    ("Conv1d", (3, 4, 3), {}), ("Conv1d", (3, 4, 3), {"padding": 1, "stride": 2}),
    ("Conv1d", (2, 3, 3), {"padding": "same", "bias": False}),
    ("Conv1d", (4, 4, 3), {"groups": 2, "dilation": 2}),
    ("ConvTranspose2d", (3, 4, 3), {}),
    ("ConvTranspose2d", (2, 3, 3), {"stride": 2, "output_padding": 1, "padding": 1}),
    ("BatchNorm1d", (4,), {}), ("BatchNorm2d", (4,), {}),
    ("BatchNorm2d", (4,), {"affine": False, "momentum": 0.2}),
    ("MaxPool2d", (2,), {}), ("MaxPool2d", (3,), {"stride": 2, "padding": 1}),
    ("AvgPool2d", (2,), {}), ("AvgPool2d", (3, 1), {}),
    ("MaxPool1d", (2,), {}), ("MaxPool1d", (3,), {"stride": 1, "padding": 1}),
    ("AvgPool1d", (2,), {}), ("AvgPool1d", (3,), {"stride": 2}),
    ("Upsample", (), {"scale_factor": 2}), ("Upsample", (), {"scale_factor": 1.5}),
    ("Upsample", (), {"scale_factor": (2, 3)}),
    ("Upsample", (), {"scale_factor": 2, "mode": "bilinear"}),
    ("Upsample", (), {"size": 4, "mode": "bilinear"}),
]


@pytest.mark.parametrize("name,args,kw", REPRS, ids=[f"{c[0]}{i}" for i, c in
                                                     enumerate(REPRS)])
def test_module_repr_is_torchs(name, args, kw):
    assert repr(getattr(snn, name)(*args, **kw)) == repr(getattr(tnn, name)(*args, **kw))


def test_small_cnn_print_is_torchs():
    def make(nn):
        return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                             nn.MaxPool2d(2), nn.Conv2d(8, 8, 3, bias=False),
                             nn.AvgPool2d(2), nn.Flatten(), nn.Linear(8, 2))
    assert repr(make(snn)) == repr(make(tnn))
