"""No modeled kernel breaks a physical limit (issue 20 item 5): above the device's peak FLOP/s per
precision, above a memory level's bandwidth for its modeled traffic, or with fewer FLOPs than its
loops execute for the model's own trip counts. Over every example in examples/ and every test
kernel in tests/emulator/kernels/ on sm_90 and sm_80, and over every other kernel source under
tests/ (the real programs of tests/data/real/, the LSP, action, capture and input fixtures) on
sm_90, compiled by the real nvcc (benchmarks/accuracy/run.py
checks the same over its kernels and exits 1 on a violation).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from kernelscope.analysis.context import AnalysisContext
from kernelscope.analysis.machine.arch import load_arch_specs
from kernelscope.analysis.emulator.limits import limit_violations, loop_flops_floor
from kernelscope.analysis.emulator.model import emulate_detailed, prepare
from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.machine.roofline import roofline_model

from _build import CORPUS, ROOT, build_example, real_flags

SOURCES = sorted((ROOT / "examples").glob("*.cu")) + sorted((Path(__file__).parent / "kernels").glob("*.cu"))
# every other kernel the tests compile (real programs, LSP and action fixtures...), on sm_90
OTHERS = [p for p in CORPUS if p not in SOURCES]


@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
@pytest.mark.parametrize("src", SOURCES, ids=lambda p: p.name)
def test_no_kernel_is_predicted_beyond_the_device(src, arch, toolchain):
    _check(src, arch, toolchain)


@pytest.mark.parametrize("src", OTHERS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_real_kernel_is_predicted_beyond_the_device(src, toolchain):
    _check(src, "sm_90", toolchain)


def _check(src: Path, arch: str, toolchain) -> None:
    cat = load_arch_specs()
    spec = cat.arch(arch)
    device = cat.default_device(spec)
    ceilings = roofline_model(cat, device)
    prog = build_example(src, toolchain, arch=arch, flags=real_flags(src))
    assert prog.kernels
    for k in prog.kernels:
        options = AnalysisOptions()
        prep = prepare(AnalysisContext.of(spec, device, options, program=prog), k)
        warps = prep.launch.blocks * math.ceil(prep.launch.threads_per_block / spec.warp_size)
        floor = loop_flops_floor(prep.decoded, warps)
        emu = emulate_detailed(AnalysisContext.of(spec, device, options, program=prog), k)
        assert limit_violations(emu.profile, ceilings, floor) == ()


def test_the_check_catches_a_body_run_once(toolchain):
    # the floor is what a loop's every-iteration FLOPs come to; a profile counting one iteration
    # of the register-blocked K loop (the CALL.REL.NOINC bug) falls below it
    cat = load_arch_specs()
    spec = cat.arch("sm_80")
    device = cat.default_device(spec)
    prog = build_example(Path(__file__).parent / "kernels" / "gemm_register_blocked.cu", toolchain, arch="sm_80")
    (k,) = prog.kernels
    prep = prepare(AnalysisContext.of(spec, device, AnalysisOptions(), program=prog), k)
    warps = prep.launch.blocks * math.ceil(prep.launch.threads_per_block / spec.warp_size)
    floor = loop_flops_floor(prep.decoded, warps)
    emu = emulate_detailed(AnalysisContext.of(spec, device, AnalysisOptions(), program=prog), k)
    trips = max(L.trip for L in prep.decoded.loops)
    once = emu.profile.model_copy(update={"flops": {p: v / trips for p, v in emu.profile.flops.items()}})
    assert floor.get("fp32", 0) > 0
    assert any("fewer than" in v for v in limit_violations(once, roofline_model(cat, device), floor))
    fast = emu.profile.model_copy(update={"duration_s": emu.profile.duration_s / 1000})
    assert any("above the peak" in v for v in limit_violations(fast, roofline_model(cat, device)))
