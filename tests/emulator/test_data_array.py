"""The L1/shared data array and the LD/ST units (issue 33) on real nvcc output: global, local and shared requests pass
the same L1TEX stages one wavefront per cycle, so a loop that moves 512 B per warp from global
memory and 512 B from shared memory takes about as long as the two loops that move each alone
(units.py `MemoryHierarchy.global_access`). Before, the two had separate pipes and the mixed loop
ran at the slower one's speed (0.64 of the sum on sm_90 and sm_80)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope.analysis.context import AnalysisContext
from kernelscope.analysis.emulator import emulate_detailed
from kernelscope.analysis.machine.arch import load_arch_specs
from kernelscope.analysis.options import AnalysisOptions

from _build import build_example

KERNELS = Path(__file__).parent / "kernels" / "data_array.cu"
ITERS = 4096


def _cycles_per_trip(toolchain, arch: str, kernel: str, iters: int = ITERS) -> float:
    """SM cycles per loop trip of `kernel` on `arch`'s default device, 32 warps per SM: the data
    array or the LD/ST units, not latency, set the pace."""
    cat = load_arch_specs()
    a = cat.arch(arch)
    dev = cat.default_device(a)
    prog = build_example(KERNELS, toolchain, arch=arch)
    fn = next(f for f in prog.kernels if f.name.split("(")[0] == kernel)
    opts = AnalysisOptions(launch_hints={kernel: {"grid": 2 * dev.sm_count, "block": 512, "values": {"iters": iters}}})
    p = emulate_detailed(AnalysisContext.of(a, dev, opts, program=prog), fn).profile
    return p.duration_s * dev.clock_hz / iters


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_global_and_shared_wavefronts_share_the_data_array(toolchain, arch):
    cycles = {k: _cycles_per_trip(toolchain, arch, k) for k in ("from_global", "from_shared", "from_both")}
    alone = cycles["from_global"] + cycles["from_shared"]
    assert 0.8 * alone <= cycles["from_both"] <= 1.05 * alone, cycles


def test_a_shared_load_passes_the_ld_st_units(toolchain):
    """A shared-memory instruction's 32 addresses pass its SMSP's LD/ST units first: 4 of them per
    SMSP on GA10x (8 cycles an instruction), 8 on GA100 and GH100 (4 cycles). One-wavefront loads
    at immediate offsets, 32 warps per SM: one every cycle per SM on sm_80 and sm_90, one every 2
    on sm_86. Before, the LD/ST units were on the global route only and sm_86 ran them at 1."""
    # cycles per LDS per SM: 32 warps x 32 loads a trip
    per_load = {arch: _cycles_per_trip(toolchain, arch, "words_from_shared", 1024) / (32 * 32)
                for arch in ("sm_80", "sm_86", "sm_90")}
    assert per_load["sm_80"] == pytest.approx(1.0, rel=0.1), per_load
    assert per_load["sm_90"] == pytest.approx(1.0, rel=0.1), per_load
    assert per_load["sm_86"] == pytest.approx(2.0, rel=0.1), per_load
