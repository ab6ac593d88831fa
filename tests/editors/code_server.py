"""code-server 4.100.3 (VS Code 1.100.3): install once into a cache, run per test.

4.100.3 is the newest code-server that runs on node 20. A plain `npm install` of it fails here
(kerberos needs system headers, the root postinstall wants --unsafe-perm, @vscode/ripgrep
downloads from an unreachable host), so this repeats the package's postinstall by hand with
Debian's rg (the recipe in the shared editors notes). `python tests/editors/code_server.py`
installs it without running the tests.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

VERSION = "4.100.3"
CACHE = Path(os.environ.get("KERNELSCOPE_CI_CACHE", Path.home() / ".cache" / "kernelscope-ci")) / "code-server"
#: the system packages the install and the run need (Debian names)
APT_PACKAGES = ["chromium", "ripgrep", "libkrb5-dev", "libxkbfile-dev", "libx11-dev", "libsecret-1-dev", "pkg-config"]


def binary(root: Path = CACHE) -> Path:
    return root / VERSION / "node_modules" / "code-server" / "out" / "node" / "entry.js"


def _run(cmd: list[str], cwd: Path, log) -> None:
    log.write(f"$ (cd {cwd} && {' '.join(cmd)})\n")
    log.flush()
    env = {**os.environ, "npm_config_yes": "true", "npm_config_update_notifier": "false",
           "npm_config_fund": "false", "npm_config_audit": "false"}
    subprocess.run(cmd, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, check=True, timeout=900)


def install(root: Path = CACHE) -> Path:
    """Install code-server under `root/VERSION` unless it is there; returns entry.js.

    It is built in a scratch folder and renamed into place, under a lock, so an interrupted
    or concurrent install never leaves a half-built one to be used.
    """
    if binary(root).exists():
        return binary(root)
    rg = shutil.which("rg")
    if rg is None:
        raise RuntimeError("ripgrep (rg) is needed to install code-server: apt-get install -y ripgrep")
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if binary(root).exists():  # another process finished it while we waited
            return binary(root)
        prefix = root / f"{VERSION}.partial"
        shutil.rmtree(prefix, ignore_errors=True)
        prefix.mkdir()
        with open(root / "install.log", "w") as log:
            try:
                _install_into(prefix, rg, log)
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
                raise RuntimeError(f"installing code-server failed ({e}); see {root / 'install.log'}") from e
        prefix.rename(root / VERSION)
    return binary(root)


def _install_into(prefix: Path, rg: str, log) -> None:
    # What code-server's own postinstall does, minus the steps that cannot work here.
    _run(["npm", "install", "--ignore-scripts", "--prefix", str(prefix), f"code-server@{VERSION}"], prefix, log)
    vs = prefix / "node_modules" / "code-server" / "lib" / "vscode"
    _run(["npm", "install", "--unsafe-perm", "--omit=dev", "--ignore-scripts"], vs, log)
    rg_dir = vs / "node_modules" / "@vscode" / "ripgrep" / "bin"  # its postinstall downloads rg
    rg_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy(rg, rg_dir / "rg")
    _run(["npm", "rebuild", "--unsafe-perm"], vs, log)  # native modules (node-pty, spdlog, kerberos)
    _symlink(vs / "node_modules.asar", "node_modules")
    _symlink(vs / "bin" / "remote-cli" / "code-server", "code-linux.sh")
    _symlink(vs / "bin" / "helpers" / "browser.sh", "browser-linux.sh")
    _run(["npm", "install", "--unsafe-perm", "--omit=dev"], vs / "extensions", log)
    _run(["npm", "rebuild", "argon2", "--unsafe-perm"], prefix, log)


def _symlink(link: Path, target: str) -> None:
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(target)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cli(entry: Path, *args: str, data: Path, extensions: Path, config: Path, timeout: float = 120) -> str:
    """A one-shot code-server command (e.g. --install-extension) against the test's own dirs."""
    proc = subprocess.run(["node", str(entry), "--config", str(config), "--user-data-dir", str(data),
                           "--extensions-dir", str(extensions), *args],
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"code-server {' '.join(args)} failed: {proc.stdout}\n{proc.stderr}")
    return proc.stdout


class Server:
    """A running code-server in its own process group: it leaves a fileWatcher child behind,
    so stopping it means signalling the whole group."""

    def __init__(self, entry: Path, workspace: Path, tmp: Path, settings: dict):
        self.port = free_port()
        self.data = tmp / "data"
        self.extensions = tmp / "ext"
        self.config = tmp / "config.yaml"
        self.log_path = tmp / "code-server.log"
        user = self.data / "User"
        user.mkdir(parents=True, exist_ok=True)
        (user / "settings.json").write_text(json.dumps(settings, indent=2))
        self.config.write_text("auth: none\n")
        self.entry = entry
        self.workspace = workspace
        self.proc: subprocess.Popen | None = None

    def install_extension(self, vsix: Path) -> str:
        return cli(self.entry, "--install-extension", str(vsix), data=self.data, extensions=self.extensions,
                   config=self.config)

    def start(self, env: dict[str, str] | None = None) -> str:
        log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            ["node", str(self.entry), "--bind-addr", f"127.0.0.1:{self.port}", "--auth", "none",
             "--disable-telemetry", "--disable-update-check",
             "--config", str(self.config), "--user-data-dir", str(self.data),
             "--extensions-dir", str(self.extensions), str(self.workspace)],
            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        url = f"http://127.0.0.1:{self.port}/"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"code-server exited: {self.log_path.read_text()}")
            with contextlib.suppress(OSError):
                urllib.request.urlopen(url + "healthz", timeout=2).read()
                return url
            time.sleep(0.2)
        raise RuntimeError(f"code-server did not answer on {url}: {self.log_path.read_text()}")

    def stop(self) -> None:
        if self.proc is None:
            return
        stop_group(self.proc)
        self.proc = None


def stop_group(proc: subprocess.Popen, grace: float = 5.0) -> None:
    """SIGTERM the process group the process leads, then SIGKILL what is left."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace)


if __name__ == "__main__":
    t = time.monotonic()
    print(install(), f"({time.monotonic() - t:.0f} s)", file=sys.stderr)
