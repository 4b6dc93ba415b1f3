"""``skiff.aero``: the train nose: ``solve_nose``, ``sweep``, ``Surrogate``, ``design``.

>>> import skiff.aero
>>> flow = skiff.aero.solve_nose(length=3, bluntness=0.4, clearance=0.15, re=1000,
...                              adapt="learned")            # doctest: +SKIP
>>> flow.cd, flow.cl, flow.cells                              # doctest: +SKIP

The public name of :mod:`skiff.kernels.aero`; the same objects."""

from skiff.kernels import aero as _real
from skiff.kernels.aero import (  # noqa: F401
    HELD_OUT_SHAPES,
    LIMITS,
    PARAMS,
    TRAINING_SHAPES,
    NoseFlow,
    NoseProfile,
    NoseShape,
    Prediction,
    Samples,
    Surrogate,
    design,
    nose_volume,
    reynolds_sweep,
    solve_nose,
    sweep,
    train_size_model,
)

__all__ = list(_real.__all__)  # the same names as skiff.kernels.aero
