"""Security: a cloned repository must not make the server run its programs, and file names are never shell text.

A workspace file (.kernelscope.toml, [tool.kernelscope] in pyproject.toml) that names a program
(`analysis.nvccPath`, `analysis.compileCommands`) counts only once the user trusts the workspace
(initializationOptions `workspaceTrusted: true`, as the VS Code extension sends, or the
`kernelscope/didGrantWorkspaceTrust` notification later); `-ccbin` in its `analysis.flags` never does.
The same setting from the editor counts in a trusted workspace (RawServer's default); the whole trust
model is tested in tests/lsp/test_trust.py.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from kernelscope.analysis.frontend.toolchain import locate_toolchain

from .client import RawServer

pytestmark = pytest.mark.slow


def _fake_nvcc(dirpath: Path, marker: Path) -> Path:
    """An 'nvcc' that leaves a marker file, then runs the real one (so analyses still work)."""
    real = locate_toolchain().nvcc
    script = dirpath / "nvcc"
    script.write_text(f"#!/bin/sh\ntouch '{marker}'\nexec '{real}' \"$@\"\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return script


@pytest.fixture
def repo(examples_ws: Path, tmp_path: Path):
    """A 'cloned repository' whose .kernelscope.toml points nvccPath at a script inside it."""
    marker = tmp_path / "MARKER-nvcc-ran"
    tools = examples_ws / "tools"
    tools.mkdir()
    script = _fake_nvcc(tools, marker)
    (examples_ws / ".kernelscope.toml").write_text(f'[analysis]\nnvccPath = "{script}"\nemulate = false\n')
    return examples_ws, marker, script


def _analyse_one(server: RawServer, name: str = "strided_access.cu") -> dict:
    n = len(server.notifications)
    server.open(name)
    return server.finished(server.uri(name), n)


def test_untrusted_workspace_file_nvcc_never_runs(repo, tmp_path):
    root, marker, _ = repo
    with RawServer(root, {"cache": {"directory": str(tmp_path / "c1")}}, init_options={"workspaceTrusted": False}) as s:
        s.initialize()
        done = _analyse_one(s)
        assert done.get("compiled") is True, done  # analysed with the toolchain found on the usual search path
        assert not marker.exists(), "the workspace's nvccPath ran in an untrusted workspace"
        assert any("not trusted" in m and "analysis.nvccPath" in m for m in s.messages()), s.messages()
        assert s.shutdown() == 0


def test_no_trust_information_means_untrusted(repo, tmp_path):
    root, marker, _ = repo
    with RawServer(root, {"cache": {"directory": str(tmp_path / "c2")}}, init_options=None) as s:  # says nothing
        s.initialize()
        assert _analyse_one(s).get("compiled") is True
        assert not marker.exists()
        assert s.shutdown() == 0


def test_trusted_workspace_file_nvcc_is_used(repo, tmp_path):
    root, marker, _ = repo
    with RawServer(root, {"cache": {"directory": str(tmp_path / "c3")}}, init_options={"workspaceTrusted": True}) as s:
        s.initialize()
        assert _analyse_one(s).get("compiled") is True
        assert marker.exists(), "a trusted workspace's nvccPath was not used"
        assert not any("not trusted" in m for m in s.messages())
        assert s.shutdown() == 0


def test_trust_granted_later_takes_effect(repo, tmp_path):
    root, marker, _ = repo
    with RawServer(root, {"cache": {"directory": str(tmp_path / "c4")}}, init_options={"workspaceTrusted": False}) as s:
        s.initialize()
        uri = s.uri("strided_access.cu")
        _analyse_one(s)
        assert not marker.exists()
        n = len(s.notifications)
        s.notify("kernelscope/didGrantWorkspaceTrust", {"workspaceTrusted": True})
        s.finished(uri, n)  # the settings changed (nvccPath now counts): the open file is analysed again
        assert marker.exists()
        assert s.shutdown() == 0


def test_user_level_nvcc_path_runs_in_a_trusted_workspace(examples_ws, tmp_path):
    marker = tmp_path / "MARKER-user"
    script = _fake_nvcc(tmp_path, marker)
    with RawServer(examples_ws, {"analysis": {"nvccPath": str(script), "emulate": False},
                                 "cache": {"directory": str(tmp_path / "c5")}}) as s:
        s.initialize()
        assert _analyse_one(s).get("compiled") is True
        assert marker.exists(), "the user's own nvccPath setting was not used"
        assert s.shutdown() == 0


def test_untrusted_workspace_flags_cannot_pick_a_host_compiler(examples_ws, tmp_path):
    marker = tmp_path / "MARKER-ccbin"
    evil = tmp_path / "evil-gcc"
    evil.write_text(f"#!/bin/sh\ntouch '{marker}'\nexec g++ \"$@\"\n")
    evil.chmod(0o755)
    (examples_ws / ".kernelscope.toml").write_text(f'[analysis]\nflags = ["-ccbin={evil}"]\nemulate = false\n')
    with RawServer(examples_ws, {"cache": {"directory": str(tmp_path / "c6")}}) as s:
        s.initialize()
        _analyse_one(s)
        assert not marker.exists()
        assert any("analysis.flags" in m for m in s.messages()), s.messages()
        assert s.shutdown() == 0


#: nvcc itself hands paths to /bin/sh inside double quotes: `;`, `&`, `|`, `>`, `'` and spaces are safe
#: there and the file is analysed; `$`, backticks, `"` and `\\` would be shell syntax, so the compile is
#: refused with a message (before this check, `$(touch x).cu` made nvcc create `x`).
NAMES = [("a; touch pwned.cu", True), ("it's & | > z.cu", True), ("$(touch x).cu", False), ("`touch y`.cu", False),
         ('q"; touch z.cu', False)]


@pytest.mark.parametrize("name,analysable", NAMES, ids=[n for n, _ in NAMES])
def test_file_names_are_never_shell_text(examples_ws, tmp_path, name, analysable):
    src = examples_ws / "strided_access.cu"
    shutil.copy(src, examples_ws / name)
    before = set(os.listdir(examples_ws)) | set(os.listdir(tmp_path))
    with RawServer(examples_ws, {"analysis": {"emulate": False}, "cache": {"directory": str(tmp_path / "c7")}}) as s:
        s.initialize()
        done = _analyse_one(s, name)
        if analysable:
            assert done.get("compiled") is True and "error" not in done, done
        else:
            assert "nvcc passes file paths to a shell" in done.get("error", ""), done
            assert any("Rename the file" in m for m in s.messages())
        assert s.alive() and s.stats()["openDocuments"] == 1
        assert s.shutdown() == 0
    after = set(os.listdir(examples_ws)) | set(os.listdir(tmp_path))
    new = after - before - {"c7"}
    assert not {f for f in new if not f.startswith("server-")}, f"files appeared: {new}"
    for marker in ("pwned.cu", "x", "y", "z.cu"):
        assert not (examples_ws / marker).exists() and not Path(marker).exists()
