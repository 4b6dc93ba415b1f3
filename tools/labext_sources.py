"""The fingerprint of the Jobs sidebar's sources (``labextension/``: package.json, the lock
file, tsconfig.json, src/, style/), kept beside the prebuilt output so a test can tell when
the committed build is older than its sources (``make labext`` rebuilds and writes it).

``python tools/labext_sources.py``: print it; ``--write``: store it in the build folder.
"""

import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ROOT / "labextension"
BUILD = ROOT / "skiff" / "lab" / "labextensions" / "skiff-lab"
STAMP = BUILD / "sources.sha256"


def source_files() -> list[Path]:
    top = [SOURCES / n for n in ("package.json", "package-lock.json", "tsconfig.json")]
    tree = [p for d in ("src", "style") for p in (SOURCES / d).rglob("*") if p.is_file()]
    return sorted(top + tree)


def fingerprint() -> str:
    digest = hashlib.sha256()
    for path in source_files():
        digest.update(path.relative_to(SOURCES).as_posix().encode() + b"\0")
        digest.update(path.read_bytes().replace(b"\r\n", b"\n") + b"\0")
    return digest.hexdigest()


if __name__ == "__main__":
    if "--write" in sys.argv[1:]:
        STAMP.write_text(fingerprint() + "\n")
    else:
        print(fingerprint())
