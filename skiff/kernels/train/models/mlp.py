"""A multi-layer perceptron: Linear layers with an activation between them."""

from __future__ import annotations

from ..core import nn

__all__ = ["MLP", "mlp"]

# "gelu" is the tanh form (skiff's GELU default before it became torch's exact one: models
# trained with it load and predict as they did)
_ACTIVATIONS = {"relu": nn.ReLU, "gelu": lambda: nn.GELU("tanh"), "silu": nn.SiLU}


class MLP(nn.Module):
    """``in_features -> hidden... -> out_features`` with ``activation`` between layers.

    Parameters
    ----------
    in_features, out_features : int
    hidden : sequence of int
        Widths of the hidden layers.
    activation : {"relu", "gelu", "silu"}
    """

    def __init__(self, in_features: int, out_features: int, hidden=(64, 64), *,
                 activation: str = "relu"):
        super().__init__()
        if activation not in _ACTIVATIONS:
            raise ValueError(f"unknown activation {activation!r}: choose from "
                             f"{', '.join(_ACTIVATIONS)}")
        widths = [int(in_features), *map(int, hidden), int(out_features)]
        if min(widths) < 1:
            raise ValueError(f"layer widths must be positive, got {widths}")
        layers = []
        for i, (a, b) in enumerate(zip(widths[:-1], widths[1:])):
            layers.append(nn.Linear(a, b))
            if i < len(widths) - 2:
                layers.append(_ACTIVATIONS[activation]())
        self.net = nn.Sequential(*layers)
        self.in_features = widths[0]
        self.out_features = widths[-1]

    def forward(self, x):  # (B, in) -> (B, out)
        if x.ndim > 2:
            x = x.reshape(x.shape[0], -1)
        if x.shape[-1] != self.in_features:
            raise ValueError(f"MLP expects inputs of shape (B, {self.in_features}), "
                             f"got {tuple(x.shape)}")
        return self.net(x)


def mlp(**overrides) -> MLP:
    """The built-in ``mlp``: 2 inputs, 4 classes (made for the ``blobs`` data)."""
    kw = {"in_features": 2, "out_features": 4, "hidden": (64, 64), **overrides}
    return MLP(**kw)
