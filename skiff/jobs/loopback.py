"""Keep a local MPI job's launcher off the network: the ``bind`` shim for hydra.

MPICH's hydra binds its control port (and its proxies' ports) to every interface and has no
option to choose another address. For a job on this machine, skiff preloads a 20-line
library (``bind_loopback.c``) into mpiexec and its proxies that turns a bind to 0.0.0.0 into
a bind to 127.0.0.1; the ranks' own traffic is kept on ``lo`` by environment variables
(:data:`skiff.jobs.process.LOOPBACK_ENV`). The library is compiled once with the system's C
compiler into the user's cache folder, named by a hash of its source; without a compiler the
job runs as before and its launcher log says the control port listens on every interface.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from skiff.kernels.backend.cache import cache_dir

__all__ = ["bind_shim", "SOURCE"]

SOURCE = Path(__file__).with_name("bind_loopback.c")
_BUILT: dict[str, str | None] = {}


def bind_shim() -> str | None:
    """The path of the compiled shim (built on first use), or None where it cannot be built
    (no C compiler, no writable cache folder, not Linux)."""
    try:
        source = SOURCE.read_bytes()
    except OSError:
        return None
    key = hashlib.sha256(source).hexdigest()[:16]
    if key in _BUILT:
        return _BUILT[key]
    _BUILT[key] = path = _build(source, key)
    return path


def _build(source: bytes, key: str) -> str | None:
    if not os.path.exists("/proc/self/maps"):      # LD_PRELOAD of an ELF library: Linux
        return None
    target = cache_dir() / f"bind-loopback-{key}.so"
    if target.is_file():
        return str(target)
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
            src = Path(tmp) / "bind_loopback.c"
            src.write_bytes(source)
            out = Path(tmp) / target.name
            done = subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", str(out), str(src),
                                   "-ldl"], capture_output=True, timeout=60)
            if done.returncode != 0 or not out.is_file():
                return None
            os.replace(out, target)               # atomic: a parallel launch sees all or none
    except (OSError, subprocess.SubprocessError):
        return None
    return str(target)
