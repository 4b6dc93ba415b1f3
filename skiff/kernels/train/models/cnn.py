"""A small convolutional classifier for single-channel images (NCHW)."""

from __future__ import annotations

from ..core import nn

__all__ = ["CNN", "cnn"]


class CNN(nn.Module):
    """Two conv-ReLU-maxpool stages and a linear head.

    Parameters
    ----------
    in_channels : int
    num_classes : int
    image_size : int
        Height = width of the input, a multiple of 4.
    channels : (int, int)
        Channels of the two convolutions.
    """

    def __init__(self, in_channels: int = 1, num_classes: int = 4, image_size: int = 16,
                 channels=(8, 16)):
        super().__init__()
        if image_size % 4:
            raise ValueError(f"image_size must be a multiple of 4, got {image_size!r}")
        c1, c2 = channels
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, c1, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(c1, c2, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.flatten = nn.Flatten()
        self.head = nn.Linear(c2 * (image_size // 4) ** 2, num_classes)
        self.input_shape = (in_channels, image_size, image_size)

    def forward(self, x):  # (B, Cin, H, W) -> (B, classes)
        if tuple(x.shape[1:]) != self.input_shape:
            want = ", ".join(map(str, self.input_shape))
            last = tuple(x.shape[1:]) == self.input_shape[1:] + self.input_shape[:1]
            hint = "; channels-last images? use X.transpose(0, 3, 1, 2)" if last else ""
            raise ValueError(f"CNN expects inputs of shape (B, {want}), "
                             f"got {tuple(x.shape)}{hint}")
        return self.head(self.flatten(self.features(x)))


def cnn(**overrides) -> CNN:
    """The built-in ``cnn``: 1x16x16 images, 4 classes (made for the ``shapes`` data)."""
    return CNN(**overrides)
