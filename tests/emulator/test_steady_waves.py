"""Waves after the first overlap (docs/emulator.md, "Whole-kernel time: waves"): the block scheduler
starts a block as soon as one retires, so a many-wave launch is emulated with two rounds of blocks
and every wave beyond them adds one steady period. The H100 measured the real
set's reductions (65,536 blocks, 62 waves) at 0.61-0.71 of the time waves run back to back would
take; on examples/reduction_divergent.cu (the same shape) the two rounds must model that overlap,
and must count the launch's work exactly as one round does."""

from __future__ import annotations

import math

import pytest

from kernelscope.analysis.context import AnalysisContext
from kernelscope.analysis.emulator.model import (STEADY_ROUNDS, _waves, predict_waves, prepare, profile_of,
                                                 run_wave, steady_cycles)
from kernelscope.analysis.machine.arch import load_arch_specs
from kernelscope.analysis.options import AnalysisOptions

from _build import ROOT, build_example


@pytest.fixture(scope="module")
def reduction(toolchain):
    cat = load_arch_specs()
    spec = cat.arch("sm_90")
    device = cat.device("H100 SXM")
    prog = build_example(ROOT / "examples" / "reduction_divergent.cu", toolchain)
    (k,) = prog.kernels
    return prepare(AnalysisContext.of(spec, device, AnalysisOptions(), program=prog), k)


def test_a_many_wave_launch_runs_two_rounds_and_the_second_overlaps(reduction):
    full, per_sm, _, _ = _waves(reduction, reduction.device.sm_count)
    assert full >= STEADY_ROUNDS  # 65,536 blocks: dozens of waves
    one = run_wave(reduction, per_sm, reduction.device.sm_count).run
    two = run_wave(reduction, per_sm, reduction.device.sm_count, rounds=2).run
    assert one.rounds == 1 and one.steady_period is None
    assert two.rounds == 2 and two.warp_runs == 2 * one.warps_emulated
    # a wave's worth of blocks passing through a full SM: a replaced block's load overlaps the
    # others' shared-memory tree, so it takes less than a wave from a cold start, and more than nothing
    assert 0.2 * one.cycles < two.steady_period < 0.9 * one.cycles
    # the two rounds hold the start-up and the drain once: more than one cold wave, less than two
    assert one.cycles < two.cycles < 2 * one.cycles
    pred, _ = predict_waves(reduction)
    assert pred.cycles < full * one.cycles
    assert math.isclose(steady_cycles(two, 2), two.cycles)
    assert math.isclose(steady_cycles(two, 5), two.cycles + 3 * two.steady_period)


def test_two_rounds_count_the_launch_as_one_round_does(reduction):
    """Bytes, FLOPs and executions are per-warp totals scaled to the launch: the second round's
    warps are counted in, not twice."""
    per_sm = reduction.occ.active_blocks_per_sm
    sms = reduction.device.sm_count
    one = run_wave(reduction, per_sm, sms)
    two = run_wave(reduction, per_sm, sms, rounds=2)
    for level, v in one.traffic.bytes.items():
        assert two.traffic.bytes[level] / two.run.warp_runs == pytest.approx(v / one.run.warps_emulated, rel=0.02)
    exe1 = sum(one.sampler.executed) / one.run.warps_emulated
    exe2 = sum(two.sampler.executed) / two.run.warp_runs
    assert exe2 == pytest.approx(exe1, rel=1e-6)
    prof = profile_of(reduction).profile
    warps = reduction.launch.blocks * math.ceil(reduction.launch.threads_per_block / 32)
    # every warp of the launch executes the kernel's EXIT once: the profile's executions add up
    assert sum(p.executed for p in prof.pcs) == pytest.approx(exe1 * warps, rel=1e-6)
