"""Same-address atomics contend (issue 20 item 4): updates of one word serialize at the L2 slice
that owns it, one per cycle GPU-wide, so an atomics-only reduction is bounded by its update count;
a guard that elects one lane per warp sends one update, not 32, and one that elects one thread of
the block one per block. Kernels in kernels/atomics.cu, compiled by the real nvcc."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope.analysis.context import AnalysisContext
from kernelscope.analysis.machine.arch import load_arch_specs
from kernelscope.analysis.emulator.memory import memory_shapes
from kernelscope.analysis.emulator.model import emulate_detailed
from kernelscope.analysis.emulator.units import SAME_ADDRESS_UPDATES_PER_CYCLE
from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.frontend.source import parse_source

from _build import build_example

FILE = Path(__file__).parent / "kernels" / "atomics.cu"
UPDATES = 1 << 22  # one per thread of every_thread's launch


@pytest.fixture(scope="module")
def built(toolchain):
    cat = load_arch_specs()
    arch = cat.arch("sm_90")
    return build_example(FILE, toolchain), parse_source(FILE.read_text()), arch, cat.default_device(arch)


def _kernel(program, name):
    return next(k for k in program.kernels if k.name.startswith(name + "("))


def _atomic_shapes(program, name, block=(256, 1, 1)):
    k = _kernel(program, name)
    shapes = memory_shapes(k.mangled, k.sass.instructions, block, (UPDATES // 256, 1, 1), None)
    return [shapes[(k.mangled, i.pc)] for i in k.sass.instructions if i.opcode in ("REDG", "ATOMG", "RED", "ATOM")]


@pytest.mark.parametrize("name, block, lanes", [
    ("every_thread", (256, 1, 1), 32), ("one_lane_per_warp", (256, 1, 1), 1), ("bounds_guarded", (256, 1, 1), 32),
    ("per_block", (256, 1, 1), 0),
    # `threadIdx.x == 0` elects one thread of a 256-thread block: 1 update per 8 warps
    ("one_thread_per_block", (256, 1, 1), 1 / 8),
    # `threadIdx.x == 0 && threadIdx.y == 0` (one `(y | x) != 0` test in SASS) in a 32 x 32 block: 1 per 32 warps
    ("one_thread_per_2d_block", (32, 32, 1), 1 / 32)])
def test_lanes_that_update_one_word(built, name, block, lanes):
    """Per warp, on average over the block: the emulator runs every warp through the guard."""
    program, *_ = built
    (shape,) = _atomic_shapes(program, name, block)
    assert shape.same_address_lanes == lanes


def test_an_atomics_only_reduction_is_bounded_by_its_updates(built):
    """4 M updates of one word at one per cycle cannot take fewer than 4 M cycles; a warp-level
    pre-reduction sends 32x fewer and is predicted about that much faster."""
    program, source, arch, device = built
    e = emulate_detailed(AnalysisContext.of(arch, device, AnalysisOptions(), source, program=program), _kernel(program, "every_thread"))
    assert e.prediction.cycles >= UPDATES / SAME_ADDRESS_UPDATES_PER_CYCLE
    assert e.prediction.cycles < 1.5 * UPDATES / SAME_ADDRESS_UPDATES_PER_CYCLE
    assert e.profile.utilization["l2_atomic"] > 0.9
    w = emulate_detailed(AnalysisContext.of(arch, device, AnalysisOptions(), source, program=program), _kernel(program, "one_lane_per_warp"))
    assert 20 < e.prediction.cycles / w.prediction.cycles < 40


def test_the_drain_at_exit_is_blamed_on_the_writes(built):
    """A warp at EXIT waits for its outstanding atomics: those samples are the atomics' cost
    (category 'memory drain'), not the closing brace's."""
    from kernelscope.analysis.advisor.blame import DRAIN, blame

    program, source, arch, device = built
    k = _kernel(program, "every_thread")
    e = emulate_detailed(AnalysisContext.of(arch, device, AnalysisOptions(), source, program=program), k)
    b = blame(k, e.profile)
    drains = b.edges_where(lambda x: x.category == DRAIN)
    assert drains and all(x.def_opcode.startswith(("REDG", "RED", "ATOM")) for x in drains)
    assert all(x.use_opcode == "EXIT" for x in drains)
