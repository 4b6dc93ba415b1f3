"""Write the lab's own config folder so ``make lab`` starts everything: an IPython profile
with skiff loaded in every new notebook, and the Jupyter server config that enables the
``skiff.lab`` server extension (the Jobs sidebar's API) and points JupyterLab at the prebuilt
``skiff-lab`` frontend in this checkout (``skiff/lab/labextensions``), as an installed wheel
does through ``share/jupyter``.

Only files under the given folder are written; the user's global config is left alone.
"""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


# the server extension enabled, as the wheel's etc/jupyter/jupyter_server_config.d/skiff.json
SERVER_CONFIG = {"ServerApp": {"jpserver_extensions": {"skiff.lab": True}}}


def lab_config() -> dict:
    """JupyterLab finds the checkout's prebuilt frontend before any installed copy."""
    return {"LabApp": {"extra_labextensions_path": [str(ROOT / "skiff" / "lab" /
                                                        "labextensions")]}}


def _write(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def main(folder: str) -> None:
    root = Path(folder).resolve()
    profile = root / "ipython" / "profile_default"
    profile.mkdir(parents=True, exist_ok=True)
    _write(profile / "ipython_config.py",
           "c = get_config()  # noqa\nc.InteractiveShellApp.extensions = ['skiff']\n")
    jupyter = root / "jupyter"
    (jupyter / "jupyter_server_config.d").mkdir(parents=True, exist_ok=True)
    _write(jupyter / "jupyter_server_config.d" / "skiff.json",
           json.dumps(SERVER_CONFIG, indent=1) + "\n")
    _write(jupyter / "jupyter_lab_config.json", json.dumps(lab_config(), indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".lab")
