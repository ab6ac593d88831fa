"""The counter-permission fallback chain (analysis/measure/fallback.py) on real inputs: a real CUDA
program, the real CUPTI shim built with the real nvcc, and ncu's refusal as users captured it
(fixtures/ncu-output). ncu itself is the boundary: a stand-in executable prints a captured refusal
and exits 1, as ncu does; everything after it (classification, the CUPTI run, the labels) is the
code under test. Without a GPU the CUPTI leg fails for real, and the chain must show the model."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from _gpu import gpu_absent

from kernelscope.analysis.measure.errors import NoGpuError
from kernelscope.analysis.measure.fallback import CUPTI, cubin_line_table, measure_with_fallback
from kernelscope.analysis.measure.target import ProfileTarget, RemoteWrapper

FIXTURES = Path(__file__).parent / "fixtures" / "ncu-output"
REFUSALS = sorted(FIXTURES.glob("errnvgpuctrperm-*.txt"))
REPO = Path(__file__).resolve().parents[2]

SAXPY = r"""#include <cstdio>
__global__ void saxpy(int n, float a, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
int main() {
    int n = 1 << 20; float *x, *y;
    cudaMalloc(&x, n * sizeof(float)); cudaMalloc(&y, n * sizeof(float));
    saxpy<<<(n + 255) / 256, 256>>>(n, 2.0f, x, y);
    cudaError_t e = cudaDeviceSynchronize();
    std::printf("%s\n", cudaGetErrorString(e));
    return e != cudaSuccess;
}
"""
SAXPY_BODY_LINE = 4  # `if (i < n) y[i] = a * x[i] + y[i];`

no_gpu_only = pytest.mark.skipif(gpu_absent() is None, reason="a GPU is here: the CUPTI leg runs (test_gpu.py)")


def stand_in_ncu(directory: Path, output: Path | str) -> Path:
    """An `ncu` that answers --help/--version and otherwise prints `output` and exits 1."""
    text = output.read_text(encoding="utf-8") if isinstance(output, Path) else output
    (directory / "ncu-said.txt").write_text(text, encoding="utf-8")
    ncu = directory / "ncu"
    ncu.write_text(f'#!/bin/sh\ncase "$1" in --help|--version) exit 0;; esac\ncat "{directory / "ncu-said.txt"}"\n'
                   "exit 1\n")
    ncu.chmod(0o755)
    return ncu


@pytest.fixture(scope="module")
def app(toolchain, tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("fallback app")
    (d / "saxpy.cu").write_text(SAXPY)
    subprocess.run([str(toolchain.nvcc), "-arch=sm_90", "-lineinfo", "-o", str(d / "saxpy"), str(d / "saxpy.cu")],
                   check=True, env=toolchain.env, capture_output=True)
    return d / "saxpy"


@pytest.fixture(scope="module")
def shim_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cupti shim")


@no_gpu_only
@pytest.mark.parametrize("refusal", REFUSALS, ids=lambda p: p.stem)
def test_refused_counters_without_a_gpu_fall_to_the_model_and_say_which_ran(refusal, app, shim_dir, toolchain,
                                                                           tmp_path):
    ncu = stand_in_ncu(tmp_path, refusal)
    report = tmp_path / "out" / "saxpy.ncu-rep"
    report.parent.mkdir()
    target = ProfileTarget(command=[str(app)], cwd=app.parent, timeout_s=120, first_of_each=True)
    m = measure_with_fallback(target, ncu_path=str(ncu), report_path=report, source=app.parent / "saxpy.cu",
                              nvcc_path=str(toolchain.nvcc), shim_dir=shim_dir)
    assert m.ran == "modeled" and m.report is None and m.profile is None
    # ncu's refusal, then CUPTI's own failure: the shim was built and the program ran under it
    (ncu_refused, cupti_refused) = m.refused
    assert ncu_refused.tool == "ncu" and "ERR_NVGPUCTRPERM" in ncu_refused.reason
    assert cupti_refused.tool == CUPTI and "not available" not in cupti_refused.reason
    assert list(shim_dir.glob("kernelscope-pcsampling-*.so"))
    assert m.label.startswith("modeled (ncu: The profiler may not read the GPU's performance counters")
    assert m.label.endswith(f"; {CUPTI}: {cupti_refused.reason})")
    # the one message: every fix once, and what is shown instead with CUPTI's reason
    text = m.message
    assert text is not None and "\n" not in text
    assert text.count("NVreg_RestrictProfilingToAdminUsers=0") == 1 and text.count("--cap-add=SYS_ADMIN") == 1
    assert f"kernelscope shows the modeled profile ({CUPTI}: {cupti_refused.reason})." in text
    # nothing left beside the report: no report, no samples, no cubins
    assert list(report.parent.iterdir()) == []


def test_a_failure_other_than_the_counters_is_raised_and_cupti_is_not_tried(app, tmp_path, toolchain):
    # ncu's own text when no driver is loaded (quoted in ncu.py's _NO_GPU): no second profiler would do better
    ncu = stand_in_ncu(tmp_path, "==ERROR== Nsight Compute failed to connect to the CUDA driver "
                                 "(stub libcuda.so[.1] on path?).\n")
    shims = tmp_path / "shims"
    target = ProfileTarget(command=[str(app)], cwd=app.parent, timeout_s=120)
    with pytest.raises(NoGpuError):
        measure_with_fallback(target, ncu_path=str(ncu), report_path=tmp_path / "r.ncu-rep",
                              nvcc_path=str(toolchain.nvcc), shim_dir=shims)
    assert not shims.exists()  # the shim was never built


def test_without_a_shared_filesystem_cupti_is_not_tried(app, tmp_path, toolchain):
    # a remote side reached through a wrapper with a fetch template: the shim built here is not there.
    # `env {command}` runs the argv as a remote side would; cp is the fetch.
    ncu = stand_in_ncu(tmp_path, REFUSALS[0])
    remote = RemoteWrapper(run=("env", "{command}"), fetch=("cp", "{remote}", "{local}"))
    shims = tmp_path / "shims"
    target = ProfileTarget(command=[str(app)], cwd=app.parent, timeout_s=120, remote=remote)
    m = measure_with_fallback(target, ncu_path=str(ncu), report_path=tmp_path / "r.ncu-rep",
                              nvcc_path=str(toolchain.nvcc), shim_dir=shims)
    assert m.ran == "modeled" and not shims.exists()
    assert f"{CUPTI}: not tried: the CUPTI shim is built on this machine" in m.label
    off = measure_with_fallback(target.model_copy(update={"remote": None}), ncu_path=str(ncu),
                                report_path=tmp_path / "r.ncu-rep", cupti=False, shim_dir=shims)
    assert off.ran == "modeled" and off.label.endswith(f"{CUPTI}: not tried (turned off))")
    assert not shims.exists()


def test_the_programs_own_cubins_map_sampled_pcs_to_its_lines(toolchain, tmp_path):
    # the shim saves each cubin the program loads; the line table comes from those bytes, not a recompile
    src = tmp_path / "saxpy.cu"
    src.write_text(SAXPY)
    cubins = tmp_path / "cubins"
    cubins.mkdir()
    subprocess.run([str(toolchain.nvcc), "-arch=sm_90", "-lineinfo", "-cubin", "-o", str(cubins / "123.cubin"),
                    str(src)], check=True, env=toolchain.env, capture_output=True)
    (cubins / "456.cubin").write_bytes(b"not a cubin")  # a module that cannot be read is skipped
    table = cubin_line_table(cubins, src, toolchain.nvdisasm)
    assert {fn for fn, _ in table} == {"_Z5saxpyifPKfPf"}
    assert (str(src), SAXPY_BODY_LINE) in set(table.values())
    assert all(file == str(src) for file, _ in table.values())


@no_gpu_only
def test_kernelscope_profile_prints_the_one_message_and_which_profile_ran(app, tmp_path):
    ncu = stand_in_ncu(tmp_path, REFUSALS[0])
    proc = subprocess.run([sys.executable, "-m", "kernelscope.cli", "profile", str(app.parent / "saxpy.cu"),
                           "--ncu", str(ncu), "--", str(app)], capture_output=True, text=True, cwd=tmp_path,
                          timeout=600)
    assert proc.returncode in (0, 1), proc.stderr  # the analysis's own exit status (advice found or not)
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("NVreg_RestrictProfilingToAdminUsers=0") == 1  # the permission message, once
    assert "kernelscope: profile: modeled (ncu: The profiler may not read" in proc.stderr
    assert f"; {CUPTI}: The program exited with code" in proc.stderr
    assert "saxpy" in proc.stdout and "[measured]" not in proc.stdout
