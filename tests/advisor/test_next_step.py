"""The next step of a published series, as a rule any kernel of that shape gets (issue 34 item 5), each
estimate bounded by what the model says the change removes.

* An element-wise kernel whose threads each move one 32-bit element per array, over many waves, with
  the memory route far from busy, is bound by the bytes each warp keeps in flight: k elements per
  thread in one 128-bit access (float4, llm.c's Packed128) keep k times as many (Little's law), up
  to the busiest unit of the route. One wave of blocks, or threads that already loop over their
  elements, gain nothing from it.
* A block reduction through shared memory and barriers does its steps within a warp with shuffles:
  the barriers' and shared stores' cost of those steps goes (5 of the 8 steps of a 256-thread block).
  A loop of that shape whose every thread stores its own element (a scan, a sort) or a tile staged
  through shared memory whose every thread stores (a transpose) is no reduction.
* A change that takes no work from a unit cannot make the kernel faster than that unit's busy time
  allows (the roofline with the profile's utilisation): llm.c's online softmax kernels are at the
  DRAM roof in the model, and fast math there gains at most 1/u_dram. On a measured profile (an H100
  report) ncu's throughputs bound only the changes that relieve none of the units they cover.
"""

from __future__ import annotations

from pathlib import Path

import pytest

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


SCAN = """#define N (1 << 24)
// Hillis-Steele inclusive scan of each block's 256 elements through shared memory: every thread stores
__global__ void block_scan(const float* __restrict__ x, float* __restrict__ y)
{
    __shared__ float s[2][256];
    int t = threadIdx.x, p = 0;
    s[0][t] = x[blockIdx.x * 256 + t];
    __syncthreads();
    #pragma unroll 1
    for (int d = 1; d < blockDim.x; d <<= 1) {
        float v = s[p][t];
        if (t >= d) v += s[p][t - d];  // MARK
        s[1 - p][t] = v;
        p = 1 - p;
        __syncthreads();
    }
    y[blockIdx.x * 256 + t] = s[p][t];
}
void run(const float* x, float* y) { block_scan<<<N / 256, 256>>>(x, y); }
"""

SORT = """#define N (1 << 24)
// bitonic sort of each block's 256 keys in shared memory: a halving stride, and every thread stores its key
__global__ void block_sort(const float* __restrict__ x, float* __restrict__ y)
{
    __shared__ float s[256];
    unsigned t = threadIdx.x;
    s[t] = x[blockIdx.x * 256 + t];
    __syncthreads();
    #pragma unroll 1
    for (unsigned k = 2; k <= blockDim.x; k <<= 1) {
        #pragma unroll 1
        for (unsigned j = k >> 1; j > 0; j >>= 1) {
            unsigned p = t ^ j;
            if (p > t) {
                float a = s[t], b = s[p];
                if (((t & k) == 0) == (a > b)) { s[t] = b; s[p] = a; }  // MARK
            }
            __syncthreads();
        }
    }
    y[blockIdx.x * 256 + t] = s[t];
}
void run(const float* x, float* y) { block_sort<<<N / 256, 256>>>(x, y); }
"""


@pytest.mark.parametrize("source", [SCAN, SORT], ids=["hillis_steele_scan", "bitonic_sort"])
def test_a_block_scan_or_sort_through_shared_memory_is_no_reduction(source, toolchain, tmp_path):
    """A loop of barriers, shared loads and shared stores whose every thread then stores its own element
    has the reduction's shape but one result per thread, not per block: no step of it is a warp's
    shuffle-down (warp_shuffle was 1.10x on the scan, 1.13x on the sort)."""
    r = analyse(source, toolchain, tmp_path)
    assert not r.by("warp_shuffle"), [(a.speedup, a.message) for a in r.by("warp_shuffle")]


SOFTMAX = Path(__file__).resolve().parents[2] / "benchmarks" / "series" / "llm-c" / "softmax_forward.cu"


def test_a_change_that_leaves_the_busy_dram_alone_gains_at_most_its_idle_share(toolchain):
    """llm.c's softmax kernels (benchmarks/series) stream their rows: the online ones are at the DRAM
    roof in the model. Cheaper math or hidden latency leave DRAM's bytes as they are, so they gain at
    most 1/u of it (kernel2's fast math claimed 1.49x before the bound), and the formula says which
    unit bounded them."""
    from kernelscope.analysis.options import AnalysisOptions
    from kernelscope.analysis.pipeline import analyze

    result = analyze(SOFTMAX, AnalysisOptions(), toolchain=toolchain, depth="quick")
    roofed = 0
    for k in result.kernels:
        u_dram = next(p for p in result.profile.kernels if p.kernel == k.mangled).utilization.get("dram", 0.0)
        if u_dram < 0.9:
            continue
        roofed += 1
        items = [a for a in result.advice if a.kernel == k.mangled and a.optimizer in ("fast_math", "code_reordering")]
        assert items, k.name
        for a in items:
            assert a.speedup <= 1.0 / u_dram + 1e-9, (k.name, a.optimizer, a.speedup, a.estimate.formula)
            assert a.speedup < 1.0 / u_dram - 1e-9 or a.estimate.inputs.get("u_dram") == u_dram, a.estimate
        assert any("≤ 1/u_dram (roofline)" in a.estimate.formula for a in items), [a.estimate for a in items]
    assert roofed, "the premise: a kernel of the file at the DRAM roof in the model"


H100 = Path(__file__).resolve().parents[1] / "data" / "ncu-reports" / "h100"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _measured(name: str, toolchain):
    from kernelscope.analysis.options import AnalysisOptions
    from kernelscope.analysis.pipeline import analyze

    return analyze(EXAMPLES / f"{name}.cu", AnalysisOptions(arch="sm_90", device="H100 SXM"), toolchain=toolchain,
                   measured_report=H100 / f"examples__{name}.ncu-rep", depth="quick")


def test_on_a_measured_profile_coalescing_is_not_bounded_by_the_memory_it_relieves(toolchain):
    """A profile read from an Nsight Compute report names ncu's throughputs ("sm", "memory", "l1", "l2",
    "dram"), not the emulator's units. strided_access's copy is bound by its scattered accesses, the
    memory throughput high: coalescing relieves exactly that, and was capped at 1.35x by 1/u_memory."""
    r = _measured("strided_access", toolchain)
    (k,) = [k for k in r.kernels if k.measured_duration_s]
    prof = next(p for p in r.profile.kernels if p.kernel == k.mangled)
    assert {"sm", "memory"} <= set(prof.utilization), prof.utilization  # the premise: ncu's names
    (a,) = [a for a in r.advice if a.kernel == k.mangled and "coalesced_access" in (a.optimizer, *a.also)]
    assert "roofline" not in a.estimate.formula, a.estimate.formula
    assert not any(key.startswith("u_") for key in a.estimate.inputs), a.estimate.inputs
    assert a.speedup > 1.0 / prof.utilization["memory"]  # above the cap it had


def test_on_a_measured_profile_no_item_is_bounded_by_a_throughput_it_relieves(toolchain):
    """reduction_divergent, SM throughput 77 %: three items came out at exactly 1/u_sm (1.297x), the
    divergent branch, the strength reduction and the coarsening, whose changes take work from the SM's
    pipes that "sm" measures."""
    r = _measured("reduction_divergent", toolchain)
    (k,) = [k for k in r.kernels if k.measured_duration_s]
    u_sm = next(p for p in r.profile.kernels if p.kernel == k.mangled).utilization["sm"]
    relieving = [a for a in r.advice if a.kernel == k.mangled
                 and {"divergent_branch", "strength_reduction", "thread_coarsening"} & {a.optimizer, *a.also}]
    assert relieving
    for a in relieving:
        assert "u_sm" not in a.estimate.inputs and a.speedup > 1.0 / u_sm, (a.optimizer, a.speedup, a.estimate.formula)
