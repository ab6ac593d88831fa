"""The emulator on the real examples, compiled with the real toolchain (session fixture)."""

from __future__ import annotations

import pytest

from kernelscope.analysis.context import AnalysisContext
from kernelscope.analysis.machine.arch import load_arch_specs
from kernelscope.analysis.emulator import emulate, emulate_detailed, sensitivity, what_if
from kernelscope.analysis.options import AnalysisOptions, LaunchHint
from kernelscope.analysis.profile import StallReason

from _build import build_example

EXAMPLES = ["sgemm_naive", "sgemm_tiled", "stencil_double_const", "reduction_divergent", "local_array",
            "noinline_call", "strided_access", "small_grid"]


@pytest.fixture(scope="session")
def programs(toolchain, examples_dir):
    return {name: build_example(examples_dir / f"{name}.cu", toolchain) for name in EXAMPLES}


@pytest.fixture(scope="session")
def target():
    cat = load_arch_specs()
    arch = cat.arch("sm_90")
    return arch, cat.default_device(arch)


def _share(profile, reason: StallReason) -> float:
    tot = profile.total_samples
    return sum(p.samples.get(reason, 0.0) for p in profile.pcs) / tot


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_example_gives_a_modeled_profile(programs, target, name):
    prog = programs[name]
    arch, dev = target
    for k in prog.kernels:
        p = emulate(AnalysisContext.of(arch, dev, AnalysisOptions(), program=prog), k)
        assert p.provenance.kind == "modeled" and p.duration_s > 0
        assert p.pcs and p.lines, "samples must reach PCs and source lines"
        assert any(a.name == "grid" for a in p.provenance.assumptions)
        assert 0 < p.occupancy <= 1
        # line samples are the PC samples summed through program.line_table
        assert sum(ls.total for ls in p.lines) <= p.total_samples * (1 + 1e-9)


def test_deterministic(programs, target):
    prog = programs["sgemm_tiled"]
    a = emulate(AnalysisContext.of(*target, AnalysisOptions(), program=prog), prog.kernels[0])
    b = emulate(AnalysisContext.of(*target, AnalysisOptions(), program=prog), prog.kernels[0])
    assert a.pcs == b.pcs and a.duration_s == b.duration_s


def test_naive_sgemm_inner_loop_is_memory_bound(programs, target):
    prog = programs["sgemm_naive"]
    k = prog.kernels[0]
    p = emulate(AnalysisContext.of(*target, AnalysisOptions(), program=prog), k)
    assert _share(p, StallReason.long_scoreboard) + _share(p, StallReason.lg_throttle) > 0.6
    s = sensitivity(AnalysisContext.of(*target, AnalysisOptions(), program=prog), k)
    assert s.bottleneck in ("lsu", "l2", "dram")
    hot = max(s.loops, key=lambda r: r.share)
    assert hot.share > 0.8 and hot.bottleneck in ("lsu", "l2", "dram")


def test_tiled_sgemm_shifts_toward_shared_memory(programs, target):
    naive, tiled = programs["sgemm_naive"], programs["sgemm_tiled"]
    pn = emulate(AnalysisContext.of(*target, AnalysisOptions(), program=naive), naive.kernels[0])
    pt = emulate(AnalysisContext.of(*target, AnalysisOptions(), program=tiled), tiled.kernels[0])
    assert pt.utilization.get("shared", 0) > 0.3 > pn.utilization.get("shared", 0)
    assert pt.utilization.get("fp32", 0) > pn.utilization.get("fp32", 0)
    assert pt.duration_s < pn.duration_s
    s = sensitivity(AnalysisContext.of(*target, AnalysisOptions(), program=tiled), tiled.kernels[0])
    assert s.bottleneck in ("shared", "fp32")


def test_double_constant_stencil_shows_fp64_pressure(programs, target):
    prog = programs["stencil_double_const"]
    k = prog.kernels[0]
    p = emulate(AnalysisContext.of(*target, AnalysisOptions(), program=prog), k)
    assert p.utilization.get("fp64", 0) > 0.2
    assert p.flops.get("fp64", 0) > p.flops.get("fp32", 0)
    s = sensitivity(AnalysisContext.of(*target, AnalysisOptions(), program=prog), k)
    fp64 = next(e for e in s.kernel_region.resources if e.resource == "fp64")
    assert fp64.gap > 0.1


def test_divergent_reduction_waits_at_barriers(programs, target):
    prog = programs["reduction_divergent"]
    p = emulate(AnalysisContext.of(*target, AnalysisOptions(), program=prog), prog.kernels[0])
    assert _share(p, StallReason.barrier) > 0.05


def test_small_grid_is_parallelism_limited(programs, target):
    prog = programs["small_grid"]
    k = prog.kernels[0]
    e = emulate_detailed(AnalysisContext.of(*target, AnalysisOptions(), program=prog), k)
    assert e.prediction.waves < 1
    assert e.loop_trips == (32768,)  # 2^24 elements / (4 blocks × 128 threads), from the annotation
    w = what_if(AnalysisContext.of(*target, AnalysisOptions(), program=prog), k, block_sizes=(64, 128, 256, 512))
    assert w.current_waves < 1 and w.more_blocks_help
    assert w.sm_scaling[0].seconds >= w.sm_scaling[-1].seconds
    s = sensitivity(AnalysisContext.of(*target, AnalysisOptions(), program=prog), k)
    assert s.bound == "latency"


def test_noinline_callee_is_emulated(programs, target):
    prog = programs["noinline_call"]
    k = prog.kernels[0]
    p = emulate(AnalysisContext.of(*target, AnalysisOptions(), program=prog), k)
    subs = k.sass.subroutines
    assert subs, "the example keeps a __noinline__ callee"
    start = min(s.pc for s in subs)
    assert any(pc.pc >= start and pc.samples.get(StallReason.selected, 0) > 0 for pc in p.pcs)


def test_strided_access_is_uncoalesced_once_the_stride_is_known(programs, target):
    prog = programs["strided_access"]
    k = prog.kernels[0]
    # A hint overrides the launch site's `stride` (32, a local of main): with stride 1 the read is coalesced ...
    p = emulate(AnalysisContext.of(*target, AnalysisOptions(launch_hints={"strided_copy": LaunchHint(values={"stride": 1})}), program=prog), k)
    assert not any(a.name == "coalescing" for a in p.provenance.assumptions)
    threads = p.launch.blocks * p.launch.threads_per_block
    # ... and with the launch site's value each lane reads its own sector (SAAKE §4.4)
    hinted = emulate(AnalysisContext.of(*target, AnalysisOptions(), program=prog), k)
    assert hinted.bytes["dram"] > 3 * p.bytes["dram"]
    assert hinted.bytes["dram"] >= 32 * threads
    assert hinted.duration_s > 2 * p.duration_s


def test_l2_hit_rate_setting_changes_dram_traffic(programs, target):
    # sgemm_naive's operands come mostly from L1 (the cache model), so its time hardly depends on
    # L2; the strided gather sends every lane's sector past L1, and its time follows DRAM
    for name, slower in (("sgemm_naive", False), ("strided_access", True)):
        prog = programs[name]
        k = prog.kernels[0]
        hi = emulate(AnalysisContext.of(*target, AnalysisOptions(l2_hit_rate=0.9), program=prog), k)
        lo = emulate(AnalysisContext.of(*target, AnalysisOptions(l2_hit_rate=0.0), program=prog), k)
        assert lo.bytes["dram"] > 5 * hi.bytes["dram"], name
        if slower:
            assert lo.duration_s > 1.5 * hi.duration_s, name


@pytest.mark.parametrize("name", EXAMPLES)
def test_modeled_throughput_stays_under_the_roofline_ceilings(programs, target, name):
    """Bytes per level / duration ≤ that level's roofline bandwidth, FLOP/s ≤ each precision's peak.

    The machine model's gaps and the traffic counter must describe the same hardware as the
    roofline: a shared LDS.128 that moves 512 B must occupy the shared pipe for 4 wavefronts.
    L2 has no catalogue ceiling on this device, so it is checked against the bandwidth the
    emulator's own L2 gap implies (128 B per gap per SMSP).
    """
    from kernelscope.analysis.emulator.units import machine_from_arch
    from kernelscope.analysis.machine.roofline import PROFILE_PRECISIONS, roofline_model

    arch, dev = target
    cat = load_arch_specs()
    model = roofline_model(cat, dev)
    machine, _ = machine_from_arch(arch, dev)
    l2_model_bw = 128 / machine.gap("l2") * arch.schedulers_per_sm * dev.sm_count * dev.clock_hz
    prog = programs[name]
    for k in prog.kernels:
        p = emulate(AnalysisContext.of(arch, dev, AnalysisOptions(), program=prog), k)
        for level, b in p.bytes.items():
            bw = model.bandwidth(level) or (l2_model_bw if level == "l2" else None)
            assert bw is not None, level
            assert b / p.duration_s <= bw * 1.01, (k.name, level, b / p.duration_s / bw)
        for prec, f in p.flops.items():
            peak = model.peak(PROFILE_PRECISIONS[prec].value)
            assert f / p.duration_s <= peak * 1.01, (k.name, prec, f / p.duration_s / peak)


def test_what_if_sweeps_block_sizes_only_for_1d_blocks(programs, target):
    arch, dev = target
    tiled = programs["sgemm_tiled"]  # block (32, 32, 1): indexed by threadIdx.y
    w = what_if(AnalysisContext.of(arch, dev, AnalysisOptions(), program=tiled), tiled.kernels[0])
    assert w.block_sizes == () and w.best_block_size is None
    assert w.block_sizes_note and "2-D" in w.block_sizes_note
    assert w.sm_scaling and w.grid_scaling  # the other sweeps still apply
    grid = programs["small_grid"]  # block (128, 1, 1)
    w1 = what_if(AnalysisContext.of(arch, dev, AnalysisOptions(), program=grid), grid.kernels[0])
    assert w1.block_sizes_note is None
    # powers of two from one warp to the largest block, plus the current size, those that fit
    assert {p.block_size for p in w1.block_sizes} <= {32, 64, 128, 256, 512, 1024}
    assert 128 in {p.block_size for p in w1.block_sizes} and w1.best_block_size is not None


def test_second_stage_is_deterministic(programs, target):
    prog = programs["sgemm_naive"]
    k = prog.kernels[0]
    assert sensitivity(AnalysisContext.of(*target, AnalysisOptions(), program=prog), k) == sensitivity(AnalysisContext.of(*target, AnalysisOptions(), program=prog), k)
    assert what_if(AnalysisContext.of(*target, AnalysisOptions(), program=prog), k) == what_if(AnalysisContext.of(*target, AnalysisOptions(), program=prog), k)


@pytest.mark.parametrize("name", EXAMPLES)
def test_instruction_cache_leaves_small_kernels_alone(programs, target, name):
    """Every example's code fits the L0/L1 instruction caches: modeling fetch moves its time by < 1 %."""
    prog = programs[name]
    arch, dev = target
    assert arch.icache is not None
    no_fetch = arch.model_copy(update={"icache": None})
    for k in prog.kernels:
        with_ic = emulate(AnalysisContext.of(arch, dev, AnalysisOptions(), program=prog), k)
        without = emulate(AnalysisContext.of(no_fetch, dev, AnalysisOptions(), program=prog), k)
        assert abs(with_ic.duration_s / without.duration_s - 1) < 0.01, (k.name, with_ic.duration_s, without.duration_s)
        assert _share(with_ic, StallReason.no_instruction) < 0.01


def test_second_stage_reuses_the_quick_stages_run_where_it_samples_the_same_iterations(programs, target):
    """sgemm_tiled's tile loop (8 trips) is shorter than both the quick stage's and sensitivity's
    sampled windows: the two base runs are one engine run. Carried from the quick stage, the wave
    memo serves the sensitivity study's base run (the ledger is charged nothing for it), and the
    report is the same as with a study that ran its own base run."""
    from kernelscope.analysis.emulator.budget import Ledger
    from kernelscope.analysis.emulator.model import DEFAULT_SETTINGS, emulated_trips, prepare, sensitivity_study
    from kernelscope.analysis.options import AnalysisBudget

    prog = programs["sgemm_tiled"]
    arch, dev = target
    k = prog.kernels[0]
    opts = AnalysisOptions()
    waves: dict = {}
    quick = emulate_detailed(AnalysisContext.of(arch, dev, opts, prog.source, program=prog), k, cache=waves)
    assert len(waves) == 1
    apart, shared = Ledger.start(AnalysisBudget()), Ledger.start(AnalysisBudget())
    alone = sensitivity_study(AnalysisContext.of(arch, dev, opts, prog.source, program=prog), k, ledger=apart)
    reused = sensitivity_study(AnalysisContext.of(arch, dev, opts, prog.source, program=prog), k, ledger=shared, cache=waves)
    assert apart.spent > 0 and shared.spent == 0  # the base run (all its waves) came from the memo
    assert alone.finish([job() for job in alone.jobs]) == reused.finish([job() for job in reused.jobs])
    # a study whose budget samples fewer iterations does not take the quick stage's run
    small = DEFAULT_SETTINGS.model_copy(update={"issue_budget": 2_000})
    other = Ledger.start(AnalysisBudget())
    study = sensitivity_study(AnalysisContext.of(arch, dev, opts, prog.source, program=prog), k, settings=small, ledger=other, cache=dict(waves))
    assert other.spent > 0 and len(study.jobs) == len(alone.jobs)
    warps = next(iter(waves.values())).run.warps_emulated
    decoded = prepare(AnalysisContext.of(arch, dev, opts, prog.source, prog), k, settings=small).decoded
    assert emulated_trips(decoded, small, warps)[0] != list(quick.emulated_trips)


@pytest.mark.parametrize("name", ["noinline_call", "sgemm_tiled"])
def test_a_perturbed_run_takes_the_time_a_run_with_stall_samples_takes(programs, target, name):
    """Sensitivity's perturbed runs split no stall by reason where no loop is hot (noinline_call has
    no loop): that leaves each run as the run with samples makes it, perturbation by perturbation
    (the engine's run, not only its time). sgemm_tiled's hot loop keeps its samples."""
    from kernelscope.analysis.emulator.model import SENSITIVITY_SETTINGS, _waves, prepare, run_wave, sensitivity_study

    prog = programs[name]
    k = prog.kernels[0]
    ctx = AnalysisContext.of(*target, AnalysisOptions(), program=prog)
    study = sensitivity_study(ctx, k)
    machines = [job.args[0] for job in study.jobs]
    assert len(machines) >= 3
    prep = prepare(ctx, k, settings=SENSITIVITY_SETTINGS)
    _, per_sm, _, _ = _waves(prep, prep.device.sm_count)
    for m in machines:
        plain = run_wave(prep, per_sm, prep.device.sm_count, m, samples=False).run
        assert plain == run_wave(prep, per_sm, prep.device.sm_count, m, samples=True).run
    loops = [job()[1] for job in study.jobs]
    assert all(loops) if name == "sgemm_tiled" else not any(loops)  # the per-loop samples: only where hot
