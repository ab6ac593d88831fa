"""The wrong-advice cases of issue 15, each on real nvcc output: preconditions from the SASS and the
source, and the consistency rule (share on the advice's own lines, Amdahl's bound)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .realkernel import analyse
from .test_optimizers_real import H, launch


def _lines(r) -> int:
    return len(r.source.splitlines())


def test_aggregation_not_raised_where_the_compiler_already_reduced(toolchain, tmp_path):
    # An integer add to one word: ptxas emits REDUX.SUM per warp and one RED per warp already.
    r = analyse(H + """__global__ void k(const int* __restrict__ x, int* __restrict__ sum)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(&sum[0], x[i]);  // MARK
}""" + launch("k", "N / 256", "256", "const int* x, int* s|x, s"), toolchain, tmp_path)
    opcodes = {i.opcode for fn in r.program.kernels for i in fn.sass.instructions}
    assert "REDUX" in opcodes  # the premise: the compiler reduced within the warp
    assert not r.by("contended_atomics")


def test_restrict_needs_two_pointers_one_written(toolchain, tmp_path):
    one = analyse(H + """__global__ void k(const float* x, int n, float s)
{
    float acc = 0.f;
    for (int j = threadIdx.x; j < n; j += blockDim.x) acc += x[j] * s;  // MARK
    if (acc == 12345.f) __trap();
}""" + launch("k", "N / 256", "256", "const float* x|x, 4096, 2.f"), toolchain, tmp_path)
    assert not one.by("restrict_pointers")
    two = analyse(H + """__global__ void k(float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int j = 0; j < n; ++j) y[i] += x[i + j];  // MARK
}""" + launch("k", "N / 256", "256", "float* x, float* y|x, y, 64"), toolchain, tmp_path)
    assert two.by("restrict_pointers")


def test_no_smaller_blocks_of_the_same_threads(toolchain, tmp_path):
    r = analyse(H + """__global__ void k(const float* __restrict__ x, float* __restrict__ y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = x[i] * 2.f;  // MARK
}""" + launch("k", "4", "128", "const float* x, float* y|x, y"), toolchain, tmp_path)
    for a in r.by("block_increase"):
        assert "smaller blocks" not in a.message and "16 blocks of 32" not in a.message


def test_no_strength_reduction_on_the_thread_index(toolchain, tmp_path):
    r = analyse(H + """__global__ void k(const float* __restrict__ x, float* __restrict__ y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;  // INDEX
    y[i] = x[i] * 2.f;
}""" + launch("k", "N / 256", "256", "const float* x, float* y|x, y"), toolchain, tmp_path)
    for a in r.by("strength_reduction"):
        assert r.line_of("INDEX") not in a.lines
        assert "reciprocal" not in a.message


def test_advice_lines_are_the_users_lines(toolchain, tmp_path):
    # atomicAdd is inlined from a CUDA header; every advice names lines of this file.
    r = analyse(H + """__global__ void k(const float* __restrict__ x, float* __restrict__ sum)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(&sum[0], x[i]);  // MARK
}""" + launch("k", "N / 256", "256", "const float* x, float* s|x, s"), toolchain, tmp_path)
    assert r.advice
    for a in r.advice:
        assert all(0 <= ln <= _lines(r) for ln in a.lines), (a.optimizer, a.lines)


_LINE_LOCAL = ("GPA Eq. 2", "GPA Eq. 4", "GPA Eq. 5", "Starlight Eq. 3")


_EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.cu"))


@pytest.mark.parametrize("path", _EXAMPLES, ids=lambda p: p.name)
def test_line_local_estimates_respect_amdahl(path, toolchain, tmp_path):
    r = analyse(path.read_text(), toolchain, tmp_path)
    for a in r.advice:
        if a.estimate.formula.startswith(_LINE_LOCAL):
            bound = 1 / (1 - a.importance) if a.importance < 1 else float("inf")
            assert a.estimate.speedup <= bound + 1e-6, (a.optimizer, a.estimate, a.importance)
        assert all(0 <= ln <= _lines(r) for ln in a.lines), (a.optimizer, a.lines)
        assert a.estimate.speedup < 20.0 or a.importance > 0.9, (a.optimizer, a.estimate)


def test_no_unroll_advice_where_the_sass_is_already_unrolled(toolchain, tmp_path):
    # A loop with a runtime bound: nvcc unrolls it 4× by itself; `#pragma unroll 4` would add nothing.
    r = analyse(H + """__global__ void k(const float* __restrict__ x, float* __restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    for (int j = 0; j < n; ++j)  // MARK
        acc += x[j * 4096 + i] * 1.5f;
    y[i] = acc;
}""" + launch("k", "16", "256", "const float* x, float* y, int n|x, y, n"), toolchain, tmp_path)
    ldg = [i for fn in r.program.kernels for i in fn.sass.instructions
           if i.opcode == "LDG" and i.line == r.line_of("MARK") + 1]
    assert len(ldg) >= 4  # the premise: the compiler laid out several iterations
    assert not r.by("loop_unrolling")


JACOBI = Path(__file__).resolve().parents[1] / "data" / "real" / "multi-gpu-programming-models" / "jacobi.cu"


@pytest.mark.parametrize("cub", [False, True], ids=["atomic-per-thread", "cub-block-reduce"])
def test_atomics_on_one_word_in_real_jacobi(toolchain, cub):
    """NVIDIA's single-GPU Jacobi (tests/data/real) adds each thread's residual to one word, or,
    built with -DHAVE_CUB as its Makefile does, one block sum per block (threadIdx.x == 0 &&
    threadIdx.y == 0 in a 32 x 32 block). Per thread, the L2's unit for that word is the busiest
    of the memory route and the stores wait behind the atomics in the load/store queue: the
    advice is to aggregate them, not to issue fewer or wider stores. Per block, the kernel is the
    memory-bound stencil it is, and there is nothing to aggregate."""
    from kernelscope.analysis.options import AnalysisOptions
    from kernelscope.analysis.pipeline import analyze

    flags = ["-DHAVE_CUB", "-Xcompiler", "-fopenmp"] if cub else []
    r = analyze(JACOBI, AnalysisOptions(flags=flags), toolchain=toolchain, depth="quick")
    k = next(k for k in r.kernels if "jacobi_kernel" in k.name)
    u = next(p for p in r.profile.kernels if p.kernel == k.mangled).utilization
    route = max(u.get(x, 0.0) for x in ("lsu", "l2", "dram"))
    mine = {a.optimizer: a for a in r.advice if a.kernel == k.mangled}
    if cub:
        assert u.get("l2_atomic", 0.0) < 0.2 < route  # 1 update per block, not one per warp
        assert "contended_atomics" not in mine
    else:
        assert u["l2_atomic"] > route
        assert "memory_transaction_reduction" not in mine
        assert mine["contended_atomics"].importance > 0.9  # the throttled stores are charged to it


def test_no_advice_on_the_compilers_stack_pointer_load(toolchain, tmp_path):
    # simveit/effective_reduction's warm-up kernel (held out; rewritten here): its whole body is
    # ptxas's `LDC R1, c[0x0][0x28]` and EXIT. 1024-thread blocks make that load half the samples in
    # MIO throttle, which "issue fewer memory transactions" took for the source's requests.
    r = analyse("""__global__ void warm() { extern __shared__ int tmp[]; }
void run() { warm<<<1024, 1024, 4096>>>(); }
""", toolchain, tmp_path)
    (fn,) = r.program.kernels
    assert [i.opcode for i in fn.sass.instructions if i.opcode not in ("NOP", "BRA")] == ["LDC", "EXIT"]
    assert r.by("memory_transaction_reduction") == []
    assert r.advice == ()
