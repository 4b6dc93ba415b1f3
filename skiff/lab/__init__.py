"""skiff in JupyterLab's own terms: a jupyter_server extension that serves the run folders
(:mod:`skiff.lab.handlers`) and the prebuilt frontend extension ``skiff-lab`` (the Jobs
sidebar, built from ``labextension/`` into ``skiff/lab/labextensions/skiff-lab``).

Both read run folders, never a kernel, so the sidebar works with no kernel at all, after a
kernel restart and after a browser reload. The runs root is the one every skiff front uses:
``$SKIFF_RUNS`` when set, else ``skiff-runs`` in the server's root folder (where a notebook
there writes its jobs). See ``docs/lab-extension.md``.

Enabled by ``ServerApp.jpserver_extensions = {"skiff.lab": True}`` (a wheel installs that
file into ``etc/jupyter/jupyter_server_config.d/``; ``make lab`` writes it into its own
config folder). Importing this package loads nothing of Jupyter.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["runs_root_for", "LABEXTENSION_NAME", "LABEXTENSIONS"]

LABEXTENSION_NAME = "skiff-lab"
# the folder holding the prebuilt frontend (a labextensions path: <here>/skiff-lab/...)
LABEXTENSIONS = Path(__file__).resolve().parent / "labextensions"


def _jupyter_server_extension_points():
    return [{"module": "skiff.lab"}]


def _jupyter_labextension_paths():
    return [{"src": f"labextensions/{LABEXTENSION_NAME}", "dest": LABEXTENSION_NAME}]


def runs_root_for(server_root: str | os.PathLike | None) -> Path:
    """``$SKIFF_RUNS`` if set, else ``<server root>/skiff-runs`` (else ``./skiff-runs``)."""
    env = os.environ.get("SKIFF_RUNS")
    if env:
        return Path(env)
    return Path(server_root or os.getcwd()) / "skiff-runs"


def _load_jupyter_server_extension(serverapp) -> None:
    from .handlers import handlers
    from .payload import JobCache

    root = runs_root_for(getattr(serverapp, "root_dir", None))
    web_app = serverapp.web_app
    web_app.add_handlers(".*$", handlers(web_app.settings["base_url"], JobCache(root)))
    serverapp.log.info("skiff.lab: the Jobs sidebar serves the run folders of %s", root)


# the name jupyter_server looked for before 2.0
load_jupyter_server_extension = _load_jupyter_server_extension
