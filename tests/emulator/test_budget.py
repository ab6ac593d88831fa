"""The second stage's plan (emulator/budget.py): the fullest study that fits what is left of an
analysis's budget, cut in a fixed order, every cut named. Pure functions over a study's shape."""

from __future__ import annotations

from dataclasses import replace

from kernelscope.analysis.context import AnalysisContext
from kernelscope.analysis.emulator.budget import (MIN_RUN_ISSUES, FileSize, Ledger, StudyShape, coarse_sm_counts,
                                                  neighbour_block_sizes, plan_second_stage, quick_run_budget)
from kernelscope.analysis.emulator.model import GRID_MULTIPLIERS, sm_count_sweep
from kernelscope.analysis.options import AnalysisBudget


def shape(per_run_at_budget, resources=8, prepare_cost=0.0):
    return StudyShape(resources=resources, block_sizes=(32, 64, 128, 256, 512, 1024), current_block=256,
                      sm_counts=sm_count_sweep(132), grid_multipliers=GRID_MULTIPLIERS,
                      cost=lambda budget: per_run_at_budget(budget), prepare_cost=prepare_cost)


def test_a_study_that_fits_is_not_cut():
    plan = plan_second_stage(shape(lambda b: b), 10_000_000, 12_000, 8_000)
    assert plan.cuts == () and plan.block_sizes is None and plan.sm_counts is None
    assert plan.sensitivity_run_budget == 12_000 and plan.what_if_run_budget == 8_000
    assert plan.sensitivity_resources is None


def test_cuts_come_in_order_and_each_is_named():
    full = plan_second_stage(shape(lambda b: b), 10_000_000, 12_000, 8_000).estimate
    shares = (0.95, 0.6, 0.3, 0.1, 0.02)
    plans = [plan_second_stage(shape(lambda b: b), a * full, 12_000, 8_000) for a in shares]
    assert all(p.estimate <= a * full for p, a in zip(plans, shares[:-1]))
    assert plans[0].cuts == ("SM-count trajectory at 5 points instead of 9",)
    assert plans[0].sm_counts == (1, 4, 16, 64, 132) and plans[0].block_sizes is None
    assert "block sizes 128, 256, 512 only" in plans[1].cuts and plans[1].block_sizes == (128, 256, 512)
    assert plans[1].sensitivity_run_budget == 6_000 and plans[1].what_if_run_budget == 4_000
    assert plans[1].sensitivity_resources is None and plans[2].sensitivity_resources == 3
    assert plans[3].what_if_run_budget is None and "no what-if (block sizes, SM-count trajectory)" in plans[3].cuts
    assert not any("SM-count trajectory at" in c for c in plans[3].cuts)  # a dropped study lists none of its cuts
    assert plans[4].skipped and len(plans[4].cuts) == 1 and plans[4].cuts[0].startswith("no second stage")
    assert all(set(a.cuts) <= set(b.cuts) for a, b in zip(plans[:2], plans[1:3]))  # less room only adds cuts


def test_what_if_launches_are_planned_at_their_prepares_and_dear_ones_go_first():
    """Each block size but the current one and each grid but the base prepares (walks) its own
    launch (issue 35): the plan counts it, and where a prepare costs more than a run the block
    sizes are cut before the SM-count trajectory, whose points only run."""
    cheap, dear = shape(lambda b: b), shape(lambda b: b, prepare_cost=30_000)
    full_cheap = plan_second_stage(cheap, 10_000_000, 12_000, 8_000)
    full_dear = plan_second_stage(dear, 10_000_000, 12_000, 8_000)
    assert full_dear.cuts == () and full_dear.prepares == (5 + 2) * 30_000
    assert full_dear.estimate == full_cheap.estimate + full_dear.prepares
    plan = plan_second_stage(dear, 0.95 * full_dear.estimate, 12_000, 8_000)
    assert plan.cuts == ("block sizes 128, 256, 512 only", "grid scaling at 2 points")
    assert plan.sm_counts is None and plan.prepares == (2 + 1) * 30_000  # the trajectory is whole
    assert plan_second_stage(cheap, 0.95 * full_cheap.estimate, 12_000, 8_000).cuts == \
        ("SM-count trajectory at 5 points instead of 9",)
    # no what-if, no launches to prepare
    assert plan_second_stage(dear, 0.1 * full_dear.estimate, 12_000, 8_000).prepares == 0.0


def test_a_run_whose_floor_exceeds_its_budget_is_planned_at_its_real_cost():
    """A 3-deep nest cannot run fewer than 2x2x2 iterations: the plan counts that, not the budget."""
    floor = 24_000
    plan = plan_second_stage(shape(lambda b: max(floor, b)), 200_000, 12_000, 8_000)
    assert plan.estimate <= 200_000
    assert "no what-if (block sizes, SM-count trajectory)" in plan.cuts


def test_the_quick_stage_shares_what_is_left_when_a_file_has_many_kernels():
    ledger = Ledger.start(AnalysisBudget(issues=400_000))
    assert quick_run_budget(ledger, 1, 40_000) == 40_000
    assert quick_run_budget(ledger, 30, 40_000) == int(400_000 / 30)
    ledger.charge_quick(390_000)  # and its run's and kernel's fixed costs: 7,000 left
    assert quick_run_budget(ledger, 5, 40_000) == MIN_RUN_ISSUES


def test_sweeps_keep_their_ends():
    assert coarse_sm_counts(132) == (1, 4, 16, 64, 132)
    assert neighbour_block_sizes((32, 64, 128, 256, 512, 1024), 256) == (128, 256, 512)
    assert neighbour_block_sizes((32, 64), 32) == (32, 64)
    assert neighbour_block_sizes((), 96) == ()


def test_the_default_budget_leaves_every_example_uncut(toolchain, examples_dir):
    """docs/emulator.md promises that a one-kernel file keeps its full second stage by default
    (the second stage's reserve included: one nvcc time left unspent, budget.SECOND_STAGE_RESERVE)."""
    from _build import build_example
    from kernelscope.analysis.machine.arch import load_arch_specs
    from kernelscope.analysis.advisor.blame import blame
    from kernelscope.analysis.emulator.model import (DEFAULT_SETTINGS, SENSITIVITY_SETTINGS, WHAT_IF_SETTINGS,
                                                     prepare, profile_of)
    from kernelscope.analysis.stages import read_study_shape
    from kernelscope.analysis.options import AnalysisOptions

    cat = load_arch_specs()
    arch = cat.arch("sm_90")
    device = cat.default_device(arch)
    for path in sorted(examples_dir.glob("*.cu")):
        program = build_example(path, toolchain)
        for k in program.kernels:
            ctx = AnalysisContext.of(arch, device, AnalysisOptions(), program.source, program)
            prep = prepare(ctx, k, settings=SENSITIVITY_SETTINGS)
            # the file's budget (proportional to nvcc's time on it), less what the quick stage may
            # take at most (its runs at their budget, its prepare's walk) and the advice's slices,
            # then an equal share
            n = len(program.kernels)
            ledger = Ledger.start(AnalysisBudget())
            ledger.fit(AnalysisBudget(), FileSize.of(program.module, path.read_bytes()))
            ledger.kernels = n
            for _ in range(n):
                ledger.charge_quick(DEFAULT_SETTINGS.issue_budget, 1, prep.walk_steps)
            assert prep.walk_steps > 0
            quick = profile_of(replace(prep, settings=DEFAULT_SETTINGS)).profile
            ledger.sliced = n * blame(k, quick).slice_steps
            # the study as the analysis plans it: its what-if sweeps narrowed to what the advice reads
            plan = plan_second_stage(read_study_shape(ctx, k, prep, quick), ledger.second_stage_allowance(n),
                                     SENSITIVITY_SETTINGS.issue_budget, WHAT_IF_SETTINGS.issue_budget)
            assert plan.cuts == (), (path.name, k.name, plan.cuts)
