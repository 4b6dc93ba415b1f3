"""``make lab`` serves JupyterLab: start it on a free port, GET /lab, stop it by its PID."""

from __future__ import annotations

import secrets
import shutil
import subprocess
import urllib.request

import pytest

from tests.browser.lab import ROOT, free_port, http_status, stop_process, wait_http

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_lab_serves_jupyterlab(tmp_path):
    port, token = free_port(), secrets.token_hex(16)
    args = f"--IdentityProvider.token={token} --ServerApp.port_retries=0"
    log = tmp_path / "make-lab.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen(["make", "lab", f"LAB_PORT={port}", f"LAB_ARGS={args}"],
                                cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        wait_http(f"http://127.0.0.1:{port}/api/status?token={token}", 180, proc, log)
        assert http_status(f"http://127.0.0.1:{port}/lab?token={token}") == 200
        # the Jobs sidebar: its server extension answers and JupyterLab loads its frontend
        assert http_status(f"http://127.0.0.1:{port}/skiff/api/jobs?token={token}") == 200
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/lab?token={token}") as page:
            assert '"name": "skiff-lab"' in page.read().decode()
        # the lab's own IPython profile loads skiff in every new kernel
        profile = ROOT / ".lab" / "ipython" / "profile_default" / "ipython_config.py"
        assert "'skiff'" in profile.read_text()
    finally:
        stop_process(proc)
    assert proc.poll() is not None
    assert http_status(f"http://127.0.0.1:{port}/lab?token={token}") is None  # stopped
