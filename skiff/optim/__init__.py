"""``skiff.optim``: optimizers and learning-rate schedules.

The public name of :mod:`skiff.kernels.train.core.optim` (and ``RMSprop``/``Adagrad`` from
:mod:`~skiff.kernels.train.core.optim_more`, ``Adamax``/``NAdam``/``RAdam`` from
:mod:`~skiff.kernels.train.core.optim_adam_family`, ``LBFGS`` from
:mod:`~skiff.kernels.train.core.optim_lbfgs`, ``Adadelta``/``Rprop`` from
:mod:`~skiff.kernels.train.core.optim_adadelta_rprop`, ``SparseAdam`` from
:mod:`~skiff.kernels.train.core.optim_sparse_adam`, ``Adafactor`` from
:mod:`~skiff.kernels.train.core.optim_adafactor_r37`, ``Muon`` from
:mod:`~skiff.kernels.train.core.optim_muon_r38`); the same classes. The schedules are
also under torch's names, ``skiff.optim.lr_scheduler.StepLR`` / ``LambdaLR`` / ...
(``from skiff.optim.lr_scheduler import LambdaLR`` works too)."""

from skiff.kernels.train.core import optim as _real
from skiff.kernels.train.core.optim import (  # noqa: F401
    SGD,
    Adam,
    AdamW,
    ConstantLR,
    LRSchedule,
    Optimizer,
    StepLR,
    WarmupCosine,
    adamw_update,
    clip_grad_norm_,
)
from skiff.kernels.train.core.optim_adadelta_rprop import Adadelta, Rprop  # noqa: F401
from skiff.kernels.train.core.optim_adafactor_r37 import Adafactor  # noqa: F401
from skiff.kernels.train.core.optim_adam_family import Adamax, NAdam, RAdam  # noqa: F401
from skiff.kernels.train.core.optim_asgd import ASGD  # noqa: F401
from skiff.kernels.train.core.optim_lbfgs import LBFGS  # noqa: F401
from skiff.kernels.train.core.optim_more import Adagrad, RMSprop  # noqa: F401
from skiff.kernels.train.core.optim_muon_r38 import Muon  # noqa: F401
from skiff.kernels.train.core.optim_sparse_adam import SparseAdam  # noqa: F401
from skiff.optim import lr_scheduler, swa_utils  # noqa: F401

# core.optim's names, optim_more's, optim_adam_family's and LBFGS
__all__ = [*_real.__all__, "RMSprop", "Adagrad", "Adamax", "NAdam", "RAdam", "LBFGS",
           "Adadelta", "Rprop", "ASGD", "SparseAdam", "Adafactor", "Muon"]
