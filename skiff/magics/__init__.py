"""IPython magics, one Magics class per domain; each parses and calls skiff.jobs."""

from __future__ import annotations

import importlib

__all__ = ["magics_classes"]

# domain modules and their Magics classes; a domain whose module is missing is skipped
DOMAINS = (
    ("skiff.magics.jobs", "JobsMagics"),
    ("skiff.magics.train", "TrainMagics"),
    ("skiff.magics.plan", "PlanMagics"),
    ("skiff.magics.solve", "SolveMagics"),
    ("skiff.magics.ocr", "OcrMagics"),
    ("skiff.magics.panel", "PanelMagics"),
)


def magics_classes() -> list[type]:
    found = []
    for module, name in DOMAINS:
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name == module:
                continue
            raise
        found.append(getattr(mod, name))
    return found
