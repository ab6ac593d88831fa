"""Local memory and generic pointers into shared memory (issue 33), on real nvcc output.

* A generic load whose every lane's address lies in the shared window is a shared access: the
  shared pipe, its latency and a short-scoreboard wait, not the L1/L2 route (model._walk_lanes).
* Local loads hit L1 as far as L1 holds the resident threads' stack frames (model._local_in_l1).
* A local access whose index differs between lanes is not coalesced (memory.memory_shapes).
* Where the walk computed every lane's index, the lines the interleaved frame puts them in decide
  the shape: one for a warp-uniform index the address analysis cannot prove uniform, one per
  distinct index otherwise (memory.walked_shapes, walk.interleaved)."""

from __future__ import annotations

from pathlib import Path

import pytest

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


@pytest.mark.parametrize("arch_name", ["sm_90", "sm_120"])
def test_a_stage_picked_by_a_64_bit_counter_modulo_3_is_shared_memory(toolchain, arch_name):
    # ring[t % 3] with a 64-bit t: the division by 3 is a chain of UIMAD.WIDE.U32 whose carry-out
    # the .X step adds in; without the carry the local slot's address, so the pointer loaded from
    # it, is unknown and every stage access was taken as a global one
    cat = load_arch_specs()
    arch = cat.arch(arch_name)
    dev = cat.default_device(arch)
    prog = build_example(KERNELS / "stage_ring.cu", toolchain, arch=arch_name)
    fn = prog.kernels[0]
    hint = {"grid": dev.sm_count, "block": 256, "dynamic_smem": 3 * 256 * 4, "values": {"stages": 64}}
    ctx = AnalysisContext.of(arch, dev, AnalysisOptions(launch_hints={"stage_ring": hint}), program=prog)
    k = prepare(ctx, fn).decoded
    generic = [s for s, ins in enumerate(k.instr) if ins.opcode in ("LD", "ST")]
    # the remainder loop after the unrolled body does not run for 64 stages
    walked = [s for s in generic if k.shape[s].pattern != "unknown"]
    assert len(walked) >= 8, [(k.instr[s].opcode, k.shape[s].pattern) for s in generic]
    assert all(k.mem[s] == M_SHARED for s in walked), [(k.instr[s].opcode, k.mem[s]) for s in walked]


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


def _indexed_local(name: str, toolchain) -> list:
    """Shapes of the kernel's local accesses through a computed index (not the frame's [R1+imm])."""
    arch, dev = _sm90()
    prog = build_example(KERNELS / "local_index.cu", toolchain)
    fn = next(f for f in prog.kernels if f.name.startswith(name))
    opts = AnalysisOptions(launch_hints={name: {"grid": 2 * dev.sm_count, "block": 256, "values": {"n": 64}}})
    k = prepare(AnalysisContext.of(arch, dev, opts, program=prog), fn).decoded
    return [k.shape[s] for s, ins in enumerate(k.instr)
            if isa.memory_space(ins.opcode) == "local" and not any("[R1" in o for o in ins.operands)]


def test_a_local_index_the_same_for_every_lane_of_a_warp_is_one_line(toolchain):
    # hist[((threadIdx.x >> 5) + i) & 31]: the walk computes the warp's one bin each trip
    shapes = _indexed_local("warp_index", toolchain)
    walked = [sh for sh in shapes if sh.pattern != "data_dependent"]
    assert walked and all(sh.wavefronts == 1.0 and sh.pattern == "coalesced" for sh in walked), shapes


def test_a_local_index_that_differs_between_lanes_touches_one_line_per_index(toolchain):
    # hist[((threadIdx.x & 7) + i) & 31]: 8 bins per warp, each a line of the interleaved frame
    shapes = _indexed_local("lane_index", toolchain)
    walked = [sh for sh in shapes if sh.pattern != "data_dependent"]
    assert walked and all(sh.wavefronts == 8.0 for sh in walked), shapes


def test_a_two_byte_local_access_spans_its_lanes_32_bit_words(toolchain):
    # unsigned short hist[((threadIdx.x >> 5) + i) & 31]: one line, and each lane's 2 bytes in
    # its own 32-bit word of the interleaved frame: 128 B, four sectors, for 64 B of data
    shapes = _indexed_local("short_bins", toolchain)
    walked = [sh for sh in shapes if sh.pattern != "data_dependent"]
    assert walked and all(sh.wavefronts == 1.0 and sh.bytes_l1 == 128.0 for sh in walked), shapes
