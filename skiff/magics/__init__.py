"""IPython magics: one per job kind, made from the registry (:mod:`.kinds`), and one Magics
class per tool domain (``%jobs %devices``, ``%plan``, ``%predict``, ``%skiff``). Each
parses, then calls :mod:`skiff.jobs`."""

from __future__ import annotations

from .jobs import JobsMagics
from .kinds import register_kind_magics
from .panel import PanelMagics
from .plan import PlanMagics
from .predict import PredictMagics

__all__ = ["magics_classes", "register_kind_magics"]


def magics_classes() -> list[type]:
    """The Magics classes of the tools (the kinds' magics are registered by
    :func:`register_kind_magics`)."""
    return [JobsMagics, PlanMagics, PanelMagics, PredictMagics]
