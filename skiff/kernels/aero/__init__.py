"""Aerodynamics of a train's nose: the flow solver (``kernels.solve.flow``) and the trainer
(``kernels.train``) together, so this unit sits above both.

- :func:`solve_nose`: one shape (or a user's :class:`NoseProfile` from a CSV), its grid
  sized ``uniform``, ``graded``, ``estimator`` or ``learned`` (the network trained by
  :func:`train_size_model`);
- :func:`reynolds_sweep`: one shape at several Re, each solve starting from the one before;
- :func:`sweep`: many shapes as parallel processes -> :class:`Samples`;
- :class:`Surrogate`: drag with a calibrated bound, fitted on a sweep; :func:`design`: the
  least-drag shape of a given nose area on the surrogate.
"""

from skiff.kernels.solve.flow.nose import LIMITS, NoseShape
from skiff.kernels.solve.flow.nose_flow import NoseFlow
from skiff.kernels.solve.flow.nose_job import reynolds_sweep, solve_nose
from skiff.kernels.solve.flow.profile import NoseProfile

from .learn import HELD_OUT_SHAPES, TRAINING_SHAPES, train_size_model
from .surrogate import Prediction, Surrogate, design, nose_volume
from .sweep import PARAMS, Samples, sweep

__all__ = ["HELD_OUT_SHAPES", "LIMITS", "NoseFlow", "NoseProfile", "NoseShape", "PARAMS",
           "Prediction", "Samples", "Surrogate", "TRAINING_SHAPES", "design", "nose_volume",
           "reynolds_sweep", "solve_nose", "sweep", "train_size_model"]
