"""A private JupyterLab server and a headless Chromium page driving it (for browser tests)."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
ARTIFACTS = ROOT / "test-artifacts"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_status(url: str, timeout: float = 2.0) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return None


def wait_http(url: str, timeout: float, proc: subprocess.Popen | None = None,
              log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if http_status(url) == 200:
            return
        if proc is not None and proc.poll() is not None:
            tail = log.read_text()[-2000:] if log and log.exists() else ""
            raise RuntimeError(f"the server exited with {proc.returncode}:\n{tail}")
        time.sleep(0.25)
    tail = log.read_text()[-2000:] if log and log.exists() else ""
    raise TimeoutError(f"{url} gave no 200 within {timeout} s\n{tail}")


def stop_process(proc: subprocess.Popen, timeout: float = 10.0) -> None:
    """Stop a server we started (with its own process group) by its PID: SIGTERM (Jupyter
    shuts down cleanly, kernels included), then SIGKILL if it lingers."""
    if proc.poll() is not None:
        return
    try:
        pgid = os.getpgid(proc.pid)
    except ProcessLookupError:
        return
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def clear_runs(runs: Path, timeout: float = 60.0) -> None:
    """Every run folder under ``runs`` removed, each job still going cancelled first and
    waited for (a module's jobs end with it; this is a guard, not the way they end)."""
    from skiff.jobs import list_jobs

    if not runs.is_dir():
        return
    going = [j for j in list_jobs(runs, metrics=False)
             if hasattr(j, "cancel") and not j.refresh().final]
    for job in going:
        job.cancel()
    deadline = time.monotonic() + timeout
    while any(not j.refresh().final for j in going) and time.monotonic() < deadline:
        time.sleep(0.1)
    for folder in runs.iterdir():
        if folder.is_dir():
            shutil.rmtree(folder, ignore_errors=True)
        else:
            folder.unlink(missing_ok=True)


_SHARED: dict[str, object] = {}


def shared(key: str, request, start):
    """One server per test session (per xdist worker), ``start()`` made when first asked
    for and stopped when pytest ends; later modules get it ``reset()`` to a fresh one's
    state. Starting a Jupyter server per module was ~96 s of the 312 s ``tests/browser``
    and ``tests/lab`` took at load 17-20 (round 38)."""
    server = _SHARED.get(key)
    if server is not None and server.proc is not None and server.proc.poll() is None:
        server.reset()
        return server
    if server is not None:
        server.stop()
    server = start()
    _SHARED[key] = server
    request.config.add_cleanup(server.stop)
    return server


class LabServer:
    """``jupyter lab`` from the venv on 127.0.0.1 with a token, serving a temp copy of
    ``notebooks/``, with the lab's own IPython profile (skiff loaded) as in ``make lab``."""

    def __init__(self, workdir: Path):
        self.workdir = Path(workdir)
        self.root = self.workdir / "notebooks"
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = self.workdir / "jupyter-lab.log"
        self.runs = self.root / "skiff-runs"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 60.0) -> LabServer:
        shutil.copytree(ROOT / "notebooks", self.root,
                        ignore=shutil.ignore_patterns("skiff-runs", ".ipynb_checkpoints",
                                                      "__pycache__"))
        lab = self.workdir / ".lab"
        subprocess.run([sys.executable, str(ROOT / "tools" / "lab_config.py"), str(lab)],
                       check=True)
        settings = self.workdir / "lab-settings"
        notes = settings / "@jupyterlab" / "apputils-extension"
        notes.mkdir(parents=True)
        # no news or update checks: the machine is offline, and their toasts cover the page
        (notes / "notification.jupyterlab-settings").write_text(
            json.dumps({"fetchNews": "false", "checkForUpdates": False}))
        env = dict(os.environ, IPYTHONDIR=str(lab / "ipython"),
                   JUPYTER_CONFIG_DIR=str(lab / "jupyter"),
                   JUPYTERLAB_SETTINGS_DIR=str(settings),
                   JUPYTERLAB_WORKSPACES_DIR=str(self.workdir / "workspaces"),
                   SKIFF_RUNS=str(self.runs), OPENBLAS_NUM_THREADS="1", MPLBACKEND="Agg")
        env.pop("SKIFF_QUICK", None)
        env["SKIFF_QUICK"] = "1"
        cmd = [str(VENV_BIN / "jupyter"), "lab", "--no-browser", "--ip=127.0.0.1",
               f"--port={self.port}", f"--IdentityProvider.token={self.token}",
               f"--ServerApp.root_dir={self.root}", "--ServerApp.port_retries=0",
               "--LabApp.expose_app_in_browser=True",
               "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
        if os.geteuid() == 0:
            cmd.append("--allow-root")  # test machines often run as root
        with open(self.log, "wb") as fh:
            self.proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env,
                                         cwd=self.root, start_new_session=True)
        wait_http(f"{self.url}/api/status?token={self.token}", timeout, self.proc, self.log)
        return self

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)

    def api(self, method: str, path: str):
        """JSON of ``method /PATH`` on the server (its REST API), None when it has none."""
        req = urllib.request.Request(f"{self.url}/{path}", method=method,
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=60) as resp:
            body = resp.read()
        return json.loads(body) if body else None

    def close_kernels(self, timeout: float = 60.0) -> None:
        """Shut down every session and kernel (the notebooks' kernels of a module's pages
        kept running after the pages closed)."""
        for session in self.api("GET", "api/sessions"):
            self.api("DELETE", f"api/sessions/{session['id']}")
        deadline = time.monotonic() + timeout
        while True:
            kernels = self.api("GET", "api/kernels")
            if not kernels:
                return
            for kernel in kernels:
                try:
                    self.api("DELETE", f"api/kernels/{kernel['id']}")
                except urllib.error.HTTPError as exc:  # gone meanwhile
                    if exc.code != 404:
                        raise
            if time.monotonic() > deadline:
                raise TimeoutError(f"kernels still running after {timeout} s: {kernels}")
            time.sleep(0.2)

    def reset(self) -> None:
        """A fresh server's state for the next test module, without starting one (11-19 s
        at load 17-20, seven times): no session or kernel, no run folder (the modules count
        the jobs of the runs root), no saved workspace (a reload without ``?reset`` brings
        back the last page's layout). The notebooks the modules wrote stay (each its own)."""
        self.close_kernels()
        clear_runs(self.runs)
        shutil.rmtree(self.workdir / "workspaces", ignore_errors=True)

    def notebook_url(self, name: str) -> str:
        # reset: open only this notebook, not the tabs a previous page left in the workspace
        return f"{self.url}/lab/tree/{name}?reset&token={self.token}"


class LabPage:
    """Helpers over a playwright page showing a JupyterLab notebook."""

    def __init__(self, page, server: LabServer):
        self.page = page
        self.server = server

    def open(self, name: str, timeout: float = 60.0) -> None:
        self.page.goto(self.server.notebook_url(name), timeout=timeout * 1000)
        self.wait_kernel_idle(timeout)

    def wait_kernel_idle(self, timeout: float = 60.0) -> None:
        self.page.wait_for_function(
            """() => {
                const app = window.jupyterapp;
                const w = app && app.shell.currentWidget;
                const k = w && w.sessionContext && w.sessionContext.session
                          && w.sessionContext.session.kernel;
                return k && k.status === 'idle' && w.content && w.content.widgets.length > 0;
            }""", timeout=timeout * 1000)

    def command(self, name: str, args: dict | None = None) -> None:
        self.page.evaluate("([n, a]) => window.jupyterapp.commands.execute(n, a)",
                           [name, args or {}])

    def run_all(self) -> None:
        self.command("notebook:run-all-cells")

    def run_until(self, text: str) -> None:
        """Run every cell above the first cell whose source contains ``text``."""
        index = self.page.evaluate(
            """(text) => {
                const nb = window.jupyterapp.shell.currentWidget.content;
                const i = nb.widgets.findIndex(c => c.model.sharedModel.getSource()
                                                     .includes(text));
                if (i >= 0) { nb.activeCellIndex = i; }
                return i;
            }""", text)
        if index < 0:
            raise AssertionError(f"no cell contains {text!r}")
        self.command("notebook:run-all-above")

    def kernel_execute(self, code: str) -> None:
        """Run code in the notebook's kernel without a cell (what another client would do)."""
        self.page.evaluate(
            """(code) => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel
                         .requestExecute({code: code, silent: false, store_history: false})
                         .done""", code)

    def save(self) -> None:
        self.page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
        self.page.wait_for_function(
            "() => !window.jupyterapp.shell.currentWidget.context.model.dirty",
            timeout=20_000)

    def wait_cells_done(self, timeout: float = 120.0) -> None:
        """Until no cell is queued or running (``[*]``) and the kernel is idle."""
        self.page.wait_for_function(
            """() => {
                const w = window.jupyterapp.shell.currentWidget;
                const k = w.sessionContext.session.kernel;
                const busy = [...document.querySelectorAll('.jp-InputPrompt')]
                    .some(e => e.textContent.includes('*'));
                return k.status === 'idle' && !busy;
            }""", timeout=timeout * 1000)

    def screenshot(self, name: str) -> Path:
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / name
        self.page.screenshot(path=str(path), full_page=False)
        return path

    def errors(self) -> list[str]:
        """Text of the error outputs in the notebook."""
        return self.page.locator(".jp-OutputArea-output[data-mime-type="
                                 "'application/vnd.jupyter.stderr']").all_inner_texts()


def launch_browser(playwright, profile: Path):
    """Debian's Chromium, headless, with a new empty profile."""
    return playwright.chromium.launch_persistent_context(
        str(profile), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
        viewport={"width": 1280, "height": 1000})
