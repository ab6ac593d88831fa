"""End-to-end measurement on a real GPU: ncu and the CUPTI shim on a tiny kernel.

Skipped without a GPU. Both passed on an H100 80GB HBM3 (ncu 2025.3.1, CUDA 13.0) on 2026-11-26,
once the report was read in a child process (the first run segfaulted in NVIDIA's reader inside
this process: docs/measured.md), and again on 2026-11-27 with the memory workload sections."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from _gpu import gpu_absent

from kernelscope.analysis.measure.cupti import build_shim, find_cupti, run_cupti
from kernelscope.analysis.measure.ncu import run_ncu
from kernelscope.analysis.measure.target import ProfileTarget
from kernelscope.analysis.profile import StallReason


pytestmark = [pytest.mark.gpu, pytest.mark.skipif(gpu_absent() is not None, reason=str(gpu_absent()))]

KERNEL = r"""
#include <cstdio>
__global__ void saxpy(int n, float a, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
int main() {
    int n = 1 << 24; float *x, *y;
    cudaMalloc(&x, n * sizeof(float)); cudaMalloc(&y, n * sizeof(float));
    cudaMemset(x, 0, n * sizeof(float)); cudaMemset(y, 0, n * sizeof(float));
    for (int r = 0; r < 3; ++r) saxpy<<<(n + 255) / 256, 256>>>(n, 2.0f, x, y);
    cudaError_t e = cudaDeviceSynchronize();
    std::printf("%s\n", cudaGetErrorString(e));
    return e != cudaSuccess;
}
"""


@pytest.fixture(scope="module")
def app(toolchain, tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("gpu app")
    src = d / "saxpy.cu"
    src.write_text(KERNEL)
    exe = d / "saxpy"
    subprocess.run([str(toolchain.nvcc), "-O3", "-lineinfo", "-o", str(exe), str(src)], check=True, env=toolchain.env)
    return exe


def test_ncu_end_to_end(app):
    ncu = shutil.which("ncu")
    if ncu is None:
        pytest.skip("ncu not on PATH")
    t = ProfileTarget(command=[str(app)], cwd=app.parent, kernel_regex="saxpy", launch_count=1, timeout_s=300)
    p = run_ncu(t, ncu_path=ncu, report_path=app.parent / "saxpy.ncu-rep", source=app.parent / "saxpy.cu")
    (k,) = p.kernels
    assert k.name.startswith("saxpy") and k.duration_s > 0 and k.launch.block == (256, 1, 1)
    assert k.total_samples > 0 and any(ls.file.endswith("saxpy.cu") for ls in k.lines)
    assert p.provenance.tool_version not in ("", "unknown", "unrecorded")


def test_cupti_shim_end_to_end(app, toolchain, tmp_path):
    cupti = find_cupti()
    if cupti is None:
        pytest.skip("CUPTI not found")
    shim = build_shim(toolchain.nvcc, cupti.include, cupti.library, out_dir=tmp_path)
    t = ProfileTarget(command=[str(app)], cwd=app.parent, timeout_s=300)
    p = run_cupti(t, shim=shim, line_of={}, out_path=tmp_path / "pcs.jsonl")
    names = [k.kernel for k in p.kernels]
    assert any("saxpy" in n for n in names), names
    k = next(k for k in p.kernels if "saxpy" in k.kernel)
    assert k.total_samples > 0 and any(StallReason.selected in pc.samples for pc in k.pcs)


def test_refused_counters_fall_to_cupti_pc_sampling_on_a_gpu(app, toolchain, tmp_path):
    """The CUPTI leg of the fallback chain (measure/fallback.py): ncu's refusal as a user captured it
    (a stand-in ncu prints it and exits 1), then the real shim samples the program and the cubins it
    loaded map the samples to saxpy.cu's lines."""
    from kernelscope.analysis.measure.fallback import measure_with_fallback

    if find_cupti() is None:
        pytest.skip("CUPTI not found")
    refusal = Path(__file__).parent / "fixtures" / "ncu-output" / "errnvgpuctrperm-deepgemm-46.txt"
    ncu = tmp_path / "ncu"
    ncu.write_text(f'#!/bin/sh\ncase "$1" in --help|--version) exit 0;; esac\ncat "{refusal}"\nexit 1\n')
    ncu.chmod(0o755)
    t = ProfileTarget(command=[str(app)], cwd=app.parent, timeout_s=300)
    m = measure_with_fallback(t, ncu_path=str(ncu), report_path=tmp_path / "saxpy.ncu-rep",
                              source=app.parent / "saxpy.cu", nvcc_path=str(toolchain.nvcc), shim_dir=tmp_path)
    assert m.ran == "cupti", m.label
    assert m.label.startswith("sampled by CUPTI PC sampling (ncu: ") and "ERR_NVGPUCTRPERM" in m.label
    assert "hot lines beside the modeled profile" in (m.message or "")
    k = next(k for k in m.profile.kernels if "saxpy" in k.kernel)
    assert k.total_samples > 0 and any(ls.file.endswith("saxpy.cu") for ls in k.lines)
