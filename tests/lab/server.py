"""A Jupyter server with the ``skiff.lab`` extension on a runs root of its own, and a small
client of its REST API (for the API tests; the browser tests start a whole JupyterLab)."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.browser.lab import (
    ROOT,
    VENV_BIN,
    clear_runs,
    free_port,
    shared,
    stop_process,
    wait_http,
)


class ApiServer:
    """``jupyter server`` from the venv with only ``skiff.lab`` added, on 127.0.0.1 with a
    token; ``runs`` is its runs root and ``secret`` the key that signs run folders there."""

    def __init__(self, workdir: Path):
        self.workdir = Path(workdir)
        self.runs = self.workdir / "skiff-runs"
        self.secret = self.workdir / "skiff-secret"
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = self.workdir / "jupyter-server.log"
        self.proc: subprocess.Popen | None = None

    def env(self) -> dict:
        """The environment of the server and of the jobs it should see."""
        path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
        return dict(os.environ, SKIFF_RUNS=str(self.runs), SKIFF_SECRET_FILE=str(self.secret),
                    PYTHONPATH=path, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
                    JUPYTER_CONFIG_DIR=str(self.workdir / "jupyter-config"))

    def start(self, timeout: float = 60.0) -> ApiServer:
        cmd = [str(VENV_BIN / "jupyter"), "server", "--no-browser", "--ip=127.0.0.1",
               f"--port={self.port}", f"--IdentityProvider.token={self.token}",
               f"--ServerApp.root_dir={self.workdir}", "--ServerApp.port_retries=0",
               '--ServerApp.jpserver_extensions={"skiff.lab": True}']
        if os.geteuid() == 0:
            cmd.append("--allow-root")
        with open(self.log, "wb") as fh:
            self.proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT,
                                         env=self.env(), cwd=self.workdir,
                                         start_new_session=True)
        wait_http(f"{self.url}/api/status?token={self.token}", timeout, self.proc, self.log)
        return self

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)

    def reset(self) -> None:
        """A fresh server's state for the next module: no run folder (its key stays)."""
        clear_runs(self.runs)

    def call(self, method: str, path: str, *, token: bool = True) -> tuple[int, dict]:
        """(HTTP status, JSON body) of ``method /skiff/api/<path>``."""
        req = urllib.request.Request(f"{self.url}/skiff/api/{path}", method=method,
                                     data=b"" if method in ("POST", "PUT") else None)
        if token:
            req.add_header("Authorization", f"token {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as exc:
            body = exc.read()
            try:
                return exc.code, json.loads(body or b"null")
            except ValueError:
                return exc.code, {"message": body.decode(errors="replace")}

    def get(self, path: str) -> dict:
        status, body = self.call("GET", path)
        assert status == 200, (status, body)
        return body

    def wait_for(self, what: str, check, timeout: float = 90.0):
        """Poll the job list until ``check(jobs)`` gives something true; return that."""
        deadline = time.monotonic() + timeout
        while True:
            found = check(self.get("jobs")["jobs"])
            if found:
                return found
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: not seen within {timeout} s; jobs: "
                                     f"{self.get('jobs')['jobs']}")
            time.sleep(0.2)


def shared_api_server(request, tmp_path_factory) -> ApiServer:
    """The session's API server (one per xdist worker; a module gets it with no run
    folder): it was started for each module, 8-11 s at load 17-20."""
    return shared("api", request,
                  lambda: ApiServer(tmp_path_factory.mktemp("lab-api")).start())


def start_cli_job(server: ApiServer, *args: str, log: Path) -> subprocess.Popen:
    """``python -m skiff ARGS`` in a terminal of its own (a session, its own pid), seeing
    the server's runs root: a job started from the terminal."""
    with open(log, "wb") as fh:
        return subprocess.Popen([sys.executable, "-m", "skiff", *args], stdout=fh,
                                stderr=subprocess.STDOUT, env=server.env(),
                                cwd=server.workdir, start_new_session=True)


def stop_cli_job(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        stop_process(proc, timeout=5.0)
