"""The result cache: reopen without compiling (memory, then disk in a second server), corrupt
entries rebuilt, size bound, and two writers at once."""

import json
import os
import threading
import time

from _load import load_file
from kernelscope.analysis.results import AnalysisResult
from kernelscope.server.cache import ResultCache


async def test_reopen_is_served_from_cache_without_compiling(lsp, cache_dir):
    async with lsp() as s:
        first = await s.open("tracked.cu")
        assert first["cache"] == "miss" and first["compilerRuns"] == 1
        expected = [(d.range, d.message) for d in s.diagnostics("tracked.cu")]
        s.close("tracked.cu")
        again = await s.open("tracked.cu")
        assert again["cache"] == "hit (memory)"
        assert (await s.stats())["compilerRuns"] == 1  # no compile happened
        assert [(d.range, d.message) for d in s.diagnostics("tracked.cu")] == expected
        assert any("cache: hit (memory), no compiler ran" in m.message for m in s.client.log_messages)
        # The same story is in the log file next to the cache.
        log = (cache_dir / "server.log").read_text()
        assert "tracked.cu: cache: miss" in log and "tracked.cu: cache: hit (memory), no compiler ran" in log

    async with lsp() as s:  # a new server process: only the disk cache can answer
        again = await s.open("tracked.cu")
        assert again["cache"] == "hit (disk)"
        stats = await s.stats()
        assert stats["compilerRuns"] == 0 and stats["cacheHitsDisk"] == 1
        assert [(d.range, d.message) for d in s.diagnostics("tracked.cu")] == expected


async def test_corrupt_entry_is_deleted_and_rebuilt(lsp, cache_dir):
    async with lsp() as s:
        await s.open("tracked.cu")
    (entry,) = list(cache_dir.glob("results-v*/*.json"))
    entry.write_text('{"schema_version": 1, "source": "trunc')  # a torn or garbled file
    async with lsp() as s:
        done = await s.open("tracked.cu")
        assert done["cache"] == "miss" and (await s.stats())["compilerRuns"] == 1
        assert s.diagnostics("tracked.cu")
    AnalysisResult.model_validate_json(entry.read_text())  # rewritten whole


def _result(i: int, pad: int = 0) -> AnalysisResult:
    return AnalysisResult(source=f"/f{i}.cu", source_sha256="x" * pad, arch="sm_90", device="H100",
                          toolchain=None, compiled=True)


def test_size_bound_evicts_least_recently_used(tmp_path):
    size = len(_result(0, 2000).model_dump_json())
    cache = ResultCache(tmp_path, max_bytes=3 * size + 10, memory_entries=1)
    for i in range(3):
        cache.put(f"k{i}", _result(i, 2000))
        past = time.time() - 100 + i
        os.utime(cache._path(f"k{i}"), (past, past))
    cache.clear_memory()
    assert cache.get("k0") is not None  # k0 is now the most recently used
    cache.put("k3", _result(3, 2000))
    left = sorted(p.stem for p in cache.directory.glob("*.json"))
    assert left == ["k0", "k2", "k3"]


def test_two_writers_and_a_reader_never_see_partial_entries(tmp_path):
    a, b = ResultCache(tmp_path, 10**9), ResultCache(tmp_path, 10**9)
    errors: list[BaseException] = []
    stop = threading.Event()

    def write(cache: ResultCache) -> None:
        for n in range(200):
            cache.put("same", _result(n, 5000))

    def read() -> None:
        reader = ResultCache(tmp_path, 10**9)
        while not stop.is_set():
            reader.clear_memory()
            got = reader.get("same")
            if got is not None:
                try:
                    json.loads(got[0].model_dump_json())
                except BaseException as e:  # pragma: no cover - reported below
                    errors.append(e)

    threads = [threading.Thread(target=write, args=(a,)), threading.Thread(target=write, args=(b,)),
               threading.Thread(target=read)]
    for t in threads:
        t.start()
    threads[0].join()
    threads[1].join()
    stop.set()
    threads[2].join()
    assert not errors
    assert not list(cache_dir_tmp(tmp_path))  # no temp files left behind
    assert ResultCache(tmp_path, 10**9).get("same")[1] == "disk"


def cache_dir_tmp(root):
    return (root / "results-v1").glob("*.tmp")


async def test_editing_a_local_header_invalidates_the_cached_result(lsp, workspace):
    (workspace / "scale.cuh").write_text("__device__ inline float scale(float x) { return x * 2.0f; }\n")
    (workspace / "uses_header.cu").write_text(
        '#include "scale.cuh"\n__global__ void k(float* a) { a[threadIdx.x] = scale(a[threadIdx.x]); }\n')
    async with lsp() as s:
        first = await s.open("uses_header.cu")
        assert first["cache"] == "miss"
        s.close("uses_header.cu")
        (workspace / "scale.cuh").write_text("__device__ inline float scale(float x) { return x * 3.0f; }\n")
        again = await s.open("uses_header.cu")
        assert again["cache"] == "miss", "a changed header must not be served from the cache"
        assert (await s.stats())["compilerRuns"] == 2


def test_an_arch_file_edited_in_place_is_a_new_cache_key(tmp_path):
    """The key covers the contents of the files the settings name, not only their paths: a user's arch
    file (or compile database) edited in place must not serve the result made with the old one."""
    from kernelscope.analysis.options import AnalysisOptions

    arch = tmp_path / "arch.toml"
    arch.write_text("[device.mine]\nname = 'Mine'\n")
    opts = AnalysisOptions(arch_file=arch, compile_commands=tmp_path)
    key = opts.cache_key("0" * 64, "13.0")
    assert opts.cache_key("0" * 64, "13.0") == key
    arch.write_text("[device.mine]\nname = 'Mine'\nsm_count = 2\n")
    edited = opts.cache_key("0" * 64, "13.0")
    assert edited != key
    (tmp_path / "compile_commands.json").write_text("[]")
    assert opts.cache_key("0" * 64, "13.0") != edited


def test_a_fifo_named_as_the_arch_file_does_not_hang_the_cache_key(tmp_path):
    """The files a setting names are read as any file kernelscope did not write (files.read_regular):
    opening a FIFO would wait for a writer forever."""
    from kernelscope.analysis.options import AnalysisOptions

    fifo = tmp_path / "arch.toml"
    os.mkfifo(fifo)
    keys: list[str] = []
    worker = threading.Thread(target=lambda: keys.append(AnalysisOptions(arch_file=fifo).cache_key("0" * 64, "13.0")),
                              daemon=True)
    worker.start()
    worker.join(60)  # a guard against a hang, not a timing: the key takes microseconds
    assert not worker.is_alive() and len(keys) == 1


def test_a_changed_engine_is_a_new_cache_key(tmp_path):
    # A result cached by another emulator or advisor must not be served after an upgrade (or an
    # edit to a development install): the key covers the engine's own files. Checked on a copy.
    import shutil
    from pathlib import Path

    import kernelscope.analysis as engine

    copy = tmp_path / "analysis"
    shutil.copytree(Path(engine.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))

    def load():
        return load_file(copy / "options.py")  # options.py imports nothing from the package

    before = load()
    key = before.AnalysisOptions().cache_key("0" * 64, "13.0")
    assert load().AnalysisOptions().cache_key("0" * 64, "13.0") == key  # deterministic
    with open(copy / "emulator" / "engine.py", "a") as f:
        f.write("\n# a different engine\n")
    with open(copy / "data" / "arch_specs.toml", "a") as f:
        f.write("\n")
    assert load().AnalysisOptions().cache_key("0" * 64, "13.0") != key
