"""Every launch pays what an empty kernel takes (docs/emulator.md, "Whole-kernel time"): on an H100
an empty kernel measured 2.18-2.24 us under ncu, where the emulated blocks of a one-block kernel
take a fraction of a microsecond; cuda-samples' vote kernels measured 2.2-2.8 us and were predicted
at 0.2-0.4 us before."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.pipeline import analyze

TINY = r"""
__global__ void bump(float* x) { x[threadIdx.x] += 1.0f; }
void run(float* x) { bump<<<1, 32>>>(x); }
"""


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("overhead") / "tiny.cu"
    p.write_text(TINY)
    return p


def _kernel(src: Path, toolchain, device: str, arch: str):
    (k,) = analyze(src, AnalysisOptions(arch=arch, device=device), toolchain=toolchain, depth="quick").kernels
    return k, {a.name: a for a in k.assumptions}


def test_a_one_block_kernel_takes_at_least_the_measured_launch_overhead(tiny, toolchain):
    k, got = _kernel(tiny, toolchain, "H100 SXM", "sm_90")
    a = got["launch_overhead"]
    assert a.source == "measured" and a.value == "2.18 us" and "H100 SXM" in a.detail
    # one warp of one block: the blocks' own work is well under the overhead
    assert 2.18e-6 < k.predicted_duration_s < 2 * 2.18e-6


def test_a_device_nobody_measured_takes_the_nearest_measured_one_and_says_so(tiny, toolchain):
    k, got = _kernel(tiny, toolchain, "A100 SXM4 40GB", "sm_80")
    a = got["launch_overhead"]
    assert a.source == "default" and "measured on the H100 SXM, not on the A100 SXM4 40GB" in a.detail
    assert k.predicted_duration_s > 2.18e-6
