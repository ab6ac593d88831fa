"""The extension's own unit tests (node --test; the webview page and the settings filter),
plus a type-checked build. Needs node and npm; `npm ci` runs once per lock file change."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from _load import load_file

CLIENT = Path(__file__).resolve().parents[2] / "vscode-client"

pytestmark = [
    pytest.mark.skipif(shutil.which("npm") is None or shutil.which("node") is None,
                       reason="node and npm not installed (Debian: apt-get install -y nodejs npm)"),
    # `npm ci` and the build write vscode-client/ in place: one worker at a time (tests/editors/test_vscode.py)
    pytest.mark.xdist_group("vscode-client"),
]


def _build_module():
    return load_file(CLIENT / "scripts" / "build.py")


def test_extension_builds_and_its_unit_tests_pass():
    out = _build_module().build()  # tsc --noEmit, then the esbuild bundle
    assert out.stat().st_size > 0
    proc = subprocess.run(["npm", "test"], cwd=CLIENT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
