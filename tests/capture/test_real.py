"""Launch capture on real public programs (tests/data/real/README.md): the launches and integer
arguments recorded equal what each program launches. Every expected figure below was read off the
program's source by hand (the comment says where), not from a capture."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelscope.analysis.capture import capture_program
from kernelscope.analysis.capture.run import with_capture
from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.pipeline import analyze

REAL = Path(__file__).resolve().parents[1] / "data" / "real"
_FLAGS = json.loads((REAL / "build_flags.json").read_text())


def flags(name: str) -> tuple[str, ...]:
    """The nvcc flags program `name` builds with (tests/data/real/build_flags.json)."""
    return tuple(f.format(real=REAL) for f in (*_FLAGS["*"], *_FLAGS.get(name, ())))


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
    # N = M = K = 2048, dimBlock(16, 16), dimGrid(M / 16, N / 16), launched through a function
    # pointer: one warm-up + test_iterations = 100
    "learn-cuda-programming/sgemm.cu": {
        "_Z16sgemm_gpu_kernelPKfS0_Pfiiiff": ((128, 128, 1), (16, 16, 1), 0, {3: 2048, 4: 2048, 5: 2048}, 101)},
    # N 1024, BLOCK_SIZE 32: grid (N / 32, N / 32), block (32, 32)
    "learn-cuda-programming/conflict_solved.cu": {
        "_Z22matrix_transpose_naivePiS_": ((32, 32, 1), (32, 32, 1), 0, {}, 1),
        "_Z23matrix_transpose_sharedPiS_": ((32, 32, 1), (32, 32, 1), 0, {}, 1)},
    # IMG_SIZE 1048576 / NUM_THREADS 256 blocks; a struct argument; the program frees one buffer twice
    "learn-cuda-programming/soa.cu": {"_Z22complicatedCalculation16Coefficients_SOA": ((4096, 1, 1), (256, 1, 1), 0, {}, 1)},
    # n_stream = 5 launches <<<1, 1, 0, ls_stream[i]>>>(i), the first with i = 0
    "learn-cuda-programming/2_cuda_multi_stream.cu": {"_Z10foo_kerneli": ((1, 1, 1), (1, 1, 1), 0, {0: 0}, 5)},
    # size 1 << 24 over num_operator = 4 operators: size / 4 / 256 blocks of 256, one per operator's stream
    "learn-cuda-programming/cuda_pipelining.cu": {"_Z13vecAdd_kernelPfPKfS1_": ((16384, 1, 1), (256, 1, 1), 0, {}, 4)},
    # N = 32 * 1024 * 1024, THREAD_PER_BLOCK 256: v0 launches N / 256 blocks
    "how-to-optimize-in-gpu/reduce_v0_baseline.cu": {"_Z7reduce0PfS_": ((131072, 1, 1), (256, 1, 1), 0, {}, 1)},
    # NUM_PER_BLOCK = 2 * 256, block_num = N / NUM_PER_BLOCK
    "how-to-optimize-in-gpu/reduce_v3_add_during_load.cu": {"_Z7reduce3PfS_": ((65536, 1, 1), (256, 1, 1), 0, {}, 1)},
    "how-to-optimize-in-gpu/reduce_v5_completely_unroll.cu": {
        "_Z7reduce5ILj256EEvPfS0_": ((65536, 1, 1), (256, 1, 1), 0, {}, 1)},
    # block_num 1024, NUM_PER_THREAD = N / 1024 / 256 = 128 (a template argument), n = N
    "how-to-optimize-in-gpu/reduce_v6_multi_add.cu": {
        "_Z7reduce6ILj256ELi128EEvPfS0_j": ((1024, 1, 1), (256, 1, 1), 0, {2: 33554432}, 1)},
    # as v6, launched iter = 2000 times
    "how-to-optimize-in-gpu/reduce_v7_shuffle.cu": {
        "_Z7reduce7ILj256ELi128EEvPfS0_j": ((1024, 1, 1), (256, 1, 1), 0, {2: 33554432}, 2000)},
    # Grid N / 256 / 4, 2000 launches of vec4_add; add and vec2_add are never launched
    "how-to-optimize-in-gpu/elementwise_add.cu": {"_Z8vec4_addPfS_S_": ((32768, 1, 1), (256, 1, 1), 0, {}, 2000)},
    # nx = ny = 16384 (-nx/-ny defaults): ny / 128 + 1 blocks of 128; then jacobi_kernel<32, 32> on
    # ((nx + 31) / 32, (ny + 31) / 32) blocks of {32, 32, 1} on compute_stream, iy_start 1,
    # iy_end ny - 1. It iterates until the norm it reads back is below tol: under capture the
    # norm buffers hold zeros (kernels do not run), so it stops after 2 launches, not iter_max.
    "multi-gpu-programming-models/jacobi.cu": {
        "_Z21initialize_boundariesPfS_fii": ((129, 1, 1), (128, 1, 1), 0, {3: 16384, 4: 16384}, 1),
        "_Z13jacobi_kernelILi32ELi32EEvPfPKfS0_iii": ((512, 512, 1), (32, 32, 1), 0, {3: 1, 4: 16383, 5: 16384}, 2)},
}
PROJECTS = {name.split("/")[0] for name in EXPECTED}


def test_the_set_spans_enough_real_kernels_and_projects():
    assert sum(len(v) for v in EXPECTED.values()) >= 20 and len(PROJECTS) >= 5
    on_disk = {p.relative_to(REAL).as_posix() for p in REAL.rglob("*.cu")}
    assert on_disk == set(EXPECTED)  # every program here is checked


@pytest.fixture(scope="module")
def captured(toolchain, tmp_path_factory):
    """Capture a program once per module (captures are cached by the program's inputs)."""
    cache = tmp_path_factory.mktemp("capture")
    return lambda name: capture_program(toolchain, REAL / name, flags=flags(name),
                                        cache_dir=cache)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_captured_launches_equal_the_programs(captured, name):
    c = captured(name)
    assert set(c.counts) == set(EXPECTED[name])
    for kernel, (grid, block, smem, scalars, launches) in EXPECTED[name].items():
        first = c.of(kernel)[0]
        assert (first.grid, first.block, first.shared_bytes) == (grid, block, smem), kernel
        assert {i: first.scalar(i) for i in scalars} == scalars, kernel
        assert c.counts[kernel] == launches, kernel


def test_streams_float_arguments_and_a_double_free_are_captured_as_on_a_gpu(captured):
    # five launches, one per stream that the program created, in the order it made them
    streams = [x.stream for x in captured("learn-cuda-programming/2_cuda_multi_stream.cu").launches]
    assert len(set(streams)) == 5 and 0 not in streams
    assert [x.scalar(0) for x in captured("learn-cuda-programming/2_cuda_multi_stream.cu").launches] == [0, 1, 2, 3, 4]
    # alpha = 2.f, beta = 1.f
    (first, *_) = captured("learn-cuda-programming/sgemm.cu").launches
    assert (first.real(6), first.real(7)) == (2.0, 1.0)
    # soa.cu frees d_x.maxVal twice: a device returns an error for the second cudaFree, and the
    # program runs to its end; the stand-in runtime must not crash it either
    soa = captured("learn-cuda-programming/soa.cu")
    assert soa.finished and soa.exit_code == 0


def test_a_header_is_captured_through_the_program_that_includes_it():
    header = REAL / "cuda-samples" / "simpleVote_kernel.cuh"
    out = with_capture(header, AnalysisOptions(flags=flags("cuda-samples/simpleVoteIntrinsics.cu")))
    assert {k for k in out.options.captured if "(" not in k} == {"VoteAnyKernel1", "VoteAllKernel2", "VoteAnyKernel3"}
    assert out.options.captured["VoteAnyKernel3"].block == (96, 1, 1)


def test_the_model_uses_the_captured_launch_of_a_real_program(tmp_path):
    src = REAL / "cuda-samples" / "matrixMul.cu"
    out = with_capture(src, AnalysisOptions(flags=flags("cuda-samples/matrixMul.cu")))
    assert "stopped early" in out.message  # it checks its result, which capture does not compute
    # the source instantiates block sizes 16 and 32; main() launches the 32 one
    (k,) = [k for k in analyze(src, out.options, depth="quick").kernels if "<32>" in k.name]
    assert (k.launch.grid, k.launch.block) == ((20, 10, 1), (32, 32, 1))
    got = {a.name: (a.value, a.source) for a in k.assumptions}
    assert got["wA"] == ("320", "captured") and got["wB"] == ("640", "captured")
    assert got["launches"] == ("301", "captured")
    # its tile loop `for (a = aBegin, b = bBegin; a <= aEnd; a += aStep, b += bStep)`, with
    # `aEnd = aBegin + wA - 1` and aBegin depending on blockIdx.y, runs wA / 32 = 10 tiles (it
    # kept the default 2 until the block-dependent start was cancelled out of the extent)
    (trip,) = [a for a in k.assumptions if a.name.startswith("trip_count")]
    assert (trip.value, trip.source) == ("10", "captured") and "bound 320" in trip.detail
    # the <16> instance is compiled but never launched: it takes no sibling's launch, and says so
    (k16,) = [k for k in analyze(src, out.options, depth="quick").kernels if "<16>" in k.name]
    grid = next(a for a in k16.assumptions if a.name == "grid")
    assert grid.source == "default" and "never this instance" in grid.detail and "MatrixMulCUDA<32>" in grid.detail


def test_each_template_instance_is_modeled_with_its_own_captured_launch():
    # simpleTemplates.cu runs testKernel<float> with 32 threads and testKernel<int> with 64,
    # each with sizeof(T) * num_threads bytes of dynamic shared memory
    src = REAL / "cuda-samples" / "simpleTemplates.cu"
    out = with_capture(src, AnalysisOptions(flags=flags("cuda-samples/simpleTemplates.cu")))
    kernels = {k.name.split("(")[0]: k for k in analyze(src, out.options, depth="quick").kernels}
    f, i = kernels["void testKernel<float>"], kernels["void testKernel<int>"]
    assert (f.launch.block, f.launch.dynamic_smem) == ((32, 1, 1), 128)
    assert (i.launch.block, i.launch.dynamic_smem) == ((64, 1, 1), 256)
    assert {a.source for k in (f, i) for a in k.assumptions if a.name in ("grid", "block")} == {"captured"}
