"""Hostile files beside the source (issue #30 point 3; docs/reliability.md): a workspace may hold a
`.cu` that is a symlink to /dev/zero, a FIFO, a symlink loop or a huge file. The includer search of
a kernel-only file reads the workspace's `.cu` files; it must skip these and finish normally.
The real command line in a subprocess, with a memory cap and a timeout: before the fix the
/dev/zero read grew without bound, the FIFO blocked for ever and the loop was an internal error."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernelscope.analysis.files import MAX_SOURCE_BYTES, UnreadableFile, read_regular

INCLUSION = Path(__file__).resolve().parents[1] / "inputs" / "inclusion"

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo") or not Path("/dev/zero").exists(),
                                reason="FIFOs and /dev/zero are POSIX")


def _hostile(folder: Path) -> None:
    """Every kind of file that is not a source, under a source's name."""
    (folder / "zero.cu").symlink_to("/dev/zero")
    os.mkfifo(folder / "fifo.cu")
    (folder / "loop").mkdir()
    (folder / "loop" / "a.cu").symlink_to("b.cu")
    (folder / "loop" / "b.cu").symlink_to("a.cu")
    (folder / "dangling.cu").symlink_to(folder / "nowhere.cu")
    with open(folder / "huge.cu", "wb") as f:  # sparse: costs no disk
        f.truncate(MAX_SOURCE_BYTES * 64)


def _cap_memory() -> None:
    # a runaway read ends as MemoryError (exit 3) instead of taking the machine; nvcc fits in this
    resource.setrlimit(resource.RLIMIT_AS, (8 * 2**30, 8 * 2**30))


def test_the_includer_search_skips_fifos_devices_loops_and_huge_files(tmp_path):
    ws = tmp_path / "ws"
    shutil.copytree(INCLUSION, ws)
    (ws / ".git").mkdir()  # the workspace's root: the search covers it all
    _hostile(ws)
    _hostile(ws / "loop")  # and in a sub-folder, nearer files first
    proc = subprocess.run([sys.executable, "-m", "kernelscope.cli", "analyze", str(ws / "kernels_impl.cu"),
                           "--quick", "--json"], capture_output=True, text=True, cwd=ws, timeout=300,
                          preexec_fn=_cap_memory)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    # kernels_impl.cu does not compile alone: it was found in main.cu's unit despite its neighbours
    assert result["compiled"] is True
    assert any("analysed in the translation unit of" in m["message"] and m["message"].rstrip().endswith(
        "includes this file") and "main.cu" in m["message"] for m in result["messages"]), result["messages"]
    assert [k["name"] for k in result["kernels"]] == ["unrolled_add(float*, float const*, int)"]


def test_a_header_is_analysed_in_its_includers_unit_beside_hostile_files(tmp_path):
    ws = tmp_path / "ws"
    shutil.copytree(INCLUSION, ws)
    (ws / ".kernelscope.toml").write_text("")
    _hostile(ws)
    proc = subprocess.run([sys.executable, "-m", "kernelscope.cli", "analyze", str(ws / "kernels.cuh"),
                           "--quick", "--json"], capture_output=True, text=True, cwd=ws, timeout=300,
                          preexec_fn=_cap_memory)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # main.cu's launch of tiled_scale<128> is what instantiates the template: found through main.cu
    assert sorted(k["name"] for k in json.loads(proc.stdout)["kernels"]) == [
        "fill(float*, int, float)", "void tiled_scale<128>(float*, int, int)"]


def test_read_regular_refuses_what_is_not_a_regular_file_of_a_sources_size(tmp_path):
    _hostile(tmp_path)
    (tmp_path / "real.cu").write_text("__global__ void k() {}\n")
    (tmp_path / "link.cu").symlink_to("real.cu")
    assert read_regular(tmp_path / "real.cu") == b"__global__ void k() {}\n"
    assert read_regular(tmp_path / "link.cu") == b"__global__ void k() {}\n"  # followed by default
    with pytest.raises(OSError):  # ELOOP: not followed when asked (a cache entry is never a symlink)
        read_regular(tmp_path / "link.cu", follow_symlinks=False)
    for name in ("zero.cu", "fifo.cu", "huge.cu"):
        with pytest.raises(UnreadableFile):
            read_regular(tmp_path / name)
    for name in ("loop/a.cu", "dangling.cu"):
        with pytest.raises(OSError):
            read_regular(tmp_path / name)


def test_a_verification_cache_entry_that_is_not_a_regular_file_is_ignored(tmp_path):
    from kernelscope.analysis.advisor.verify import VerificationCache

    os.mkfifo(tmp_path / "fifo.json")  # blocked the read until a writer came
    (tmp_path / "zero.json").symlink_to("/dev/zero")  # never ended it
    with open(tmp_path / "huge.json", "wb") as f:  # filled memory
        f.truncate(2**31)
    (tmp_path / "loop.json").symlink_to("loop.json")
    cache = VerificationCache(tmp_path)
    for name in ("fifo", "zero", "huge", "loop"):
        assert cache._path(name).is_symlink() or cache._path(name).exists()
        assert cache.get(name) is None, name
