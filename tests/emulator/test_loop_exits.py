"""A loop closed by `@P0 CALL.REL.NOINC exit; BRA head` (ptxas's register-blocked loops from
sm_80): the exit is the iteration's last test, so the body runs the loop's trips, not one more,
and the jump is no call of a device function.

Input: KnowingNothing/MatmulTutorial's `matmul-v02.cu` (Apache-2.0, benchmarks/accuracy/README.md),
a 4-stage cp.async WMMA GEMM whose K loop (`ko += 4` up to K / 32 - 4) ends in that idiom on
sm_86, followed by the last four stages written out.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope.analysis.options import AnalysisOptions, LaunchHint
from kernelscope.analysis.pipeline import analyze

SOURCE = Path(__file__).resolve().parents[2] / "benchmarks" / "accuracy" / "kernels" / "matmul-tutorial" / "matmul-v02.cu"
M = N = 1024


def _kernel(k: int):
    hint = LaunchHint(grid=(N // 128, M // 128, 1), block=(32, 2, 2), dynamic_smem=65536,
                      values={"M": M, "N": N, "K": k})
    opts = AnalysisOptions(arch="sm_86", device="RTX 3090", launch_hints={"matmul": hint})
    result = analyze(SOURCE, opts, depth="quick")
    (kernel,) = result.kernels
    return kernel


@pytest.mark.parametrize("k", [512, 2048])
def test_the_emulated_gemm_does_the_gemms_work(toolchain, k):
    # K / 32 stages of 128 x 128 x 32 per block: 15 trips of four stages and the last four at
    # K = 2048. Before, the exit was taken one back edge late: four stages more (68 of 64), a
    # quarter more at K = 512 (20 of 16), whatever the trip count
    kernel = _kernel(k)
    threads = (M // 128) * (N // 128) * 128
    assert kernel.flops_per_thread["tensor"] * threads == 2 * M * N * k
    assert not [f for f in kernel.facts if f.kind == "noinline_call"], kernel.facts
