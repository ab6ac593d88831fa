"""Cache integrity against the real server (issue #30 point 5; docs/reliability.md): only the result
of a compile that finished is cached, and an entry is used only when it is a regular file of an
entry's size that parses. Each case is two server processes sharing one cache folder: what the
first left behind must not answer the second."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from kernelscope.analysis.frontend.toolchain import locate_toolchain
from kernelscope.analysis.results import AnalysisResult

#: the test's own cache folder and nvcc count only in a trusted workspace (docs/configuration.md, "Security")
TRUSTED = {"workspaceTrusted": True}

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")


def _entries(cache_dir: Path) -> list[Path]:
    return sorted(cache_dir.glob("results-v*/*.json"))


async def test_a_fifo_a_huge_file_or_a_symlink_under_an_entrys_name_is_ignored_and_rebuilt(lsp, cache_dir):
    async with lsp(init_options=TRUSTED) as s:
        first = await s.open("tracked.cu")
        assert first["cache"] == "miss" and first["compiled"] is True
    (entry,) = _entries(cache_dir)
    plants = {
        "fifo": lambda p: os.mkfifo(p),  # a read blocks until a writer comes: the analysis hung
        "huge": lambda p: open(p, "wb").truncate(2**31),  # sparse; read whole, it cost 2 GiB
        "symlink to /dev/zero": lambda p: p.symlink_to("/dev/zero"),  # a read never ends
    }
    for name, plant in plants.items():
        entry.unlink()
        plant(entry)
        async with lsp(init_options=TRUSTED) as s:  # a new process: only the disk could answer
            done = await s.open("tracked.cu")
            assert done["cache"] == "miss" and done["compiled"] is True, (name, done)
            assert (await s.stats())["compilerRuns"] == 1, name
            assert any("cache: entry" in m.message and "deleted" in m.message for m in s.client.log_messages), \
                (name, (cache_dir / "server.log").read_text()[-4000:])
        st = entry.lstat()
        assert stat.S_ISREG(st.st_mode) and st.st_size < 2**30, name  # rebuilt as a real entry
        AnalysisResult.model_validate_json(entry.read_bytes())


async def test_a_compile_that_failed_for_the_machine_is_not_cached(lsp, cache_dir, tmp_path, monkeypatch):
    # nvcc writes its intermediate files to TMPDIR; one it cannot write to fails every compile
    monkeypatch.setenv("TMPDIR", str(tmp_path / "missing"))
    async with lsp(init_options=TRUSTED) as s:
        failed = await s.open("saxpy.cu")
        assert "error" in failed and "not of the file" in failed["error"], failed
        assert not [d for d in s.diagnostics("saxpy.cu") if "Could not open output file" in d.message]
    assert _entries(cache_dir) == []
    monkeypatch.delenv("TMPDIR")
    async with lsp(init_options=TRUSTED) as s:  # the machine is fixed: the file compiles
        done = await s.open("saxpy.cu")
        assert done["cache"] == "miss" and done["compiled"] is True, done
        assert (await s.stats())["compilerRuns"] == 1


async def test_a_compile_that_timed_out_is_not_cached(lsp, cache_dir, tmp_path):
    real = locate_toolchain().nvcc
    stall = tmp_path / "STALL"
    stall.touch()
    nvcc = tmp_path / "bin" / "nvcc"
    nvcc.parent.mkdir()
    # the same nvcc (so the same cache key) in both servers: stopped while STALL exists, as a
    # compiler stopped from outside (SIGSTOP) or starved of CPU is; its version probe always answers
    nvcc.write_text(f'#!/bin/sh\ncase "$*" in *--version*) ;; *) [ -e "{stall}" ] && sleep 300;; esac\n'
                    f'exec "{real}" "$@"\n')
    nvcc.chmod(0o755)
    settings = {"analysis": {"nvccPath": str(nvcc), "compileTimeoutS": 10}}
    async with lsp(settings, init_options=TRUSTED) as s:
        stopped = await s.open("saxpy.cu")
        assert "error" in stopped and "did not finish within 10 s" in stopped["error"], stopped
    assert _entries(cache_dir) == []
    stall.unlink()
    async with lsp(settings, init_options=TRUSTED) as s:
        done = await s.open("saxpy.cu")
        assert done["cache"] == "miss" and done["compiled"] is True, done
        assert (await s.stats())["compilerRuns"] == 1
