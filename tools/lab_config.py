"""Write the lab's own IPython profile so a fresh notebook in ``make lab`` has skiff loaded.

Only files under the given folder are written; the user's global config is left alone.
"""

import sys
from pathlib import Path


def main(folder: str) -> None:
    root = Path(folder).resolve()
    profile = root / "ipython" / "profile_default"
    profile.mkdir(parents=True, exist_ok=True)
    (root / "jupyter").mkdir(parents=True, exist_ok=True)
    config = profile / "ipython_config.py"
    text = "c = get_config()  # noqa\nc.InteractiveShellApp.extensions = ['skiff']\n"
    if not config.exists() or config.read_text() != text:
        config.write_text(text)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".lab")
