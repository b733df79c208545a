"""A real JupyterLab server on localhost, driven by headless Chromium through Playwright.

Used by ``tests/test_browser.py``. Nothing here is learner-facing.

- :func:`unavailable_reason` says why the browser test cannot run here (no Playwright,
  no Chromium, no JupyterLab), or ``None``.
- :class:`JupyterLab` starts ``jupyter lab`` on a free port of 127.0.0.1 with a random
  token and its own config, data, runtime, workspaces and settings folders, and stops
  it (and every kernel it started: they share its process group) on exit.
- :class:`LabPage` opens a notebook in the browser, runs all cells, reads errors,
  moves sliders with the keyboard and compares the figures before and after.
"""

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
CHROMIUM_NAMES = ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"]


def find_chromium():
    """The Chromium to drive: ``$CHROMIUM`` if set, else the first one on PATH (or None)."""
    if os.environ.get("CHROMIUM"):
        path = shutil.which(os.environ["CHROMIUM"])
        return path if path and os.access(path, os.X_OK) else None
    return next((shutil.which(name) for name in CHROMIUM_NAMES if shutil.which(name)), None)


@contextlib.contextmanager
def launched_chromium():
    """A headless Chromium driven by Playwright (the system's: :func:`find_chromium`), closed after."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_FLAGS)
        try:
            yield chromium
        finally:
            chromium.close()


def unavailable_reason(python=sys.executable):
    """Why the browser test cannot run here, or None when it can."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return ("Playwright's Python package is not installed "
                "(pip install -r requirements-browser.txt; .ci/run does it)")
    if find_chromium() is None:
        return ("no Chromium found ($CHROMIUM, or chromium on PATH; "
                "apt-get install chromium; .ci/run does it)")
    probe = subprocess.run([python, "-c", "import jupyterlab"], capture_output=True)
    if probe.returncode != 0:
        return f"JupyterLab is not installed for {python}"
    return None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def jupyterlab_major(python=sys.executable):
    out = subprocess.run([python, "-c", "import jupyterlab; print(jupyterlab.__version__)"],
                         capture_output=True, text=True, check=True).stdout
    return int(out.strip().split(".")[0])


class JupyterLab:
    """``with JupyterLab(root) as lab:`` -- a private JupyterLab server serving ``root``."""

    def __init__(self, root, state_dir, python=sys.executable, startup_timeout=90):
        self.root, self.state = Path(root), Path(state_dir)
        self.python, self.startup_timeout = python, startup_timeout
        self.port, self.token = free_port(), secrets.token_hex(16)
        self.process = None
        self.log_path = self.state / "jupyterlab.log"

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def _settings(self):
        """User settings: no news or update checks; JupyterLab 4 renders every cell."""
        settings = self.state / "settings"
        files = {"@jupyterlab/apputils-extension/notification.jupyterlab-settings":
                 {"fetchNews": "false", "checkForUpdates": False}}
        if jupyterlab_major(self.python) >= 4:
            files["@jupyterlab/notebook-extension/tracker.jupyterlab-settings"] = {"windowingMode": "none"}
        for name, value in files.items():
            (settings / name).parent.mkdir(parents=True, exist_ok=True)
            (settings / name).write_text(json.dumps(value))
        return settings

    def __enter__(self):
        for sub in ("config", "runtime", "workspaces", "ipython", "mpl"):
            (self.state / sub).mkdir(parents=True, exist_ok=True)
        env = dict(os.environ,
                   JUPYTER_CONFIG_DIR=str(self.state / "config"),
                   JUPYTER_RUNTIME_DIR=str(self.state / "runtime"),
                   IPYTHONDIR=str(self.state / "ipython"),
                   MPLCONFIGDIR=str(self.state / "mpl"),
                   JUPYTER_PLATFORM_DIRS="1")
        env.pop("PYTHONPATH", None)
        command = [self.python, "-m", "jupyter", "lab", "--no-browser",
                   "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}",
                   "--ServerApp.port_retries=0", f"--ServerApp.token={self.token}",
                   f"--ServerApp.root_dir={self.root}",
                   f"--LabApp.workspaces_dir={self.state / 'workspaces'}",
                   f"--LabApp.user_settings_dir={self._settings()}",
                   "--LabApp.expose_app_in_browser=True"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            command.append("--allow-root")     # CI runs as root
        log = open(self.log_path, "w")
        self.process = subprocess.Popen(command, cwd=self.root, env=env, stdout=log,
                                        stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        try:
            self._wait_until_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_until_ready(self):
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"jupyter lab exited ({self.process.returncode}):\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/api/status?token={self.token}", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.3)
        raise RuntimeError(f"jupyter lab did not answer within {self.startup_timeout} s:\n{self.log_tail()}")

    def log_tail(self, lines=40):
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self):
        """Stop the server, then anything left in its process group (its kernels)."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)   # the group is ours: start_new_session
        except ProcessLookupError:
            pass
        self.process.wait(timeout=10)

    def __exit__(self, *exc):
        self.stop()


# --- the page -------------------------------------------------------------------------------

# Synchronous on purpose: wait_for_function takes a returned Promise as "truthy".
_NOTEBOOK_READY = """() => {
  const app = window.jupyterapp;
  if (!app) return false;
  const w = app.shell.currentWidget;
  if (!w || !w.sessionContext || !w.content || !w.content.model || !w.context) return false;
  window.__courseNotebook = w;          // the notebook under test, whatever gets the focus later
  const kernel = w.sessionContext.session && w.sessionContext.session.kernel;
  return w.context.isReady && !!kernel && kernel.status === 'idle';
}"""

_PROGRESS = """() => {
  const w = window.__courseNotebook;
  let code = 0, executed = 0;
  const errors = [];
  w.content.widgets.forEach((cell, index) => {
    if (cell.model.type !== 'code') return;
    code += 1;
    if (cell.model.executionCount) executed += 1;
    for (const out of cell.model.outputs.toJSON()) {
      if (out.output_type === 'error') errors.push(`cell ${index}: ${out.ename}: ${out.evalue}`);
    }
  });
  const kernel = w.sessionContext.session && w.sessionContext.session.kernel;
  return {code, executed, errors, status: kernel ? kernel.status : 'none'};
}"""

# A traceback rendered anywhere in the notebook, widget outputs included.
_RENDERED_ERRORS = """() => {
  const found = [];
  document.querySelectorAll('.jp-Notebook .jp-OutputArea-output').forEach(el => {
    const text = el.innerText || '';
    if (text.includes('Traceback') || /\\b\\w+(Error|Exception)\\b:/.test(text)) found.push(text.slice(0, 400));
  });
  return found;
}"""

HANDLES = ".jp-Notebook .ui-slider-handle, .jp-Notebook .noUi-handle"   # ipywidgets 7 | 8


class LabPage:
    """One browser page on a running :class:`JupyterLab`."""

    def __init__(self, page, lab):
        self.page, self.lab = page, lab

    def open(self, path, timeout=90):
        # reset: a fresh workspace, so the notebooks opened before are not reopened (with kernels)
        self.page.goto(f"{self.lab.url}/lab/tree/{path}?reset&token={self.lab.token}")
        self.page.wait_for_function(_NOTEBOOK_READY, timeout=timeout * 1000, polling=250)

    def run_all(self, timeout=180):
        """Run all cells; wait until every code cell ran and the kernel is idle.

        Returns the list of error outputs ("cell N: Name: message"), empty when none.
        """
        self.page.evaluate("() => { window.jupyterapp.shell.activateById(window.__courseNotebook.id);"
                           " window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            progress = self.page.evaluate(_PROGRESS)
            if progress["errors"]:
                return progress["errors"]
            if progress["executed"] == progress["code"] and progress["status"] == "idle":
                time.sleep(0.5)   # let the last display messages render
                return self.page.evaluate(_PROGRESS)["errors"]
            time.sleep(0.25)
        raise TimeoutError(f"Run All did not finish within {timeout} s: {progress}")

    def rendered_errors(self):
        return self.page.evaluate(_RENDERED_ERRORS)

    def save(self):
        self.page.evaluate("() => window.__courseNotebook.context.save()")

    def shutdown_kernel(self):
        self.page.evaluate("async () => { await window.__courseNotebook.sessionContext.shutdown(); }")

    def sliders(self):
        """Every slider handle in the notebook's output (ipywidgets 7 or 8)."""
        return self.page.locator(HANDLES)

    @staticmethod
    def figures_of(handle):
        """The image sources of the cell holding ``handle`` (data: URLs: the figures' bytes)."""
        return handle.evaluate("""h => Array.from(h.closest('.jp-Cell').querySelectorAll('.jp-OutputArea img'))
                                          .map(img => img.getAttribute('src'))""")

    @staticmethod
    def readout_of(handle):
        return handle.evaluate("""h => { const s = h.closest('.widget-slider, .widget-hslider');
                                         const r = s && s.querySelector('.widget-readout');
                                         return r ? (r.value !== undefined && r.tagName === 'INPUT'
                                                     ? r.value : r.innerText) : null; }""")

    def move(self, handle, key, timeout=20):
        """Focus ``handle``, press ``key``; return (readout before, after, figures before, after)."""
        handle.scroll_into_view_if_needed()
        before_value, before = self.readout_of(handle), self.figures_of(handle)
        handle.focus()
        self.page.keyboard.press(key)
        deadline = time.monotonic() + timeout
        after = before
        while time.monotonic() < deadline:
            after = self.figures_of(handle)
            if after and after != before:
                time.sleep(0.3)           # the redraw may still be replacing the image
                after = self.figures_of(handle)
                break
            time.sleep(0.2)
        return before_value, self.readout_of(handle), before, after

    def screenshot(self, path, full=False):
        """The window as a learner sees it (1280 x 800), or the whole notebook (full=True)."""
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        if not full:
            self.page.screenshot(path=str(path))
            return
        size = self.page.viewport_size
        height = self.page.evaluate("""() => { const n = window.__courseNotebook.content.node;
                                             // JupyterLab 4 scrolls an inner element, 3 the node
                                             const o = n.querySelector('.jp-WindowedPanel-outer') || n;
                                             return o.scrollHeight; }""")
        self.page.set_viewport_size({"width": size["width"], "height": min(int(height) + 200, 16000)})
        time.sleep(0.5)
        self.page.evaluate("""() => { const n = window.__courseNotebook.content.node;
                                     (n.querySelector('.jp-WindowedPanel-outer') || n).scrollTop = 0; }""")
        time.sleep(0.5)
        self.page.screenshot(path=str(path))
        self.page.set_viewport_size(size)
