"""The instruction cache's stream prefetch on real nvcc output (docs/emulator.md, "Instruction cache").

Both kernels are larger than the L0 i-cache of sm_90 (48 KiB per sub-partition, `arch.sm_90.icache`),
so every line of their code comes from beyond it each time it runs. Straight-line code that its
warps run through together is fetched ahead of them by the sub-partition's stream buffer: fetch is
not what holds it. A loop whose body is larger than the cache, run by warps that spread over that
body, restarts the one stream at each warp's miss: fetch is its top stall. Each check is made
against the same arch with the prefetcher off (`prefetch_lines = 0`), which must change the outcome.

The sizes and fill rates are the H100's (benchmarks/microbench): the last test runs the measured
instruction-fetch sweep through the model and holds it to the measured cycles per instruction.
"""

from __future__ import annotations

import pytest

from kernelscope.analysis.context import AnalysisContext
from kernelscope.analysis.emulator import emulate
from kernelscope.analysis.machine.arch import load_arch_specs
from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.profile import StallReason

from _build import build_example

HEADER = "#define N (1 << 22)\n"

#: a fully unrolled run of 4,096 FMAs on 8 independent accumulators, a GEMM micro-tile's shape:
#: about 73 KiB of SASS executed once per thread
STRAIGHT = HEADER + """
__global__ void straight(const float* __restrict__ x, float* __restrict__ y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float a[8];
#pragma unroll
    for (int v = 0; v < 8; ++v) a[v] = x[i + v * N / 8];
#pragma unroll
    for (int u = 0; u < 512; ++u)
#pragma unroll
        for (int v = 0; v < 8; ++v)
            a[v] = fmaf(a[v], 0.999f + (u * 8 + v) * 1e-7f, u * 0.25f);
    float s = 0.f;
#pragma unroll
    for (int v = 0; v < 8; ++v) s += a[v];
    y[i] = s;
}
void run(const float* x, float* y) { straight<<<N / 256, 256>>>(x, y); }
"""

#: 4,096 FMAs on 8 independent accumulators unrolled in a loop run 64 times: a body of about 64 KiB
#: of SASS, larger than L0; one warp per sub-partition, the H100 sweep's second configuration
#: (2.79 cycles per instruction measured at 64 KiB: fetch holds it)
LOOP = HEADER + """
__global__ void loop(const float* __restrict__ x, float* __restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float a[8];
#pragma unroll
    for (int v = 0; v < 8; ++v) a[v] = x[i + v * N / 8];
    for (int j = 0; j < n; ++j) {
#pragma unroll
        for (int u = 0; u < 512; ++u)
#pragma unroll
            for (int v = 0; v < 8; ++v)
                a[v] = fmaf(a[v], 0.999f + u * 1e-7f, u * 0.25f);
    }
    float s = 0.f;
#pragma unroll
    for (int v = 0; v < 8; ++v) s += a[v];
    y[i] = s;
}
void run(const float* x, float* y) { loop<<<132, 128>>>(x, y, 64); }
"""


@pytest.fixture(scope="module")
def target():
    cat = load_arch_specs()
    arch = cat.arch("sm_90")
    assert arch.icache is not None and arch.icache.prefetch_lines > 0
    return arch, cat.default_device(arch)


def _no_prefetch(arch):
    return arch.model_copy(update={"icache": arch.icache.model_copy(update={"prefetch_lines": 0})})


def _kernel(src: str, name: str, toolchain, tmp_path):
    path = tmp_path / f"{name}.cu"
    path.write_text(src)
    prog = build_example(path, toolchain)
    (k,) = prog.kernels
    return prog, k


def _stalls(profile) -> dict[StallReason, float]:
    """Each stall reason's share of the samples (`selected` is issuing, not a stall)."""
    out: dict[StallReason, float] = {}
    for pc in profile.pcs:
        for reason, v in pc.samples.items():
            out[reason] = out.get(reason, 0.0) + v
    total = sum(out.values())
    return {r: v / total for r, v in out.items() if r != StallReason.selected}


def _code_bytes(k, arch) -> int:
    return len(k.sass.instructions) * arch.icache.instruction_bytes


def _top(stalls: dict[StallReason, float]) -> StallReason:
    return max(stalls, key=stalls.get)


def test_straight_line_code_larger_than_the_l1_icache_streams(target, toolchain, tmp_path):
    arch, dev = target
    prog, k = _kernel(STRAIGHT, "straight", toolchain, tmp_path)
    assert _code_bytes(k, arch) > arch.icache.l0_bytes
    streamed = emulate(AnalysisContext.of(arch, dev, AnalysisOptions(), program=prog), k)
    unfetched = emulate(AnalysisContext.of(_no_prefetch(arch), dev, AnalysisOptions(), program=prog), k)
    with_sb, without = _stalls(streamed), _stalls(unfetched)
    # without the prefetcher every line a warp reaches first is an L0 miss, each paid in full
    assert without[StallReason.no_instruction] > 0.1, without
    assert _top(with_sb) is not StallReason.no_instruction, with_sb
    assert with_sb[StallReason.no_instruction] < without[StallReason.no_instruction] / 1.5
    assert streamed.duration_s < unfetched.duration_s


def test_a_loop_whose_body_exceeds_the_icache_is_fetch_bound(target, toolchain, tmp_path):
    arch, dev = target
    prog, k = _kernel(LOOP, "loop", toolchain, tmp_path)
    assert _code_bytes(k, arch) > arch.icache.l0_bytes
    p = emulate(AnalysisContext.of(arch, dev, AnalysisOptions(), program=prog), k)
    stalls = _stalls(p)
    assert _top(stalls) is StallReason.no_instruction, stalls
    # the stream still hides part of it: the prefetcher is on, and it is not the no-prefetch model
    unfetched = emulate(AnalysisContext.of(_no_prefetch(arch), dev, AnalysisOptions(), program=prog), k)
    assert p.duration_s < unfetched.duration_s


def test_the_model_runs_the_measured_instruction_fetch_sweep_at_the_measured_rate():
    """benchmarks/microbench/ifetch_model.cu launches hierarchy.cu's fetch kernel (a loop of N FFMAs
    on 8 chains) with one warp at each body size the H100 ran: 4 KiB to 256 KiB. Measured cycles per
    instruction: ~1 while the loop fits L0, 2.22 from L1 at 64 KiB, 5.64 from L2 at 256 KiB. The
    model must give each within 15 %, and the three regimes in order."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    bench = Path(__file__).resolve().parents[2] / "benchmarks" / "microbench"
    measured = {r["body_bytes"]: r["cycles_per_instruction_per_scheduler"]
                for r in json.loads((bench / "h100_2026-11-27.json").read_text())["ifetch"] if r["blocks"] == 1}
    run = subprocess.run([sys.executable, "-m", "kernelscope.cli", "analyze", "ifetch_model.cu", "--quick", "--json",
                          "--arch", "sm_90", "--device", "H100 SXM"], capture_output=True, text=True, timeout=600,
                         cwd=bench)
    assert run.returncode == 0, run.stderr
    dev = load_arch_specs().device("H100 SXM")
    modeled = {}
    for k in json.loads(run.stdout)["kernels"]:
        n = int(k["name"].split("<")[1].split(">")[0])
        cycles = (k["predicted_duration_s"] - dev.launch_overhead_us * 1e-6) * dev.boost_clock_mhz * 1e6
        modeled[n * 16] = cycles / (1 << 22)  # each launch issues 2^22 FFMAs
    assert set(modeled) == set(measured)
    for size, cpi in measured.items():
        assert modeled[size] == pytest.approx(cpi, rel=0.15), (size, modeled[size], cpi)
    assert modeled[16384] < 1.2 < modeled[65536] < 3.0 < modeled[262144]
