"""The walked lanes' memory shapes against what an H100 measured (issue #32, measured check).

tests/data/ncu-reports/h100/ holds Nsight Compute reports of the repository's examples and real
programs with source counters per PC: `memory_l2_theoretical_sectors_global` (32 B sectors of
global requests) and `memory_l1_wavefronts_shared` (shared wavefronts, bank conflicts included),
and `inst_executed`. For every unpredicated global and shared instruction the reports count, the
sectors (global) or wavefronts (shared) per executed warp instruction are compared with the
model's shape for that PC, with each kernel emulated at the report's own launch. (A predicated
instruction is left out: ncu counts its executions with every lane off, the walked warp does not.)
"""

from __future__ import annotations

import math
from pathlib import Path

from kernelscope.analysis.context import AnalysisContext
from kernelscope.analysis.emulator.decode import M_GLOBAL, M_SHARED
from kernelscope.analysis.emulator.model import EmulationError, EmulationSettings, prepare
from kernelscope.analysis.frontend.program import base_name
from kernelscope.analysis.machine.arch import load_arch_specs
from kernelscope.analysis.measure.ncu_report import actions, function_map, launch_config, open_report, per_pc
from kernelscope.analysis.options import AnalysisOptions, LaunchHint

from _build import REAL, ROOT, build_example, real_flags

H100 = ROOT / "tests" / "data" / "ncu-reports" / "h100"


def _source(report: Path) -> Path | None:
    kind, *rest = report.stem.split("__")
    if kind == "examples":
        return ROOT / "examples" / f"{rest[0]}.cu"
    if kind == "real":
        return REAL.joinpath(*rest).with_suffix(".cu")
    return None


def _compare(toolchain, lanes: bool) -> list[tuple[str, str, float, float, str]]:
    """(kernel, metric, measured per warp instruction, modeled, pattern) per counted PC."""
    cat = load_arch_specs()
    arch = cat.arch("sm_90")
    device = cat.default_device(arch)
    rows = []
    for report in sorted(H100.glob("*__*.ncu-rep")):
        src = _source(report)
        if src is None or not src.is_file():
            continue
        program = build_example(src, toolchain, flags=real_flags(src))
        ctx = open_report(report)
        for act in actions(ctx, report):
            k = next((k for k in program.kernels if base_name(k.name) == base_name(act.name())), None)
            if k is None:
                continue
            executed = per_pc(act, "inst_executed")
            sectors = per_pc(act, "memory_l2_theoretical_sectors_global")
            wavefronts = per_pc(act, "memory_l1_wavefronts_shared")
            fmap, _ = function_map(act, k.mangled, list(executed))
            if len(fmap.starts) != 1:
                continue
            lc = launch_config(act)
            hint = LaunchHint(grid=lc.grid, block=lc.block, dynamic_smem=lc.dynamic_smem or None)
            try:
                prep = prepare(AnalysisContext.of(arch, device, AnalysisOptions(launch_hints={base_name(k.name): hint}), program.source, program), k, settings=EmulationSettings(execute_lanes=lanes))
            except EmulationError:
                continue
            d = prep.decoded
            slot = {d.pc[s]: s for s in range(len(d)) if d.fn[s] == k.sass.mangled_name}
            for pc, n in executed.items():
                s = slot.get(pc - fmap.starts[0])
                if s is None or not n or d.instr[s].predicate is not None:
                    continue
                space = d.instr[s].memory_space
                if pc in sectors and d.mem[s] == M_GLOBAL and space == "global":
                    rows.append((k.name, "sectors", sectors[pc] / n, d.shape[s].requests * 4, d.shape[s].pattern))
                if pc in wavefronts and d.mem[s] == M_SHARED and space == "shared":
                    rows.append((k.name, "wavefronts", wavefronts[pc] / n, d.shape[s].wavefronts, d.shape[s].pattern))
    return rows


def _within(row, factor: float = 1.25) -> bool:
    _, _, measured, modeled, _ = row
    return abs(math.log(max(modeled, 1e-9) / max(measured, 1e-9))) <= math.log(factor)


def test_sectors_and_wavefronts_per_instruction_match_the_h100(toolchain):
    lanes = _compare(toolchain, lanes=True)
    affine = _compare(toolchain, lanes=False)
    assert len(lanes) == len(affine) > 800
    followed = [r for r in lanes if r[4] not in ("unknown", "data_dependent")]
    assert len(followed) == len(lanes)  # every counted access of these programs is followed
    good = [r for r in lanes if _within(r)]
    # 2026-11-27: 922 of 922 within 1.25x (the affine analysis alone: 857; 49 it could not follow)
    assert len(good) >= 0.98 * len(lanes), [r for r in lanes if not _within(r)][:10]
    assert len(good) > len([r for r in affine if _within(r)])
    # the naive transpose's stores: 32 sectors per request, measured and modeled
    naive = [r for r in lanes if r[0].startswith("transposeNaive") and r[1] == "sectors" and r[2] > 16]
    assert naive and all(r[3] == 32 for r in naive)
