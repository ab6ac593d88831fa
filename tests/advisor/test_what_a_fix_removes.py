"""An estimate counts what the fix removes in the model, not all that its instructions cost (issue 34
item 1: an estimate bounded by the emulated stalls the change removes).

Fewer, wider requests remove what the requests cost, not the wait for their data. Four neighbouring 32-bit loads of one thread become one float4 load: one request instead of four
issues and waits for a place in the LSU queue, but its data comes back no sooner than the four
narrow loads', which were in flight together. So `vectorize_loads` counts the loads' issue and
queue (throttle) samples, never the long-scoreboard waits blamed on them.

A bank conflict's fix removes the replays: a conflict-free access still issues and is served in
its own wavefronts, so an n-way conflict keeps 1/n of the access's cost (as coalescing keeps the
sectors a coalesced request needs).
"""

from __future__ import annotations

import pytest

from .realkernel import analyse

KERNEL = """#define N (1 << 22)
__global__ void k(const float* __restrict__ x, float* __restrict__ y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = x[4 * i] + x[4 * i + 1] + x[4 * i + 2] + x[4 * i + 3];  // MARK
}
void run(const float* x, float* y) { k<<<%s, %s>>>(x, y); }
"""


def test_a_latency_bound_kernel_gains_nothing_from_wider_loads(toolchain, tmp_path):
    """One warp per block, a block per SM: the queue is never full, the loads' cost is the wait for
    their data, which a float4 load does not shorten."""
    r = analyse(KERNEL % ("132", "32"), toolchain, tmp_path)
    assert r.advice, "the kernel has other advice (its stride, its launch)"
    assert not r.by("vectorize_loads"), [(a.speedup, a.message) for a in r.by("vectorize_loads")]


def test_a_queue_bound_kernel_gains_the_requests_it_removes(toolchain, tmp_path):
    """The full grid: the loads wait for the LSU queue, and a quarter of the requests wait less."""
    r = analyse(KERNEL % ("N / 1024", "256"), toolchain, tmp_path)
    (a,) = r.by("vectorize_loads")
    assert a.speedup > 1.01 and r.line_of("// MARK") in a.lines
    assert "the wait for their data stays" in a.message
    # each request touches 16 sectors where 4 carry its bytes, but the first load brings the lines and
    # the other three hit L1: the line sends past L1 what coalesced loads would. Coalescing saves no
    # DRAM byte, and the DRAM-bound model makes no coalescing item (it claimed 1.40x, above its own
    # DRAM bound, before it counted the line's loads together: base.sectors_past_l1)
    assert not r.by("coalesced_access")


CONFLICT = """#define N (1 << 22)
__global__ void k(const float* __restrict__ x, float* __restrict__ y)
{
    __shared__ float s[32 * 32];
    int t = threadIdx.x;
    for (int j = 0; j < 32; ++j) s[j * 32 + t] = x[blockIdx.x * 1024 + j * 32 + t];
    __syncthreads();
    float acc = 0.0f;
    for (int j = 0; j < 256; ++j) acc += s[(j * 32 + t * %d) & 1023];  // MARK
    y[blockIdx.x * 32 + t] = acc;
}
void run(const float* x, float* y) { k<<<N / 1024, 32>>>(x, y); }
"""


@pytest.mark.parametrize("stride, ways", [(2, 2), (32, 32)])
def test_a_bank_conflict_fix_removes_the_replays(stride, ways, toolchain, tmp_path):
    """Lanes `stride` words apart: a `ways`-way conflict, served in `ways` wavefronts where 1 does;
    the fix keeps one of them, 1/ways of the loads' cost."""
    r = analyse(CONFLICT % stride, toolchain, tmp_path)
    (a,) = [a for a in r.by("bank_conflicts") if r.line_of("// MARK") in a.lines]
    assert a.estimate.inputs["wavefronts"] == ways and a.estimate.inputs["ideal_wavefronts"] == 1
    assert a.estimate.inputs["fraction"] == pytest.approx(1 - 1 / ways)
    removed = a.estimate.inputs["T"] / (a.estimate.inputs["T"] - a.estimate.inputs["M"] * (1 - 1 / ways))
    assert a.estimate.inputs.get("uncapped", a.estimate.speedup) == pytest.approx(removed, rel=1e-6)
    assert a.estimate.speedup == pytest.approx(min(removed, 1.5), rel=1e-6)  # shown capped until re-modeled
