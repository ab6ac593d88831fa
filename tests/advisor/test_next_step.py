"""The next step of a published series, as a rule any kernel of that shape gets (issue 34 item 5), each
estimate bounded by what the model says the change removes.

* An element-wise kernel whose threads each move one 32-bit element per array, over many waves, with
  the memory route far from busy, is bound by the bytes each warp keeps in flight: k elements per
  thread in one 128-bit access (float4, llm.c's Packed128) keep k times as many (Little's law), up
  to the busiest unit of the route. One wave of blocks, or threads that already loop over their
  elements, gain nothing from it.
* A block reduction through shared memory and barriers does its steps within a warp with shuffles:
  the barriers' and shared stores' cost of those steps goes (5 of the 8 steps of a 256-thread block).
  A tile staged through shared memory whose every thread stores (a transpose) is no reduction.
* A change that takes no work from a unit cannot make the kernel faster than that unit's busy time
  allows (the roofline with the profile's utilisation): llm.c's softmax kernel2 is at the DRAM
  roof in the model, and fast math there gains at most 1/u_dram.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope.analysis.advisor.optimizers import REGISTRY

from .realkernel import analyse

ELEMENTWISE = """#define N (1 << 24)
__global__ void add(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ z)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    z[i] = x[i] + y[i];  // MARK
}
void run(const float* x, const float* y, float* z) { add<<<%s, 256>>>(x, y, z); }
"""


def _elements(r):
    return [a for a in r.by("vectorize_loads") if "neighbouring elements with one 128-bit" in a.message]


def test_an_elementwise_kernel_over_many_waves_gets_128_bit_elements(toolchain, tmp_path):
    r = analyse(ELEMENTWISE % "N / 256", toolchain, tmp_path)
    (a,) = _elements(r)
    assert r.line_of("// MARK") in a.lines
    assert "128-bit" in a.message and "Little's law" in a.message
    # f = 1 - 1/g with g = min(4 elements, waves, 1/u of the route's busiest unit): never more than 4x the
    # bytes in flight, nor past that unit's saturation
    f = a.estimate.inputs["fraction"]
    assert 0.0 < f <= 0.75 + 1e-9
    assert a.speedup > 1.01
    assert a.estimate.inputs["T_now_s"] > 0  # one baseline: the predicted time
    assert a.speedup <= 1.0 / (1.0 - a.importance) + 1e-9  # Amdahl over the accesses' share


def test_one_wave_of_blocks_gains_no_elements_per_thread(toolchain, tmp_path):
    """132 SMs x 8 blocks of 256 threads: k times fewer threads would leave SMs short of warps."""
    r = analyse(ELEMENTWISE % "132 * 8", toolchain, tmp_path)
    assert not _elements(r), [(a.speedup, a.message) for a in _elements(r)]


def test_threads_that_loop_over_their_elements_get_no_elements_item(toolchain, tmp_path):
    loop = ELEMENTWISE.replace("    z[i] = x[i] + y[i];  // MARK",
                               "    for (; i < N; i += gridDim.x * blockDim.x) z[i] = x[i] + y[i];  // MARK")
    r = analyse(loop % "N / 1024", toolchain, tmp_path)
    assert not _elements(r), [(a.speedup, a.message) for a in _elements(r)]


REDUCE = """#define N (1 << 24)
__global__ void reduce(const float* __restrict__ x, float* __restrict__ out)
{
    __shared__ float s[256];
    int t = threadIdx.x;
    s[t] = x[blockIdx.x * 256 + t];
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];  // MARK
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}
void run(const float* x, float* out) { reduce<<<N / 256, 256>>>(x, out); }
"""


def test_a_shared_memory_tree_reduction_gets_warp_shuffles(toolchain, tmp_path):
    r = analyse(REDUCE, toolchain, tmp_path)
    (a,) = r.by("warp_shuffle")
    assert r.line_of("// MARK") in a.lines
    assert "__shfl_down_sync" in a.message
    assert a.estimate.inputs["fraction"] == pytest.approx(5 / 8)  # the steps within a warp of a 256-thread block
    assert 1.01 <= a.speedup <= 1.0 / (1.0 - a.importance) + 1e-9
    # an element-wise item is not what a block that combines its elements gets (thread coarsening is)
    assert not _elements(r)


def test_a_kernel_that_shuffles_already_gets_no_warp_shuffle_item(toolchain, tmp_path):
    shuffled = REDUCE.replace("        if (t < k) s[t] += s[t + k];  // MARK",
                              "        if (t < k) s[t] += __shfl_down_sync(0xffffffffu, s[t + k], 1);  // MARK")
    r = analyse(shuffled, toolchain, tmp_path)
    assert not r.by("warp_shuffle")


TRANSPOSE = """#define T 32
__global__ void transpose(const float* __restrict__ in, float* __restrict__ out, int n)
{
    __shared__ float tile[T][T];
    int x = blockIdx.x * T + threadIdx.x, y = blockIdx.y * T + threadIdx.y;
    tile[threadIdx.y][threadIdx.x] = in[y * n + x];
    __syncthreads();
    x = blockIdx.y * T + threadIdx.x; y = blockIdx.x * T + threadIdx.y;
    out[y * n + x] = tile[threadIdx.x][threadIdx.y];  // MARK
}
void run(const float* in, float* out) { transpose<<<dim3(128, 128), dim3(T, T)>>>(in, out, 4096); }
"""


def test_a_tile_staged_through_shared_memory_is_no_reduction(toolchain, tmp_path):
    r = analyse(TRANSPOSE, toolchain, tmp_path)
    assert not r.by("warp_shuffle"), [(a.speedup, a.message) for a in r.by("warp_shuffle")]


SOFTMAX = Path(__file__).resolve().parents[2] / "benchmarks" / "series" / "llm-c" / "softmax_forward.cu"


def test_no_estimate_passes_the_busy_unit_it_does_not_relieve(toolchain):
    """llm.c's softmax kernel2 (benchmarks/series) streams its rows three times: DRAM is at its roof in
    the model. Every item's estimate is at most 1/u of the busiest unit its change leaves alone, and
    the math and latency items there are bounded so (they were 1.49x and more before the bound)."""
    from kernelscope.analysis.measure.ncu_report import base_name
    from kernelscope.analysis.options import AnalysisOptions
    from kernelscope.analysis.pipeline import analyze

    result = analyze(SOFTMAX, AnalysisOptions(), depth="quick")
    relieves = {o.name: o.relieves for o in REGISTRY}
    bounded = 0
    for k in result.kernels:
        if base_name(k.name) != "softmax_forward_kernel2":
            continue
        prof = next(p for p in result.profile.kernels if p.kernel == k.mangled)
        assert prof.utilization.get("dram", 0.0) >= 0.9, prof.utilization  # the premise: at the DRAM roof
        items = [a for a in result.advice if a.kernel == k.mangled]
        assert items
        for a in items:
            if a.estimate.formula.startswith("emulator"):
                continue
            kept = [u for name, u in prof.utilization.items() if name not in relieves[a.optimizer] and u > 0]
            assert a.speedup <= 1.0 / max(kept) + 1e-9, (a.optimizer, a.speedup, a.estimate.formula)
            bounded += "(roofline)" in a.estimate.formula
        assert all(a.speedup < 1.1 for a in items if a.optimizer in ("fast_math", "code_reordering"))
    assert bounded, "the bound is what capped an item here"
