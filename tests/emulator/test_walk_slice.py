"""The walk steps over the instructions whose results it never reads (walk.inert_slots): what it
returns is the same as executing them, on real nvcc output, and a GEMM's arithmetic costs it
nothing. (Elsewhere an unknown base may take another value: a skipped instruction makes no
stand-in, and stand-ins are numbered as made. None of these kernels skips one.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope.analysis.context import AnalysisContext
from kernelscope.analysis.emulator import walk as walk_module
from kernelscope.analysis.emulator.decode import K_OP
from kernelscope.analysis.emulator.model import prepare
from kernelscope.analysis.frontend.program import base_name
from kernelscope.analysis.machine.arch import load_arch_specs
from kernelscope.analysis.options import AnalysisOptions, LaunchHint

from _build import build_example

KERNELS = Path(__file__).parent / "kernels"
CASES = [
    ("mma_gemm.cu", "tc_gemm", "sm_80", LaunchHint(grid=(32, 32, 1), block=128, values={"M": 4096, "N": 4096, "K": 4096})),
    ("lane_values.cu", "sgemm_textbook", "sm_90", LaunchHint(grid=(32, 32, 1), block=(32, 32, 1),
                                                            values={"M": 1024, "N": 1024, "K": 1024})),
    ("lane_values.cu", "guarded_sum", "sm_86", LaunchHint(grid=1, block=32, values={
        "n": 8, **{f"a{j}": g for j, g in enumerate([32, 12, 8, 16, 24, 32, 4, 20])}})),
    ("lane_values.cu", "chunks_ceil", "sm_90", LaunchHint(grid=64, block=512, values={"n": 51_000})),
    ("register_tiled.cu", "sgemm_register_tiled", "sm_86", LaunchHint(grid=(32, 32, 1), block=256,
                                                                      values={"M": 4096, "N": 4096, "K": 4096})),
]


def _first_walk(toolchain, source: str, kernel: str, arch_name: str, hint: LaunchHint, monkeypatch):
    """The decoded kernel and the launch of the first warp the analysis walks."""
    cat = load_arch_specs()
    arch = cat.arch(arch_name)
    program = build_example(KERNELS / source, toolchain, arch=arch_name)
    k = next(k for k in program.kernels if base_name(k.name) == kernel)
    seen = []
    real = walk_module._walk
    monkeypatch.setattr(walk_module, "_walk", lambda *a: seen.append(a) or real(*a))
    walk_module._MEMO.clear()
    prepare(AnalysisContext.of(arch, cat.default_device(arch), AnalysisOptions(launch_hints={kernel: hint}),
                               program.source, program), k)
    monkeypatch.setattr(walk_module, "_walk", real)
    decoded, launch = seen[0][:2]
    return decoded, launch


def _global_stores(decoded) -> list[int]:
    """The kernel's STG slots: where the walk reaches them, it has run to the epilogue."""
    return [s for s in range(len(decoded)) if decoded.is_store[s] and decoded.instr[s].opcode.startswith("STG")]


def _outputs(r: walk_module.WalkResult):
    """What the analysis reads of a walk; an access's `spent` (the cost bound's count) aside."""
    def strip(by_slot):
        return {s: [(a.lanes, a.addresses, a.relative, a.reason, a.step) for a in execs] for s, execs in by_slot.items()}
    return (strip(r.accesses), strip(r.local), r.decisions, r.trips, r.unknown_branches, r.clock, r.truncated)


@pytest.mark.parametrize("source, kernel, arch, hint", CASES, ids=[c[1] for c in CASES])
def test_stepping_over_unread_results_changes_nothing_the_walk_returns(toolchain, monkeypatch, source, kernel,
                                                                       arch, hint):
    decoded, launch = _first_walk(toolchain, source, kernel, arch, hint, monkeypatch)
    big = 50_000
    sliced = walk_module._walk(decoded, launch, walk_module.MAX_ITERATIONS, big)
    monkeypatch.setattr(walk_module, "inert_slots", lambda k: {})
    full = walk_module._walk(decoded, launch, walk_module.MAX_ITERATIONS, big)
    assert not full.truncated
    assert _outputs(sliced) == _outputs(full)
    assert sliced.steps <= full.steps


def test_a_gemms_arithmetic_is_stepped_over(toolchain, monkeypatch):
    """tc_gemm's MMAs and the FP32 stores' data: none is read by an address or a branch."""
    decoded, launch = _first_walk(toolchain, *CASES[0], monkeypatch)
    inert = walk_module.inert_slots(decoded)
    ops = [decoded.instr[s].opcode for s in range(len(decoded)) if decoded.kind[s] == K_OP]
    mmas = [s for s in range(len(decoded)) if decoded.instr[s].opcode == "HMMA"]
    assert mmas and all(s in inert for s in mmas)
    # and the walk reaches the epilogue's stores within its step bound
    r = walk_module.walk(decoded, launch)
    stores = _global_stores(decoded)
    assert stores and all(s in r.accesses for s in stores), (len(ops), r.steps, r.truncated)


def test_the_walk_reaches_a_bounds_checked_register_tiled_gemms_epilogue(toolchain, monkeypatch):
    """Its bounds checks (size_t indices, as in Lei Mao's V04-V06) are live, about half of each
    K-step's instructions: at the bound of 1,200 steps the walk stopped inside the K loop and
    never saw the epilogue's stores, so their shapes stayed the address analysis's. At
    `walk.MAX_STEPS` (3,000 from 2026-11-29) it reaches them."""
    decoded, launch = _first_walk(toolchain, *CASES[4], monkeypatch)
    r = walk_module.walk(decoded, launch)
    stores = _global_stores(decoded)
    assert stores and all(s in r.accesses for s in stores), (r.steps, r.truncated)
    assert not r.truncated, r.steps
    assert r.steps > 1200, r.steps  # the bound it stopped at before
