"""A real editor: headless Neovim attaches to the server, opens, edits, saves and hovers.

Assertions are on what Neovim itself received (vim.diagnostic, hover replies), written to
JSON by neovim_client.lua. Needs `nvim` (Debian: `apt-get install -y neovim`, 0.7.2).
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "data" / "lsp"

pytestmark = [
    pytest.mark.editor,
    pytest.mark.skipif(shutil.which("nvim") is None,
                       reason="nvim not installed (Debian/Ubuntu: apt-get install -y neovim)"),
]


def test_neovim_diagnostics_edit_save_hover(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    shutil.copy(DATA / "tracked.cu", root / "tracked.cu")
    out = tmp_path / "nvim.json"
    env = {**os.environ, "KS_OUT": str(out), "KS_FILE": str(root / "tracked.cu"), "KS_ROOT": str(root),
           "KS_PYTHON": sys.executable, "KS_CACHE": str(tmp_path / "cache"),
           "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "XDG_DATA_HOME": str(tmp_path / "xdg"),
           "XDG_STATE_HOME": str(tmp_path / "xdg"), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    proc = subprocess.run(["nvim", "--headless", "-i", "NONE", "-u", str(HERE / "neovim_client.lua")],
                          env=env, cwd=root, capture_output=True, text=True, timeout=300)
    assert out.exists(), f"Neovim wrote nothing (rc {proc.returncode}): {proc.stdout}\n{proc.stderr}"
    got = json.loads(out.read_text())
    assert "error" not in got, got["error"]

    # Open: the nvcc warning on `int unused` (0-based line 3), at `unused`. The server sent UTF-16
    # columns (what Neovim 0.7 negotiates); Neovim stores byte columns, so a wrong conversion on
    # this line ("é😀" before it) would show up here.
    assert got["encoding"] == "utf-16"
    nvcc = [d for d in got["opened"] if d["source"] == "nvcc"]
    assert [d["lnum"] for d in nvcc] == [3], got["opened"]
    line = (root / "tracked.cu").read_text(encoding="utf-8").split("\n")[5]  # after the save: 2 lines above
    assert "unused" in line
    assert nvcc[0]["col"] == len(line[:line.index("unused")].encode("utf-8")) and "unused" in nvcc[0]["message"]

    # Edit + :write: a second analysis, its warning two lines further down.
    assert len(got["finished"]) >= 2 and got["finished"][1]["reason"] == "save", got["finished"]
    assert [d["lnum"] for d in got["saved"] if d["source"] == "nvcc"] == [5]

    # Hover on the kernel's name, and on a line of its body: its SASS and the kernel's resources.
    assert isinstance(got["hover_kernel"], str) and got["hover_kernel"].startswith("### `twice"), got["hover_kernel"]
    hover = got["hover_line"]
    assert isinstance(hover, str) and "line 8 in `twice`" in hover, hover
    assert "```sass" in hover and "registers" in hover and "Provenance" in hover, hover
