"""The quick stage run ahead on NVRTC's cubin while nvcc compiles (analysis/speculation.py): taken
only when nvcc's cubin gives the same inputs, so that every result is what nvcc's cubin alone
gives; dropped (and not retried for a while) when they differ; its NVRTC child gone after a
cancel."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from _processes import children

from kernelscope.analysis.emulator.workers import can_fork
from kernelscope.analysis.frontend.nvrtc import device_part, nvrtc_options, toolkit_root
from kernelscope.analysis.options import AnalysisBudget, AnalysisOptions
from kernelscope.analysis.pipeline import analyze, load_late_stages
from kernelscope.analysis.process import Cancelled, CancelToken
from kernelscope.analysis.speculation import SKIP_AFTER_MISS, Speculation

REPO = Path(__file__).resolve().parents[2]


def _nvrtc_release() -> tuple[int, int] | None:
    try:
        from cuda.bindings import nvrtc
    except ImportError:
        return None
    _, major, minor = nvrtc.nvrtcVersion()
    return major, minor


@pytest.fixture
def same_release(toolchain):
    """The run ahead is tried only with an NVRTC of nvcc's own release (the wheels' pair)."""
    if not can_fork():
        pytest.skip("NVRTC runs in a forked child (Linux only)")
    if _nvrtc_release() != toolchain.major_minor:
        pytest.skip(f"NVRTC {_nvrtc_release()} is not nvcc {toolchain.version}'s release: nothing is run ahead")
    load_late_stages("sm_90")  # as the language server does at start: a process still importing runs nothing ahead
    return toolchain


def _options(run_ahead: bool) -> AnalysisOptions:
    return AnalysisOptions(budget=AnalysisBudget(run_ahead=run_ahead, processes=1))


def _comparable(result) -> str:
    # timings and the profiles' creation times are when, not what
    return re.sub(r'"time": ?"[^"]*"', "", result.model_dump_json(exclude={"timings"}))


@pytest.mark.parametrize("name", ["examples/sgemm_tiled.cu", "tests/data/lsp/saxpy.cu",
                                  "tests/data/real/how-to-optimize-in-gpu/reduce_v3_add_during_load.cu"])
def test_taken_when_nvcc_gives_the_same_sass_and_the_result_is_unchanged(name, same_release, tmp_path):
    source = tmp_path / Path(name).name
    source.write_bytes((REPO / name).read_bytes())
    ahead = analyze(source, _options(True), toolchain=same_release)
    alone = analyze(source, _options(False), toolchain=same_release)
    assert "model_ahead" in ahead.timings and "model_ahead" not in alone.timings
    assert ahead.depth == alone.depth == "full" and ahead.kernels
    assert _comparable(ahead) == _comparable(alone)


RTC_BRANCH = """\
__global__ void scale(float* a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
#ifdef __CUDACC_RTC__
  if (i < n) a[i] = 1.f;
#else
  if (i < n) a[i] = sqrtf(a[i]) * 2.f + a[i];
#endif
}

int main() { scale<<<256, 256>>>(nullptr, 65536); return 0; }
"""


def test_not_taken_when_the_device_code_differs_and_not_retried_at_once(same_release, tmp_path):
    """NVRTC defines __CUDACC_RTC__, nvcc does not: NVRTC's kernel is another one, and nvcc's is
    what the result shows. The file is then not run ahead for its next analyses."""
    source = tmp_path / "rtc_branch.cu"
    source.write_text(RTC_BRANCH)
    ahead = analyze(source, _options(True), toolchain=same_release, depth="quick")
    alone = analyze(source, _options(False), toolchain=same_release, depth="quick")
    assert "model_ahead" not in ahead.timings
    assert _comparable(ahead) == _comparable(alone)
    # the time is spent on nvcc's line (6), which NVRTC's kernel does not have
    kernel = ahead.profile.kernels[0]
    assert kernel.line(6) is not None and kernel.line(4) is None
    from dataclasses import replace

    from kernelscope.analysis.context import AnalysisContext

    ctx = AnalysisContext.resolve(_options(True), path=source.resolve(), data=source.read_bytes())
    begin = [Speculation.begin(replace(ctx, toolchain=same_release), None) for _ in range(SKIP_AFTER_MISS + 1)]
    assert begin[:SKIP_AFTER_MISS] == [None] * SKIP_AFTER_MISS
    assert begin[-1] is not None  # then tried again
    begin[-1].close()


def test_a_cancel_leaves_no_nvrtc_child(same_release, tmp_path):
    """NVRTC compiles in a forked child because a compile in this process could not be stopped:
    slow_template.cu takes nvcc and NVRTC minutes. A cancel ends both."""
    source = tmp_path / "slow_template.cu"
    source.write_bytes((REPO / "tests/data/lsp/slow_template.cu").read_bytes())
    before = children()
    cancel = CancelToken()
    timer = threading.Timer(2.0, cancel.cancel)
    timer.start()
    with pytest.raises(Cancelled):
        analyze(source, _options(True), toolchain=same_release, cancel=cancel)
    assert children() <= before


def test_device_part_keeps_every_line_and_the_cuda_headers(toolchain):
    source = (REPO / "examples/sgemm_tiled.cu").read_bytes()
    include = toolkit_root(toolchain) / "include"  # as device_compile finds it (a wrapper nvcc's too)
    part = device_part(source, include)
    assert part.count(b"\n") == source.count(b"\n")
    text = part.decode()
    assert "#include <cuda_runtime.h>" in text and "<cstdio>" not in text  # the host's C++ headers go
    assert "__global__" in text and "int main" not in text and "cudaMalloc" not in text


def test_nvrtc_options_translate_nvcc_flags_or_give_up(tmp_path):
    inc = (tmp_path / "inc",)
    assert nvrtc_options(["-DTILE=32", "-U", "NDEBUG", "-I", "include", "-std=c++17", "--use_fast_math",
                          "-Xcompiler", "-fopenmp", "-O3", "-maxrregcount", "64"], "sm_90", tmp_path, inc) == [
        "--gpu-architecture=sm_90", "-lineinfo", "--ptxas-options=-v", "-default-device", "-DTILE=32", "-UNDEBUG",
        f"-I{tmp_path / 'include'}", "-std=c++17", "--use_fast_math", "-maxrregcount=64", f"-I{inc[0]}"]
    assert nvrtc_options(["--some-future-flag"], "sm_90", tmp_path, inc) is None


def test_the_command_line_runs_nothing_ahead(same_release, tmp_path):
    """A command line's one analysis imports the later stages while nvcc runs, and a compile it
    started early ends before NVRTC's could: nothing is run ahead there (docs/toolchain.md)."""
    source = tmp_path / "saxpy.cu"
    source.write_bytes((REPO / "tests/data/lsp/saxpy.cu").read_bytes())
    out = subprocess.run([sys.executable, "-m", "kernelscope.cli", "analyze", "--json", "--quick", str(source)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["compiled"] and "model" in result["timings"] and "model_ahead" not in result["timings"]


# --- which NVRTC: the one of the toolkit that nvcc runs from (issue #35) ------------------------

_WHICH_NVRTC = """
import json, sys
from pathlib import Path
from kernelscope.analysis.frontend import nvrtc
from kernelscope.analysis.frontend.toolchain import locate_toolchain
tc = locate_toolchain(sys.argv[1])
src = Path(sys.argv[2])
job = nvrtc.device_compile(src, src.read_bytes(), "sm_90", (), src.parent, tc)
root = nvrtc.toolkit_root(tc)
print(json.dumps({"root": str(root), "library": str(nvrtc.toolkit_nvrtc(root)), "loaded": str(nvrtc._loaded),
                  "job": job is not None, "cubin": bool(job and job().cubin)}))
"""


def _link(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        dst.hardlink_to(src)  # another path to the same file, as a second install would have
    except OSError:
        import shutil
        shutil.copy2(src, dst)


def _toolkit(toolchain, tmp_path: Path, *, with_nvrtc: bool) -> Path:
    """A toolkit laid out as a system install (bin/, lib64/) from the real one's files."""
    from kernelscope.analysis.frontend.nvrtc import toolkit_nvrtc, toolkit_root

    real = toolkit_root(toolchain)
    library = toolkit_nvrtc(real)
    if library is None:
        pytest.skip(f"the toolkit at {real} ships no NVRTC")
    for name in ("nvcc", "nvcc.profile"):
        _link(real / "bin" / name, tmp_path / "bin" / name)
    if with_nvrtc:
        for lib in library.parent.glob("libnvrtc*.so*"):
            _link(lib, tmp_path / "lib64" / lib.name)
    return tmp_path


def _which_nvrtc(nvcc: Path, tmp_path: Path) -> dict:
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k(float *x) { x[threadIdx.x] *= 2.0f; }\n")
    # a fresh process: a process calls one NVRTC, the first it loads
    out = subprocess.run([sys.executable, "-c", _WHICH_NVRTC, str(nvcc), str(src)], capture_output=True, text=True,
                         timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_nvrtc_is_the_one_beside_nvcc_in_its_toolkit(toolchain, tmp_path):
    if not can_fork():
        pytest.skip("NVRTC runs in a forked child (Linux only)")
    root = _toolkit(toolchain, tmp_path / "cuda", with_nvrtc=True)
    got = _which_nvrtc(root / "bin" / "nvcc", tmp_path)
    assert Path(got["root"]) == root.resolve()
    assert Path(got["loaded"]) == root / "lib64" / "libnvrtc.so.13" == Path(got["library"])
    assert got["job"] and got["cubin"]


def test_a_wrapper_script_nvcc_finds_its_toolkit(toolchain, tmp_path):
    # /usr/local/bin/nvcc as `exec /usr/local/cuda-X/bin/nvcc "$@"`: the toolkit is the one it runs
    root = _toolkit(toolchain, tmp_path / "cuda", with_nvrtc=True)
    wrapper = tmp_path / "wrapper" / "nvcc"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nexec {root / "bin" / "nvcc"} "$@"\n')
    wrapper.chmod(0o755)
    got = _which_nvrtc(wrapper, tmp_path)
    assert Path(got["root"]) == root.resolve()
    assert Path(got["loaded"]) == root / "lib64" / "libnvrtc.so.13"


def test_a_toolkit_without_nvrtc_runs_nothing_ahead(toolchain, tmp_path):
    # the wheels' NVRTC would be another install's: its cubin is not taken to stand for this nvcc's
    root = _toolkit(toolchain, tmp_path / "cuda", with_nvrtc=False)
    got = _which_nvrtc(root / "bin" / "nvcc", tmp_path)
    assert got["library"] == "None" and got["loaded"] == "None"
    assert not got["job"]
