"""torch's ``torch.nn.modules.rnn``: the recurrent layers."""

from skiff.kernels.train.core.nn.recurrent import (  # noqa: F401
    GRU,
    LSTM,
)
from skiff.kernels.train.core.nn.rnn_cells import (  # noqa: F401
    RNN,
    GRUCell,
    LSTMCell,
    RNNCell,
)
from skiff.kernels.train.core.nn.utils_r38 import (  # noqa: F401
    RNNBase,
    RNNCellBase,
)
