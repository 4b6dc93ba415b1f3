"""``skiff.nn.utils.rnn``: torch's ``pad_sequence``; the public name of
:mod:`skiff.kernels.train.core.nn.rnn_utils`."""

from skiff.kernels.train.core.nn.rnn_utils import __all__, pad_sequence  # noqa: F401
