"""cp.async (issue 33) on real nvcc output: a DEPBAR.LE SB0, N waits until at most N committed
groups of LDGSTS copies are in flight (engine.py `_async_waits`). Before, the wait was not
modeled and a loop that waits for every copy ran at issue speed."""

from __future__ import annotations

from pathlib import Path

from kernelscope.analysis.context import AnalysisContext
from kernelscope.analysis.emulator import emulate_detailed
from kernelscope.analysis.machine.arch import load_arch_specs
from kernelscope.analysis.options import AnalysisOptions

from _build import build_example

KERNELS = Path(__file__).parent / "kernels" / "async_copy.cu"
ITERS = 1024


def test_a_copy_waited_for_costs_its_latency_and_one_in_flight_hides_half(toolchain):
    cat = load_arch_specs()
    arch = cat.arch("sm_90")
    dev = cat.default_device(arch)
    prog = build_example(KERNELS, toolchain, arch="sm_90")
    cycles = {}
    for fn in prog.kernels:
        name = fn.name.split("(")[0]
        # one block of 4 warps per SM: each SMSP holds one warp, nothing hides its waits
        opts = AnalysisOptions(launch_hints={name: {"grid": dev.sm_count, "block": 128, "values": {"iters": ITERS}}})
        p = emulate_detailed(AnalysisContext.of(arch, dev, opts, program=prog), fn).profile
        cycles[name] = p.duration_s * dev.clock_hz / ITERS
    # every iteration's copy is new data: one round trip to memory, at least L2's latency
    l2_latency = arch.instructions["l2"].latency
    assert cycles["wait_all"] >= l2_latency, cycles
    # with one group left in flight, a copy is waited for an iteration after it was issued
    assert cycles["wait_one_behind"] <= 0.75 * cycles["wait_all"], cycles


def test_a_tiled_mma_gemm_reads_its_operands_from_l2_not_dram(toolchain):
    """The K loop's cp.async loads are first executed ~170 steps into the walk, past the neighbour
    walks' first 160: without a block-to-block translation for them, every block's tiles were
    distinct data and DRAM moved 2.2 GB for a GEMM whose operands and result are 128 MB."""
    cat = load_arch_specs()
    arch = cat.arch("sm_80")
    dev = cat.default_device(arch)
    prog = build_example(Path(__file__).parent / "kernels" / "mma_gemm.cu", toolchain, arch="sm_80")
    fn = prog.kernels[0]
    n = 4096
    opts = AnalysisOptions(launch_hints={"tc_gemm": {"grid": [n // 128, n // 128, 1], "block": 128,
                                                     "values": {"M": n, "N": n, "K": n}}})
    p = emulate_detailed(AnalysisContext.of(arch, dev, opts, program=prog), fn).profile
    footprint = 2 * n * n * 2 + n * n * 4  # A and B (FP16) read, C (FP32) written
    assert p.bytes["dram"] <= 1.5 * footprint, p.bytes
    assert p.bytes["l2"] >= 10 * p.bytes["dram"], p.bytes  # each tile row is read by 32 blocks
