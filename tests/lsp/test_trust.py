"""The trust model (server/settings.py `screen`, docs/configuration.md "Security"), end to end over stdio.

A cloned repository's .kernelscope.toml / pyproject.toml, and the editor's settings of an untrusted
workspace (the server cannot tell them from a repository's .vscode/settings.json), never choose a
program, a flag that reaches a shell or the host compiler, capture, or the cache location. Each case
is a real server, real files and a real nvcc; a marker file proves that nothing ran, and a
positive control where one is possible proves that the marker would have appeared.
"""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

UNTRUSTED = {"workspaceTrusted": False}
#: an untrusted session leaves the cache to the server (the editor's cache.directory would be set aside): `own_cache`
NO_CACHE = {"cache": {}}
#: a kernel that compiles only when the user's -D reached nvcc
NEEDS_MACRO = """#ifndef KS_TILE
#error "KS_TILE is not defined: the flag did not reach nvcc"
#endif
__global__ void scale(float* a, int n) {
  int i = blockIdx.x * KS_TILE + threadIdx.x;
  if (i < n) a[i] *= 2.0f;
}
"""


def refusals(s) -> list[str]:
    return [m.message for m in s.client.messages if "settings not used" in m.message]


@pytest.fixture
def own_cache(tmp_path: Path, monkeypatch) -> Path:
    """Where the server's default cache goes when the editor's cache.directory is set aside (the
    user cache dir, under XDG_CACHE_HOME): this test's own, never the machine's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "kernelscope"


@pytest.mark.parametrize("file,table", [
    (".kernelscope.toml", "[analysis]\nflags = [\"-O3\", \"-DKS=$(touch {marker})\"]\n"),
    ("pyproject.toml", "[tool.kernelscope.analysis]\nflags = [\"-UKS`touch {marker}`\"]\n"),
], ids=["dollar-paren-in-D", "backtick-in-U"])
async def test_workspace_file_flags_with_shell_text_never_reach_a_shell(lsp, workspace, tmp_path, file, table):
    marker = tmp_path / "MARKER-shell"
    (workspace / file).write_text(table.format(marker=marker), encoding="utf-8")
    async with lsp() as s:  # even a trusted workspace's file: flags that are not the user's own
        done = await s.open("saxpy.cu")
        assert done.get("compiled") is True, done  # analysed, without the refused flags
        assert not marker.exists(), "a workspace file's flag reached a shell"
        (msg,) = refusals(s)
        assert f"kernelscope.analysis.flags from {workspace / file}" in msg and "a shell would interpret" in msg


async def test_workspace_file_cannot_forward_a_host_compiler_directory(lsp, workspace, tmp_path, own_cache):
    # `--forward-unknown-to-host-compiler -B<dir>/` makes gcc run <dir>/cc1plus: the repository's own.
    marker = tmp_path / "MARKER-cc1plus"
    tools = workspace / "tools"
    tools.mkdir()
    for name in ("cc1plus", "cc1", "as"):
        (tools / name).write_text(f"#!/bin/sh\ntouch '{marker}'\nexit 1\n")
        (tools / name).chmod(0o755)
    (workspace / ".kernelscope.toml").write_text(
        f'[analysis]\nflags = ["--forward-unknown-to-host-compiler", "-B{tools}/"]\n', encoding="utf-8")
    async with lsp(NO_CACHE, init_options=None) as s:
        done = await s.open("saxpy.cu")
        assert not marker.exists(), "the workspace's cc1plus ran"
        assert done.get("compiled") is True, done
        (msg,) = refusals(s)
        assert f"kernelscope.analysis.flags from {workspace / '.kernelscope.toml'}" in msg
        assert "'--forward-unknown-to-host-compiler' is not on the allow-list" in msg


async def test_allowed_workspace_file_flags_apply_untrusted(lsp, workspace, own_cache):
    (workspace / ".kernelscope.toml").write_text(
        '[analysis]\nflags = ["-DKS_TILE=128", "-O3", "-std=c++17", "--expt-relaxed-constexpr", "-lineinfo"]\n',
        encoding="utf-8")
    (workspace / "kernel.cu").write_text(NEEDS_MACRO, encoding="utf-8")
    async with lsp(NO_CACHE, init_options=None) as s:
        done = await s.open("kernel.cu")
        assert done.get("compiled") is True, done  # KS_TILE came from the file
        assert refusals(s) == []


async def test_trusted_users_own_flags_are_used_as_written(lsp, workspace):
    (workspace / "kernel.cu").write_text(NEEDS_MACRO, encoding="utf-8")
    async with lsp({"analysis": {"flags": ["-DKS_TILE=64", "-Xcompiler", "-Wall"]}}) as s:  # trusted (conftest)
        done = await s.open("kernel.cu")
        assert done.get("compiled") is True, done
        assert refusals(s) == []


async def test_untrusted_editor_flags_pass_the_allow_list(lsp, workspace, tmp_path, own_cache):
    marker = tmp_path / "MARKER-editor-flag"
    async with lsp({"analysis": {"flags": [f"-DKS=$(touch {marker})"]}, **NO_CACHE}, init_options=UNTRUSTED) as s:
        done = await s.open("saxpy.cu")
        assert done.get("compiled") is True, done
        assert not marker.exists(), "an untrusted workspace's editor flag reached a shell"
        (msg,) = refusals(s)
        assert "kernelscope.analysis.flags from the editor's settings" in msg and "not trusted" in msg


def _capture_program(workspace: Path, marker: Path) -> str:
    """A single-file program whose main() leaves `marker` when it runs (launch capture runs it)."""
    (workspace / "app.cu").write_text(f"""#include <cstdio>
__global__ void twice(float* a, int n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] *= 2.0f;
}}
int main() {{
  FILE* f = fopen("{marker}", "w");
  if (f) fclose(f);
  float* a;
  cudaMalloc(&a, 4096 * sizeof(float));
  twice<<<16, 256>>>(a, 4096);
  cudaDeviceSynchronize();
  return 0;
}}
""", encoding="utf-8")
    return "app.cu"


async def test_capture_from_untrusted_editor_settings_runs_nothing_until_trusted(lsp, workspace, tmp_path, own_cache):
    marker = tmp_path / "MARKER-main"
    name = _capture_program(workspace, marker)
    # What VS Code sends when a repository's .vscode/settings.json turns capture on.
    async with lsp({"capture": {"enabled": True}, **NO_CACHE}, init_options=UNTRUSTED) as s:
        done = await s.open(name)
        assert done.get("compiled") is True, done
        assert not marker.exists(), "the untrusted workspace's main() ran"
        # capture is on by default, and VS Code sends every default: the editor's value is the
        # default's, off without a word until the workspace is trusted
        assert refusals(s) == []
        # Positive control: once the user trusts the workspace, the same setting captures (main() runs).
        n = len(s.finished)
        s.client.protocol.notify("kernelscope/didGrantWorkspaceTrust", {"workspaceTrusted": True})
        done = await s.wait_finished(s.uri(name), n)
        assert done.get("compiled") is True, done
        assert marker.exists(), "trust did not turn capture on: the test proves nothing"


async def test_capture_from_a_workspace_file_waits_for_trust(lsp, workspace, tmp_path, own_cache):
    marker = tmp_path / "MARKER-main-file"
    name = _capture_program(workspace, marker)
    (workspace / ".kernelscope.toml").write_text("[capture]\nenabled = true\n", encoding="utf-8")
    async with lsp(NO_CACHE, init_options=None, capture=None) as s:
        assert (await s.open(name)).get("compiled") is True
        assert not marker.exists(), "the workspace file's capture ran main()"
        (msg,) = refusals(s)
        assert f"kernelscope.capture from {workspace / '.kernelscope.toml'}" in msg


async def test_workspace_file_never_chooses_the_cache(lsp, workspace, tmp_path, own_cache):
    forged = workspace / ".forged-cache"
    forged.mkdir()
    (workspace / ".kernelscope.toml").write_text(f'[cache]\ndirectory = "{forged}"\n', encoding="utf-8")
    # Trusted, and the editor leaves the cache alone: the file's value would count if anything let it.
    async with lsp({"cache": {"maxMegabytes": 64}}) as s:
        done = await s.open("saxpy.cu")
        assert done.get("cache") == "miss" and done.get("compiled") is True, done
        (msg,) = refusals(s)
        assert f"kernelscope.cache.directory from {workspace / '.kernelscope.toml'}" in msg
        assert "Manage Workspace Trust" not in msg  # trust does not lift it
    assert list(forged.iterdir()) == []
    assert (own_cache / "server.log").is_file() and list(own_cache.glob("results-v*/*.json"))


async def test_untrusted_editor_settings_do_not_choose_the_cache(lsp, workspace, cache_dir, own_cache):
    async with lsp(init_options=None) as s:  # conftest's settings name cache_dir
        done = await s.open("saxpy.cu")
        assert done.get("compiled") is True, done
        (msg,) = refusals(s)
        assert "kernelscope.cache.directory from the editor's settings" in msg
    assert not cache_dir.exists()
    assert list(own_cache.glob("results-v*/*.json"))


async def test_untrusted_editor_nvcc_path_never_runs(lsp, workspace, tmp_path, own_cache):
    marker = tmp_path / "MARKER-nvcc"
    script = tmp_path / "nvcc"
    script.write_text(f"#!/bin/sh\ntouch '{marker}'\nexit 1\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    async with lsp({"analysis": {"nvccPath": str(script)}, **NO_CACHE}, init_options=UNTRUSTED) as s:
        done = await s.open("saxpy.cu")
        assert not marker.exists(), "the untrusted workspace's nvccPath ran"
        assert done.get("compiled") is True, done  # with the nvcc found by itself
        (msg,) = refusals(s)
        assert "kernelscope.analysis.nvccPath from the editor's settings" in msg
        # Positive control: once the user trusts the workspace, the setting counts.
        n = len(s.finished)
        s.client.protocol.notify("kernelscope/didGrantWorkspaceTrust", {"workspaceTrusted": True})
        done = await s.wait_finished(s.uri("saxpy.cu"), n)
        assert "error" in done and marker.exists()  # the user's script ran, and is not an nvcc


async def test_capture_is_on_by_default_in_a_trusted_workspace_and_silently_off_in_an_untrusted_one(
        lsp, workspace, tmp_path, own_cache):
    marker = tmp_path / "MARKER-default"
    name = _capture_program(workspace, marker)
    async with lsp(NO_CACHE, init_options=UNTRUSTED, capture=None) as s:  # nothing said about capture
        assert (await s.open(name)).get("compiled") is True
        assert not marker.exists(), "the untrusted workspace's main() ran"
        assert refusals(s) == []  # a default asks for nothing, so nothing is refused aloud
    async with lsp(capture=None) as s:  # trusted, nothing said about capture: the program's real launches
        assert (await s.open(name)).get("compiled") is True
        assert marker.exists(), "capture is not on by default in a trusted workspace"
