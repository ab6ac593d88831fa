"""Fault injection: killed compilers, broken caches, a broken nvdisasm, misbehaving profiled programs,
cancellation storms. After each: a clear message, the server still serves, no orphan processes."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from kernelscope.analysis.measure.errors import ProfileTimeoutError
from kernelscope.analysis.measure.target import ProfileTarget, execute
from kernelscope.analysis.process import CancelToken, Cancelled, run_tool
from kernelscope.analysis.frontend.toolchain import locate_toolchain

from .client import RawServer, process_rss, processes_of
from .conftest import report, scaled

pytestmark = pytest.mark.slow
NAME = "sgemm_tiled.cu"


def _settings(tmp_path: Path, **extra) -> dict:
    return {"analysis": {"emulate": False}, "debounceMs": 0, "cache": {"directory": str(tmp_path / "cache")}, **extra}


def _no_orphans(server: RawServer, root: Path) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        left = [p for p in processes_of(mentioning=str(root)) if p[0] != server.proc.pid]
        if not left:
            return
        time.sleep(0.2)
    raise AssertionError(f"orphans: {left}")


def test_compiler_killed_from_outside_then_next_save_works(examples_ws: Path, tmp_path: Path):
    with RawServer(examples_ws, _settings(tmp_path)) as s:
        s.initialize()
        uri = s.uri(NAME)
        n = len(s.notifications)
        s.open(NAME)
        deadline = time.monotonic() + 60
        victims: list[tuple[int, str]] = []
        while not victims and time.monotonic() < deadline:
            victims = [p for p in processes_of(mentioning=str(examples_ws / NAME)) if p[0] != s.proc.pid]
            time.sleep(0.01)
        assert victims, "no compiler process seen"
        for pid, _ in victims:
            try:
                os.killpg(os.getpgid(pid), signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        done = s.finished(uri, n, timeout=60)
        assert done.get("compiled") is False or "error" in done, done  # reported, not hidden
        assert s.alive()
        n = len(s.notifications)
        s.save(NAME)
        assert s.finished(uri, n, timeout=120).get("compiled") is True
        _no_orphans(s, examples_ws)
        assert s.shutdown() == 0


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty"])
def test_corrupt_disk_cache_is_rebuilt(examples_ws: Path, tmp_path: Path, damage: str):
    settings = _settings(tmp_path)
    with RawServer(examples_ws, settings) as s:
        s.initialize()
        n = len(s.notifications)
        s.open(NAME)
        assert s.finished(s.uri(NAME), n, timeout=120).get("compiled") is True
        assert s.shutdown() == 0
    entries = list((tmp_path / "cache").rglob("*.json"))
    assert entries
    for f in entries:
        data = f.read_bytes()
        f.write_bytes({"garbage": os.urandom(len(data)), "truncated": data[: len(data) // 2], "empty": b""}[damage])
    with RawServer(examples_ws, settings) as s:
        s.initialize()
        n = len(s.notifications)
        s.open(NAME)
        done = s.finished(s.uri(NAME), n, timeout=120)
        assert done.get("compiled") is True and done.get("cache") == "miss", done
        assert s.shutdown() == 0


def test_unwritable_cache_falls_back_to_memory(examples_ws: Path, tmp_path: Path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory should be")  # fails for root too, unlike chmod 0555
    ro = tmp_path / "ro"
    ro.mkdir()
    for cache_dir in (blocker, ro):
        if cache_dir is ro:
            ro.chmod(0o555)
        try:
            with RawServer(examples_ws, {**_settings(tmp_path), "cache": {"directory": str(cache_dir)}}) as s:
                s.initialize()
                uri = s.uri(NAME)
                n = len(s.notifications)
                s.open(NAME)
                assert s.finished(uri, n, timeout=120).get("compiled") is True
                n = len(s.notifications)
                s.save(NAME)
                assert s.finished(uri, n, timeout=60).get("cache") == "hit (memory)"
                assert s.shutdown() == 0
        finally:
            ro.chmod(0o755)


def test_broken_nvdisasm_gives_one_clear_message(examples_ws: Path, tmp_path: Path):
    tools = tmp_path / "cuda-bin"
    tools.mkdir()
    # A wrapper, not a symlink: the locator also looks beside the symlink's target, where the pip
    # wheel keeps a working nvdisasm.
    (tools / "nvcc").write_text(f'#!/bin/sh\nexec "{locate_toolchain().nvcc}" "$@"\n')
    (tools / "nvcc").chmod(0o755)
    fake = tools / "nvdisasm"  # found first (beside nvcc), and fails like a missing shared library
    fake.write_text("#!/bin/sh\necho 'nvdisasm: error while loading shared libraries: libnvdisasm.so' >&2\nexit 127\n")
    fake.chmod(0o755)
    # A call to a function of another translation unit (-rdc=true) leaves a relocation in the
    # code, and the cubin decoder declines any (its text would name a symbol), so these cubins
    # need nvdisasm (the rest are decoded without it: docs/toolchain.md; device printf was the
    # example until the encoding tables learned its CALL.ABS).
    for k in (1, 2):
        (examples_ws / f"extern_call{k}.cu").write_text(
            f"extern __device__ int twice(int);\n__global__ void k{k}(int* o) {{ o[threadIdx.x] = twice(threadIdx.x); }}\n")
    with RawServer(examples_ws, _settings(tmp_path, analysis={"emulate": False, "flags": ["-rdc=true"],
                                                              "nvccPath": str(tools / "nvcc")})) as s:
        s.initialize()
        for name in ("extern_call1.cu", "extern_call2.cu"):
            n = len(s.notifications)
            s.open(name)
            done = s.finished(s.uri(name), n, timeout=120)
            assert "error" in done, done
        popups = s.messages()
        assert len(popups) == 1 and "nvdisasm" in popups[0], popups
        assert s.stats()["openDocuments"] == 2
        assert s.shutdown() == 0


def test_hundred_cancellations_in_a_row(examples_ws: Path, tmp_path: Path):
    rounds = scaled(100)
    with RawServer(examples_ws, _settings(tmp_path)) as s:
        s.initialize()
        uri = s.uri(NAME)
        s.open(NAME)
        path = examples_ws / NAME
        original = path.read_text(encoding="utf-8")
        rss0 = s.rss_bytes()
        for i in range(rounds):
            path.write_text(original + f"\n// edit {i}\n", encoding="utf-8")  # new content: a cache miss each time
            s.save(NAME)
            time.sleep(0.05 if i % 3 else 0.4)  # some land during the compile, which is killed
        n = len(s.notifications)
        path.write_text(original, encoding="utf-8")
        s.save(NAME)
        assert s.finished(uri, n, timeout=120).get("compiled") is True
        stats = s.stats()
        rss1 = s.rss_bytes()
        _no_orphans(s, examples_ws)
        assert s.shutdown() == 0
    report("cancellations", rounds=rounds, cancelled=stats["cancelled"], compiles=stats["compilerRuns"],
           rss_before_mb=round(rss0 / 2**20, 1), rss_after_mb=round(rss1 / 2**20, 1))
    assert stats["cancelled"] >= rounds // 2
    assert rss1 < rss0 + 150 * 2**20


# -- the measured backend's runner (analysis/measure/target.py -> process.run_tool) -----------------

def _py(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_hanging_profile_command_is_killed_with_its_children(tmp_path: Path):
    marker = str(tmp_path)
    # A program that forks a grandchild, and both hang: the timeout must take the whole group.
    code = f"import subprocess,time; subprocess.Popen(['sleep','300','{marker}']); time.sleep(300)"
    # a program left to run would sleep 300 s and return normally, without ProfileTimeoutError
    with pytest.raises(ProfileTimeoutError, match="process group was killed"):
        execute(_py(code) + [marker], timeout=1.0, cancel=None, what="the profiled program")
    time.sleep(0.3)
    assert not processes_of(mentioning=marker)


def test_crashing_profile_command_is_reported(tmp_path: Path):
    result = execute(_py("import os,signal; os.kill(os.getpid(), signal.SIGSEGV)"), timeout=30, cancel=None,
                     what="the profiled program")
    assert result.returncode == -signal.SIGSEGV


def test_flooding_profile_command_keeps_memory_bounded(tmp_path: Path):
    # 400 MB of output; run_tool keeps at most max_output bytes per stream.
    code = "import sys\nb=b'x'*(1<<20)\nfor _ in range(400): sys.stdout.buffer.write(b)"
    before = process_rss(os.getpid())
    result = run_tool(_py(code), timeout=120, max_output=8 * 2**20)
    assert result.returncode == 0 and len(result.stdout) == 8 * 2**20
    assert process_rss(os.getpid()) - before < 100 * 2**20


def test_cancelled_profile_command_leaves_nothing(tmp_path: Path):
    token = CancelToken()
    marker = str(tmp_path)
    import threading

    threading.Timer(0.5, token.cancel).start()
    with pytest.raises(Cancelled):
        execute(_py(f"import subprocess,time; subprocess.Popen(['sleep','300','{marker}']); time.sleep(300)")
                + [marker], timeout=60, cancel=token, what="the profiled program")
    time.sleep(0.3)
    assert not processes_of(mentioning=marker)
    assert ProfileTarget(command=("./app",)).command == ("./app",)
