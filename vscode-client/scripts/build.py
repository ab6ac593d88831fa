"""Build and package the extension: `python vscode-client/scripts/build.py [OUT.vsix]`.

The same steps as `npm ci && npm run build && npx vsce package`, used by the tests; `npm ci`
is skipped when node_modules already matches package-lock.json, so reruns take seconds. Callers in
parallel (the test workers) take turns: two `npm ci` in one node_modules remove each other's files.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CLIENT = Path(__file__).resolve().parents[1]
_ENV = {**os.environ, "npm_config_update_notifier": "false", "npm_config_fund": "false", "npm_config_audit": "false"}


def _npm(*args: str, timeout: float = 600) -> None:
    proc = subprocess.run(args, cwd=CLIENT, env=_ENV, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed in {CLIENT}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")


@contextmanager
def _turn() -> Iterator[None]:
    """This checkout's build to this process alone until the block ends (an flock: the kernel drops
    it when a holder dies, so no stale lock survives a killed test run)."""
    with open(CLIENT / "out.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def ensure_deps() -> None:
    # npm writes node_modules/.package-lock.json on every install: older than the lock = stale.
    stamp = CLIENT / "node_modules" / ".package-lock.json"
    if not stamp.exists() or stamp.stat().st_mtime < (CLIENT / "package-lock.json").stat().st_mtime:
        _npm("npm", "ci")


def _build() -> Path:
    ensure_deps()
    _npm("npm", "run", "build", timeout=300)
    return CLIENT / "out" / "extension.js"


def build() -> Path:
    with _turn():
        return _build()


def package(out: Path) -> Path:
    with _turn():  # the package reads out/, which another caller's build would rewrite meanwhile
        _build()
        _npm("npx", "vsce", "package", "--allow-missing-repository", "--skip-license", "-o", str(out), timeout=300)
    return out


if __name__ == "__main__":
    print(package(Path(sys.argv[1]) if len(sys.argv) > 1 else CLIENT / "kernelscope.vsix"))
