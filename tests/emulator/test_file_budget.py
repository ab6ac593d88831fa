"""The whole-file budget (issue 35, emulator/budget.py): proportional to nvcc's time on the file,
estimated from the file's size, so a file of many kernels costs a bounded multiple of its compile;
kernels past it are not emulated and say so. Real nvcc output, real analyses."""

from __future__ import annotations

import threading

from kernelscope.analysis.emulator import budget as B
from kernelscope.analysis.emulator.budget import (KERNEL_COST, RUN_COST, SECOND_STAGE_CORES, SLICE_STEPS_PER_UNIT,
                                                  STATIC_COST, WALK_STEP_COST, FileSize, Ledger, file_issues,
                                                  nvcc_seconds, quick_run_budget)
from kernelscope.analysis.options import AnalysisBudget, AnalysisOptions


def _kernels(n: int) -> str:
    return "".join(f"__global__ void k{i}(float *x, int n) {{ int i = blockIdx.x * blockDim.x + threadIdx.x; "
                   f"if (i < n) x[i] = x[i] * {i}.0f + 1.0f; }}\n" for i in range(n))


def test_the_budget_grows_with_the_file_and_never_past_its_ceiling():
    small = FileSize(functions=1, instructions=30, source_bytes=200)
    large = FileSize(functions=2_000, instructions=64_000, source_bytes=250_000)
    assert nvcc_seconds(large) > 10 * nvcc_seconds(small)
    b = AnalysisBudget()
    assert file_issues(b, small) < file_issues(b, large) <= b.issues
    # twice the multiple, twice the budget, until the ceiling
    once, twice = (file_issues(AnalysisBudget(nvcc_multiple=m * b.nvcc_multiple, issues=20_000_000), large)
                   for m in (1, 2))
    assert abs(twice - 2 * once) <= 2
    assert file_issues(b, None) == b.issues  # no size: the ceiling, as before the file budget


def test_runs_and_kernels_are_charged_their_fixed_costs_and_the_second_stage_its_share():
    ledger = Ledger.start(AnalysisBudget())
    ledger.charge_quick(256)  # a quick run: one core
    assert ledger.cost == 256 + RUN_COST + KERNEL_COST
    ledger.charge(1_000)  # a second-stage run: its runs go over the cores
    assert ledger.cost == 256 + RUN_COST + KERNEL_COST + (1_000 + RUN_COST) / SECOND_STAGE_CORES
    ledger.kernels = 3  # every kernel's static facts and advice
    assert ledger.cost == 256 + RUN_COST + KERNEL_COST + (1_000 + RUN_COST) / SECOND_STAGE_CORES + 3 * STATIC_COST
    assert ledger.spent == 1_256 and ledger.runs == 2  # the engine's own count, as before
    assert ledger.left == int(ledger.issues - ledger.cost)
    assert ledger.second_stage_allowance(2) == SECOND_STAGE_CORES * ledger.left / 2


def test_the_second_stage_leaves_one_nvcc_time_of_the_budget_unspent():
    """The compile, the start and the report are not charged and come on top of the budget: the
    second stage stops one estimated nvcc time short of it (SECOND_STAGE_RESERVE), the quick stage
    (the result) may spend it all."""
    size = FileSize(functions=1, instructions=700, source_bytes=1_200)
    ledger = Ledger.start(AnalysisBudget())
    ledger.fit(AnalysisBudget(), size)
    reserve = B.SECOND_STAGE_RESERVE * nvcc_seconds(size) / B.SECONDS_PER_ISSUE
    assert abs(ledger.reserve - reserve) <= 1 and 0 < ledger.reserve < ledger.issues
    assert ledger.second_stage_allowance(1) == SECOND_STAGE_CORES * (ledger.left - ledger.reserve)
    ledger.charge_quick(ledger.left - ledger.reserve - KERNEL_COST - RUN_COST)  # the quick stage reached the reserve
    assert ledger.left == ledger.reserve
    assert ledger.second_stage_allowance(1) == 0  # no second stage
    assert quick_run_budget(ledger, 1, 40_000) == 40_000  # a later kernel's quick run still is
    # a file whose budget is the ceiling, well below its multiple, keeps no reserve
    huge = FileSize(functions=2_000, instructions=400_000, source_bytes=2_000_000)
    assert file_issues(AnalysisBudget(), huge) == AnalysisBudget().issues
    ledger.fit(AnalysisBudget(), huge)
    assert ledger.reserve == 0
    # a multiple of one nvcc time or less leaves the second stage nothing
    ledger.fit(AnalysisBudget(nvcc_multiple=1.0), size)
    assert ledger.reserve == ledger.issues


def test_what_grows_with_the_kernel_is_charged_by_its_size():
    """Issue 35: a prepare's walk, the advice's backward slices and the what-if launches' prepares
    are charged by their steps, not as constants; the last at the second stage's rate."""
    ledger = Ledger.start(AnalysisBudget())
    ledger.charge_quick(256, 1, walked=3_600)  # a long kernel's quick stage: its prepare walked 3,600 steps
    quick = 256 + RUN_COST + KERNEL_COST + 3_600 * WALK_STEP_COST
    assert ledger.cost == quick
    ledger.sliced = 590_000  # its advice's slices
    assert ledger.cost == quick + 590_000 / SLICE_STEPS_PER_UNIT
    ledger.charge_prepares(5 * 3_600 * WALK_STEP_COST)  # five what-if launches, in the workers
    assert ledger.cost == quick + 590_000 / SLICE_STEPS_PER_UNIT + 5 * 3_600 * WALK_STEP_COST / SECOND_STAGE_CORES
    assert ledger.spent == 256 and ledger.runs == 1  # the engine's own count does not change


def test_the_quick_stage_stops_where_the_budget_would_not_pay_for_a_kernel():
    ledger = Ledger.start(AnalysisBudget(issues=100_000))
    assert quick_run_budget(ledger, 1, 40_000) == 40_000
    ledger.charge_quick(100_000 - 2 * (KERNEL_COST + RUN_COST))  # what is left pays for one more kernel
    assert quick_run_budget(ledger, 10, 40_000) == B.MIN_RUN_ISSUES  # at the floor
    ledger.charge(2)
    assert quick_run_budget(ledger, 10, 40_000) is None


def test_a_file_of_many_kernels_models_what_its_budget_pays_for(toolchain, tmp_path):
    """A file of 60 one-line kernels under a budget of about 1x nvcc's time: the first kernels are
    emulated, the rest are not and say why; the engine's work (and its fixed costs) stays within the
    budget but for the last kernel's overshoot; no kernel gets a second stage it cannot pay for, and
    the full result keeps every kernel's report and the static advice."""
    from kernelscope.analysis.pipeline import analyze

    src = tmp_path / "many.cu"
    src.write_text(_kernels(60))
    ledgers = []
    start = B.Ledger.start.__func__
    here = threading.current_thread()

    def spy(cls, b, cancel=None):
        ledger = start(cls, b, cancel)
        if threading.current_thread() is here:  # the analysis's own, not a run ahead's
            ledgers.append(ledger)
        return ledger

    B.Ledger.start = classmethod(spy)
    try:
        r = analyze(src, AnalysisOptions(budget=AnalysisBudget(nvcc_multiple=1.0, run_ahead=False)),
                    toolchain=toolchain)
    finally:
        B.Ledger.start = classmethod(start)
    (ledger,) = ledgers
    assert len(r.kernels) == 60
    assert ledger.issues < AnalysisBudget().issues  # the file's budget (Ledger.fit), not the ceiling
    per_kernel = KERNEL_COST + RUN_COST + B.MIN_RUN_ISSUES  # the last kernel's overshoot at most
    assert 0 < ledger.cost <= ledger.issues + per_kernel, (ledger.cost, ledger.issues)
    modeled = [k for k in r.kernels if k.predicted_duration_s is not None]
    skipped = [k for k in r.kernels if k.predicted_duration_s is None]
    assert modeled and skipped
    # file order: the kernels that were modeled come first
    assert [k.name for k in r.kernels[:len(modeled)]] == [k.name for k in modeled]
    for k in skipped:
        (cut,) = [a for a in k.assumptions if a.name == "budget"]
        assert cut.value == "not emulated" and "AnalysisOptions.budget" in cut.detail and cut.source == "default"
        assert k.lines and k.resources.registers > 0  # the static report is still there
    # a larger multiple pays for more kernels: the budget, not a fixed count, decides
    more = analyze(src, AnalysisOptions(budget=AnalysisBudget(nvcc_multiple=3.0, run_ahead=False)),
                   toolchain=toolchain, depth="quick")
    assert sum(k.predicted_duration_s is not None for k in more.kernels) > len(modeled)


def test_the_same_file_gets_the_same_budget(toolchain, tmp_path):
    """Deterministic: the budget is read from the file's size, not from a clock."""
    from kernelscope.analysis.pipeline import analyze

    src = tmp_path / "few.cu"
    src.write_text(_kernels(30))
    opts = AnalysisOptions(budget=AnalysisBudget(nvcc_multiple=1.0, run_ahead=False))
    a, b = (analyze(src, opts, toolchain=toolchain, depth="quick") for _ in range(2))
    assert [(k.name, k.predicted_duration_s, k.assumptions) for k in a.kernels] == \
        [(k.name, k.predicted_duration_s, k.assumptions) for k in b.kernels]



def test_no_run_takes_more_than_a_quarter_of_the_files_budget(toolchain, tmp_path):
    """A loop the model cannot end stops at a quarter of the file's budget (budget.run_cap, at least
    its floor), inside it, not at the engine's own guard of 10x its plan; the result says its time is
    a lower bound."""
    from kernelscope.analysis.emulator.budget import run_cap
    from kernelscope.analysis.emulator.model import DEFAULT_SETTINGS, RUN_GUARD_FACTOR
    from kernelscope.analysis.pipeline import analyze
    from test_bounded import PERSISTENT  # a persistent grid whose for (;;) only an atomic counter ends

    src = tmp_path / "persistent.cu"
    src.write_text(PERSISTENT)
    ledgers = []
    fit = B.Ledger.fit

    def spy(self, budget, size):
        fit(self, budget, size)
        if threading.current_thread() is here:
            ledgers.append(self)

    here = threading.current_thread()
    B.Ledger.fit = spy
    try:
        r = analyze(src, AnalysisOptions(budget=AnalysisBudget(run_ahead=False)), toolchain=toolchain)
    finally:
        B.Ledger.fit = fit
    (ledger,) = ledgers
    (k,) = r.kernels
    got = {a.name: a for a in k.assumptions}
    assert got["emulation"].value == "truncated"
    cap = run_cap(ledger)
    assert cap == max(B.RUN_CAP_FLOOR, ledger.issues // 4)
    assert cap < RUN_GUARD_FACTOR * DEFAULT_SETTINGS.issue_budget  # the file's budget binds, not the engine's guard
    assert cap < ledger.spent <= cap + 64  # stopped at the cap (a scheduler step may issue a few more)
    assert ledger.cost <= ledger.issues
