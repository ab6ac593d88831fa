"""Local memory and generic pointers into shared memory (issue 33), on real nvcc output.

* A generic load whose every lane's address lies in the shared window is a shared access: the
  shared pipe, its latency and a short-scoreboard wait, not the L1/L2 route (model._walk_lanes).
* Local loads hit L1 as far as L1 holds the resident threads' stack frames (model._local_in_l1).
* A local access whose index differs between lanes is not coalesced (memory.memory_shapes)."""

from __future__ import annotations

from pathlib import Path

from kernelscope.analysis.context import AnalysisContext
from kernelscope.analysis.emulator import emulate_detailed
from kernelscope.analysis.emulator.decode import M_SHARED
from kernelscope.analysis.emulator.model import prepare
from kernelscope.analysis.frontend import isa
from kernelscope.analysis.machine.arch import load_arch_specs
from kernelscope.analysis.options import AnalysisOptions

from _build import build_example

KERNELS = Path(__file__).parent / "kernels"
ITERS = 4096


def _sm90():
    cat = load_arch_specs()
    arch = cat.arch("sm_90")
    return arch, cat.default_device(arch)


def test_a_generic_pointer_into_shared_memory_reads_shared_memory(toolchain):
    arch, dev = _sm90()
    prog = build_example(KERNELS / "generic_shared.cu", toolchain)
    fn = prog.kernels[0]
    opts = AnalysisOptions(launch_hints={"generic_smem": {"grid": dev.sm_count, "block": 128, "values": {"iters": ITERS}}})
    ctx = AnalysisContext.of(arch, dev, opts, program=prog)
    k = prepare(ctx, fn).decoded
    generic = [s for s, ins in enumerate(k.instr) if ins.opcode == "LD"]
    assert generic and all(k.mem[s] == M_SHARED for s in generic)
    p = emulate_detailed(ctx, fn).profile
    # one warp per SMSP, each iteration a local load (the pointer), a shared load and an FFMA in a
    # chain: well under one L2 round trip (200 cycles on sm_90), which each of the loads took
    assert p.duration_s * dev.clock_hz / ITERS < arch.instructions["l2"].latency, p.duration_s
    assert p.bytes["l2"] < 0.01 * p.bytes["shared"], p.bytes


def test_a_local_array_indexed_by_the_data_is_not_coalesced(toolchain, examples_dir):
    arch, dev = _sm90()
    prog = build_example(examples_dir / "local_array.cu", toolchain)
    fn = prog.kernels[0]
    k = prepare(AnalysisContext.of(arch, dev, AnalysisOptions(), program=prog), fn).decoded
    local = [s for s, ins in enumerate(k.instr) if isa.memory_space(ins.opcode) == "local"]
    # hist[data[i] & 31] += 1: each lane's bin is its own line of the interleaved frame
    divergent = [s for s in local if k.shape[s].pattern == "data_dependent"]
    assert divergent and all(k.shape[s].wavefronts == 32 for s in divergent)
    # the stack frames of the resident threads (128 B each) mostly fit in L1
    assert all(k.shape[s].l1_hit_rate > 0.5 for s in local if not k.is_store[s])
