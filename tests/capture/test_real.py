"""Launch capture on real public programs (tests/data/real/README.md): the launches and integer
arguments recorded equal what each program launches. Every expected figure below was read off the
program's source by hand (the comment says where), not from a capture."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope.analysis.capture import capture_program
from kernelscope.analysis.capture.run import with_capture
from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.pipeline import analyze
from kernelscope.analysis.toolchain import ToolchainError, locate_toolchain

REAL = Path(__file__).resolve().parents[1] / "data" / "real"
COMMON = ("-I", str(REAL / "cuda-samples" / "Common"))

# file -> {mangled kernel: (grid, block, dynamic smem, {argument index: integer value}, launches)}
EXPECTED = {
    # numElements = 50000, threadsPerBlock = 256, blocksPerGrid = (50000 + 255) / 256
    "cuda-samples/vectorAdd.cu": {"_Z9vectorAddPKfS0_Pfi": ((196, 1, 1), (256, 1, 1), 0, {3: 50000}, 1)},
    # n = 16 * 1024 * 1024, threads = 512, blocks = n / 512, value = 26
    "cuda-samples/asyncAPI.cu": {"_Z16increment_kernelPii": ((32768, 1, 1), (512, 1, 1), 0, {1: 26}, 1)},
    # block_size 32, dimsA = (10*2*32, 10*32), dimsB = (20*2*32, 10*32): grid (640/32, 320/32);
    # wA = 320, wB = 640; one warm-up launch + nIter = 300
    "cuda-samples/matrixMul.cu": {"_Z13MatrixMulCUDAILi32EEvPfS0_S0_ii": ((20, 10, 1), (32, 32, 1), 0, {3: 320, 4: 640}, 301)},
    # NUM_BLOCKS 64, NUM_THREADS 256, shared 2 * sizeof(float) * NUM_THREADS
    "cuda-samples/clock.cu": {"_Z14timedReductionPKfPfPl": ((64, 1, 1), (256, 1, 1), 2048, {}, 1)},
    # num_threads = 32 (float) then 64 (int), shared mem = sizeof(T) * num_threads
    "cuda-samples/simpleTemplates.cu": {"_Z10testKernelIfEvPT_S1_": ((1, 1, 1), (32, 1, 1), 128, {}, 1),
                                        "_Z10testKernelIiEvPT_S1_": ((1, 1, 1), (64, 1, 1), 256, {}, 1)},
    # warp_size 32, VOTE_DATA_GROUP 4: 128 threads, arrays of VOTE_DATA_GROUP*warp_size; kernel 3: 3 warps
    "cuda-samples/simpleVoteIntrinsics.cu": {"_Z14VoteAnyKernel1PjS_i": ((1, 1, 1), (128, 1, 1), 0, {2: 128}, 1),
                                             "_Z14VoteAllKernel2PjS_i": ((1, 1, 1), (128, 1, 1), 0, {2: 128}, 1),
                                             "_Z14VoteAnyKernel3Pbi": ((1, 1, 1), (96, 1, 1), 0, {1: 32}, 1)},
    # nx = ny = 1024, TILE_DIM 32, BLOCK_ROWS 8; a warm-up + NUM_REPS = 100 per kernel
    "code-samples/transpose.cu": {k: ((32, 32, 1), (32, 8, 1), 0, {}, 101) for k in (
        "_Z4copyPfPKf", "_Z13copySharedMemPfPKf", "_Z14transposeNaivePfPKf", "_Z18transposeCoalescedPfPKf",
        "_Z24transposeNoBankConflictsPfPKf")},
    # n = 64, one block of n threads; dynamicReverse gets n * sizeof(int) shared bytes
    "code-samples/shared-memory.cu": {"_Z13staticReversePii": ((1, 1, 1), (64, 1, 1), 0, {1: 64}, 1),
                                      "_Z14dynamicReversePii": ((1, 1, 1), (64, 1, 1), 256, {1: 64}, 1)},
    # n = 4 * 1024 * 1024 elements, blockSize 256; offset 0..32 and stride 1..32, plus a warm-up
    "code-samples/coalescing.cu": {"_Z6offsetIfEvPT_i": ((4096, 1, 1), (256, 1, 1), 0, {1: 0}, 34),
                                   "_Z6strideIfEvPT_i": ((4096, 1, 1), (256, 1, 1), 0, {1: 1}, 33)},
    # mx = my = mz = 64, sPencils 4, lPencils 32; a warm-up + nReps = 20 per kernel
    "code-samples/finite-difference.cu": {
        "_Z12derivative_xPfS_": ((16, 64, 1), (64, 4, 1), 0, {}, 21),
        "_Z21derivative_x_lPencilsPfS_": ((2, 64, 1), (64, 4, 1), 0, {}, 21),
        "_Z12derivative_yPfS_": ((16, 64, 1), (4, 64, 1), 0, {}, 21),
        "_Z21derivative_y_lPencilsPfS_": ((2, 64, 1), (32, 8, 1), 0, {}, 21),
        "_Z12derivative_zPfS_": ((16, 64, 1), (4, 64, 1), 0, {}, 21),
        "_Z21derivative_z_lPencilsPfS_": ((2, 64, 1), (32, 8, 1), 0, {}, 21)},
    # n = 4 * 1024 * blockSize * nStreams = 4M, blockSize 256; first the whole array, offset 0
    "code-samples/async.cu": {"_Z6kernelPfi": ((16384, 1, 1), (256, 1, 1), 0, {1: 0}, 9)},
    # n = 100, blockSize 256, nBlocks = (n + blockSize - 1) / blockSize
    "code-samples/haxpy.cu": {"_Z5haxpyi6__halfPKS_PS_": ((1, 1, 1), (256, 1, 1), 0, {0: 100}, 1)},
}


@pytest.fixture(scope="module")
def toolchain():
    try:
        return locate_toolchain()
    except ToolchainError as e:
        pytest.skip(f"no nvcc: {e}")


def test_the_set_spans_enough_real_kernels():
    assert sum(len(v) for v in EXPECTED.values()) >= 20


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_captured_launches_equal_the_programs(toolchain, tmp_path, name):
    c = capture_program(toolchain.nvcc, toolchain.cuobjdump, REAL / name, flags=COMMON, cache_dir=tmp_path)
    assert set(c.counts) == set(EXPECTED[name])
    for kernel, (grid, block, smem, scalars, launches) in EXPECTED[name].items():
        first = c.of(kernel)[0]
        assert (first.grid, first.block, first.shared_bytes) == (grid, block, smem), kernel
        assert {i: first.scalar(i) for i in scalars} == scalars, kernel
        assert c.counts[kernel] == launches, kernel


def test_the_model_uses_the_captured_launch_of_a_real_program(tmp_path):
    src = REAL / "cuda-samples" / "matrixMul.cu"
    out = with_capture(src, AnalysisOptions(flags=COMMON))
    assert "stopped early" in out.message  # it checks its result, which capture does not compute
    # the source instantiates block sizes 16 and 32; main() launches the 32 one
    (k,) = [k for k in analyze(src, out.options, depth="quick").kernels if "<32>" in k.name]
    assert (k.launch.grid, k.launch.block) == ((20, 10, 1), (32, 32, 1))
    got = {a.name: (a.value, a.source) for a in k.assumptions}
    assert got["wA"] == ("320", "captured") and got["wB"] == ("640", "captured")
    assert got["launches"] == ("301", "captured")
