"""Build and package the extension: `python vscode-client/scripts/build.py [OUT.vsix]`.

The same steps as `npm ci && npm run build && npx vsce package`, used by the tests; `npm ci`
is skipped when node_modules already matches package-lock.json, so reruns take seconds.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CLIENT = Path(__file__).resolve().parents[1]
_ENV = {**os.environ, "npm_config_update_notifier": "false", "npm_config_fund": "false", "npm_config_audit": "false"}


def _npm(*args: str, timeout: float = 600) -> None:
    proc = subprocess.run(args, cwd=CLIENT, env=_ENV, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed in {CLIENT}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")


def ensure_deps() -> None:
    # npm writes node_modules/.package-lock.json on every install: older than the lock = stale.
    stamp = CLIENT / "node_modules" / ".package-lock.json"
    if not stamp.exists() or stamp.stat().st_mtime < (CLIENT / "package-lock.json").stat().st_mtime:
        _npm("npm", "ci")


def build() -> Path:
    ensure_deps()
    _npm("npm", "run", "build", timeout=300)
    return CLIENT / "out" / "extension.js"


def package(out: Path) -> Path:
    build()
    _npm("npx", "vsce", "package", "--allow-missing-repository", "--skip-license", "-o", str(out), timeout=300)
    return out


if __name__ == "__main__":
    print(package(Path(sys.argv[1]) if len(sys.argv) > 1 else CLIENT / "kernelscope.vsix"))
