"""One budget per analysis (issue 13): the quick stage, sensitivity and what-if draw on one count
of warp-instructions the engine may issue, with a wall-clock backstop.

The quick stage is the product and always runs; under a tight budget its runs sample fewer loop
iterations. The second stage is planned per kernel against what is left: when the full study
would not fit, it degrades step by step (a coarser SM-count trajectory, fewer block sizes, smaller
runs, fewer perturbed resources, no what-if, no second stage) and every step taken is recorded,
so the result says what was cut. Counting issues keeps a result a function of its inputs (it can
be cached); the wall-clock limit only guards against a slow machine, and a result it cut says so.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..options import AnalysisBudget
from ..process import CancelToken

#: smallest per-run issue budget: below it a loop's sampled window is warm-up plus one iteration
MIN_RUN_ISSUES = 3_000


class BudgetSpent(Exception):
    """The analysis ran out of wall-clock time before a second-stage run."""


@dataclass
class Ledger:
    """What is left of one analysis's budget. Mutable on purpose, like a `CancelToken`: one
    object is handed down to every engine run of the analysis, which charges it."""

    issues: int
    deadline: float
    seconds: float
    spent: int = 0
    runs: int = 0
    cancel: CancelToken | None = None  # a newer save stops the second stage between two runs

    @classmethod
    def start(cls, budget: AnalysisBudget, cancel: CancelToken | None = None) -> Ledger:
        return cls(issues=budget.issues, deadline=time.monotonic() + budget.seconds, seconds=budget.seconds,
                   cancel=cancel)

    @property
    def left(self) -> int:
        return max(0, self.issues - self.spent)

    def expired(self) -> bool:
        return time.monotonic() > self.deadline

    def charge(self, issues: int) -> None:
        self.spent += issues
        self.runs += 1

    def check(self) -> None:
        """Called before a second-stage run: a cancelled analysis stops here (`Cancelled`)."""
        if self.cancel is not None:
            self.cancel.check()
        if self.expired():
            raise BudgetSpent(f"the wall-clock budget of {self.seconds:g} s was spent")


def quick_run_budget(ledger: Ledger, kernels_left: int, default: int) -> int:
    """Per-run issue budget of a kernel's quick emulation: the default while the file's kernels
    fit in what is left, else an equal share of it (never below the floor). Most quick runs use a
    fraction of their budget, so the second stage keeps what they did not."""
    share = ledger.left / max(1, kernels_left)
    return int(max(MIN_RUN_ISSUES, min(default, share)))


@dataclass(frozen=True)
class StudyShape:
    """What a kernel's second stage would run, and what each run is estimated to cost."""

    resources: int  # resources the sensitivity study perturbs (latency, and gap of the busy ones)
    block_sizes: tuple[int, ...]  # () when the block is 2-D
    current_block: int
    sm_counts: tuple[int, ...]
    grid_multipliers: tuple[int, ...]
    #: issues of one prediction (all its waves) at a per-run budget
    cost: Callable[[int], float]
    #: loops the what-if re-models with staged loads (model.py `_staged_loop_jobs`), at most
    staged_loops: int = 0


@dataclass(frozen=True)
class SecondStagePlan:
    sensitivity_run_budget: int | None  # None: no sensitivity study
    sensitivity_resources: int | None  # the busiest N only; None: all used
    what_if_run_budget: int | None  # None: no what-if
    block_sizes: tuple[int, ...] | None  # None: the default sweep
    sm_counts: tuple[int, ...] | None
    grid_multipliers: tuple[int, ...]
    cuts: tuple[str, ...] = field(default=())
    estimate: float = 0.0

    @property
    def skipped(self) -> bool:
        return self.sensitivity_run_budget is None and self.what_if_run_budget is None


def coarse_sm_counts(sm_count: int) -> tuple[int, ...]:
    """1, 4, 16, … (powers of four) and all SMs: the trajectory's shape at fewer points."""
    return tuple(sorted({*(4 ** i for i in range(int(math.log(sm_count, 4)) + 1)), sm_count}))


def neighbour_block_sizes(sizes: tuple[int, ...], current: int) -> tuple[int, ...]:
    """The current block size and the swept sizes either side of it."""
    if not sizes:
        return ()
    ordered = sorted(set(sizes) | {current})
    i = ordered.index(current)
    return tuple(ordered[max(0, i - 1):i + 2])


def plan_second_stage(shape: StudyShape, allowance: float, sensitivity_budget: int, what_if_budget: int
                      ) -> SecondStagePlan:
    """The fullest second stage that fits `allowance` issues, and what was cut to get there.

    Cuts in this order, each only while the estimate still exceeds the allowance: a coarser
    SM-count trajectory, block sizes and grid scaling near the current launch, runs of half the
    issues, the three busiest resources only, no what-if, sensitivity runs at the floor, nothing.
    """
    sens_b, wi_b = sensitivity_budget, what_if_budget
    resources: int | None = None
    sizes, counts, mults = shape.block_sizes, shape.sm_counts, shape.grid_multipliers
    with_what_if, with_sens = True, True

    def estimate() -> float:
        # Runs that the studies skip or share are not counted: a gap run only for a unit busy
        # ≥ 1 % of the time (about half of those used), and the current block size and all-SMs
        # point repeat the base run (WaveCache).
        total = 0.0
        if with_sens:
            n = resources if resources is not None else shape.resources
            total += (1 + 1.5 * n) * shape.cost(sens_b)
        if with_what_if:
            runs = len(sizes) + len(counts) + max(0, len(mults) - 1) - 2 + shape.staged_loops
            total += max(1, runs) * shape.cost(wi_b)
        return total

    def coarse_trajectory():
        nonlocal counts
        counts = tuple(c for c in coarse_sm_counts(max(counts)) if c in counts or c == max(counts))

    def fewer_block_sizes():
        nonlocal sizes, mults
        sizes, mults = neighbour_block_sizes(sizes, shape.current_block), mults[:2]

    def smaller_runs():
        nonlocal sens_b, wi_b
        sens_b, wi_b = max(MIN_RUN_ISSUES, sens_b // 2), max(MIN_RUN_ISSUES, wi_b // 2)

    def fewer_resources():
        nonlocal resources
        resources = min(3, shape.resources)

    def no_what_if():
        nonlocal with_what_if
        with_what_if = False

    def smallest_runs():
        nonlocal sens_b
        sens_b = MIN_RUN_ISSUES

    def nothing():
        nonlocal with_sens
        with_sens = False

    smallest = 0.0
    for step in (coarse_trajectory, fewer_block_sizes, smaller_runs, fewer_resources, no_what_if, smallest_runs,
                 nothing):
        smallest = estimate()
        if smallest <= allowance:
            break
        step()
    # Name the outcome against the full study, not the way there.
    cuts: list[str] = []
    if not with_sens:
        cuts.append(f"no second stage (sensitivity, what-if): its smallest form needs about {smallest:,.0f} "
                    f"warp-instructions and {allowance:,.0f} were left for this kernel")
    else:
        if sens_b != sensitivity_budget:
            cuts.append(f"sensitivity runs of {sens_b:,} warp-instructions instead of {sensitivity_budget:,}")
        if resources is not None and resources < shape.resources:
            cuts.append(f"sensitivity of the {resources} busiest resources only (of {shape.resources})")
        if not with_what_if:
            cuts.append("no what-if (block sizes, SM-count trajectory)")
        else:
            if counts != shape.sm_counts:
                cuts.append(f"SM-count trajectory at {len(counts)} points instead of {len(shape.sm_counts)}")
            if sizes != shape.block_sizes:
                cuts.append(f"block sizes {', '.join(map(str, sizes))} only")
            if mults != shape.grid_multipliers:
                cuts.append(f"grid scaling at {len(mults)} points")
            if wi_b != what_if_budget:
                cuts.append(f"what-if runs of {wi_b:,} warp-instructions instead of {what_if_budget:,}")
    return SecondStagePlan(
        sensitivity_run_budget=sens_b if with_sens else None,
        sensitivity_resources=resources if resources is not None and resources < shape.resources else None,
        what_if_run_budget=wi_b if with_what_if and with_sens else None,
        block_sizes=sizes if sizes != shape.block_sizes else None,
        sm_counts=counts if counts != shape.sm_counts else None, grid_multipliers=mults,
        cuts=tuple(cuts), estimate=estimate())
