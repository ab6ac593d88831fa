"""One budget per analysis (issues 13, 35): the quick stage, sensitivity and what-if draw on one
count of warp-instructions the engine may issue, with a wall-clock backstop.

The count is proportional to nvcc's own time on the file, estimated from the file's size (its
functions and SASS instructions, the bytes of its source: `nvcc_seconds`), so that a file nvcc
compiles fast is analysed fast, whatever its shape, and the result stays a function of its inputs.
An engine run is charged its issues and its fixed set-up (`RUN_COST`), a kernel the quick stage
models its prepare and profile (`KERNEL_COST`): for a file of many small kernels those, not the
issues, are the cost. A kernel the budget cannot model gets no emulation, and says so.

The quick stage is the product and always runs; under a tight budget its runs sample fewer loop
iterations. The second stage is planned per kernel against what is left short of a reserve (one
nvcc time: what is not charged comes on top, `SECOND_STAGE_RESERVE`): when the full study
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

# What the budget counts is the engine's warp-instruction, ~3 µs of one core here (2.8 µs in
# sgemm_naive's runs, 3.3 µs in a warp-shuffle softmax's; benchmarks/emulate.py); the fixed costs
# are in the same unit, measured on the same machine (docs/performance.md, "The whole-file budget").
SECONDS_PER_ISSUE = 3e-6
#: an engine run's set-up besides its issues (the engine, its listeners, the wave's bookkeeping,
#: a what-if point's prepare): a one-line kernel's 256-issue run takes ~3.9 ms
RUN_COST = 1_000
#: what the quick stage spends on a kernel besides its run: prepare (decode, memory shapes, the
#: lanes' walk; ~3.5 ms for a one-line kernel), the profile and the static facts
KERNEL_COST = 2_000
#: what every kernel of the file costs, emulated or not: its SASS decoded into the program, its
#: static facts and its part of the advice (~3 ms for a one-line kernel)
STATIC_COST = 1_000
#: a step of a warp that a prepare walks (walk.py: one instruction over the 32 lanes' values), the
#: part of a launch's prepare that grows with the kernel: 11-40 µs of one core over the examples and
#: the costly shapes, 20-30 µs where the walk is long (a softmax's 3,600 steps per launch, an octree
#: walk's 2,300). Charged for the quick stage's prepares and for every launch a what-if point prepares
WALK_STEP_COST = 10
#: steps of GPA's backward slices (advisor/blame.py) per unit: 0.5-0.9 µs a step, and a 736-instruction
#: softmax's advice takes 590,000 of them (~0.3 s), where a one-line kernel's takes tens
SLICE_STEPS_PER_UNIT = 5
#: the second stage's runs are spread over the cores (workers.fan_out), the quick stage's are not:
#: a second-stage run is charged at 1/this, the cores of the smallest machine the project runs on.
#: Fewer cores make an analysis slower, never different.
SECOND_STAGE_CORES = 2
#: nvcc's time on a file from its size: seconds, per function, per SASS instruction and per byte
#: of source (host code too: cudafe++ and the host compiler read it). Fitted to the unloaded figures
#: of docs/performance.md (one-line kernels, the generated solver files; the wheels' nvcc 13.5) and
#: kept below nvcc's time where nvcc grows faster than linearly (long unrolled kernels, thrust's
#: headers), so that the budget errs on the fast side (`python benchmarks/scaling.py --part nvcc`).
NVCC_BASE_S, NVCC_PER_FUNCTION_S, NVCC_PER_INSTRUCTION_S, NVCC_PER_BYTE_S = 0.25, 0.9e-3, 5e-6, 3.2e-6
#: what the second stage leaves unspent of the file's budget, in nvcc's (estimated) times on the file.
#: The budget charges the analysis's own work; the file's compile (nvcc's time itself), the
#: interpreter's start and the report are not charged and come on top: with its budget spent by
#: the second stage, shuffle_softmax took 4.6-5.9x nvcc's time on 2 cores (issue 35's target: 5x).
#: The second stage is the part that may be cut without losing the result, so it stops this far
#: short of the budget; the quick stage may spend it all
SECOND_STAGE_RESERVE = 1.0


@dataclass(frozen=True)
class FileSize:
    """What nvcc's time on a file is estimated from: deterministic, read from the compile's output."""

    functions: int
    instructions: int
    source_bytes: int

    @classmethod
    def of(cls, module, source: bytes) -> FileSize:
        """`module`: the file's `SassModule`."""
        return cls(functions=len(module.functions), instructions=sum(len(f.instructions) for f in module.functions),
                   source_bytes=len(source))


def nvcc_seconds(size: FileSize) -> float:
    return (NVCC_BASE_S + NVCC_PER_FUNCTION_S * size.functions + NVCC_PER_INSTRUCTION_S * size.instructions
            + NVCC_PER_BYTE_S * size.source_bytes)


def file_issues(budget: AnalysisBudget, size: FileSize | None, multiple: float | None = None) -> int:
    """The issues one file's analysis may spend: `nvcc_multiple` (or `multiple`) times nvcc's
    estimated time, in the engine's unit, never more than `budget.issues` (no size:
    `budget.issues`, as before issue 35)."""
    if size is None:
        return budget.issues
    multiple = budget.nvcc_multiple if multiple is None else multiple
    return int(min(budget.issues, multiple * nvcc_seconds(size) / SECONDS_PER_ISSUE))


class BudgetSpent(Exception):
    """The analysis ran out of wall-clock time before a second-stage run."""


@dataclass
class Ledger:
    """What is left of one analysis's budget. Mutable on purpose, like a `CancelToken`: one
    object is handed down to every engine run of the analysis, which charges it.

    `spent` and `runs` count every engine run (a forked worker's come back through
    `workers.fan_out`); the quick stage's share of them, the kernels it modeled and the file's
    kernels are kept apart, for what each costs of the budget (`cost`)."""

    issues: int
    deadline: float
    seconds: float
    spent: int = 0
    runs: int = 0
    #: a newer save stops the analysis: between two runs (`check`), and within a run (`engine.CANCEL_CHECK_ISSUES`)
    cancel: CancelToken | None = None
    quick: int = 0  # of `spent`, the quick stage's
    quick_runs: int = 0
    modeled: int = 0  # kernels the quick stage emulated (KERNEL_COST each)
    kernels: int = 0  # the file's kernels (STATIC_COST each)
    walked: int = 0  # steps of the warps the quick stage's prepares walked (WALK_STEP_COST each)
    sliced: int = 0  # steps of the advice's backward slices (SLICE_STEPS_PER_UNIT to a unit)
    prepares: float = 0.0  # the second stage's what-if launches' prepares, in units of one core
    #: of `issues`, what the second stage leaves unspent (SECOND_STAGE_RESERVE; set by `fit`)
    reserve: int = 0

    @classmethod
    def start(cls, budget: AnalysisBudget, cancel: CancelToken | None = None) -> Ledger:
        return cls(issues=budget.issues, deadline=time.monotonic() + budget.seconds, seconds=budget.seconds,
                   cancel=cancel)

    def fit(self, budget: AnalysisBudget, size: FileSize) -> None:
        """The file's own budget, once its size is known (`file_issues`), and the second stage's reserve."""
        self.issues = file_issues(budget, size)
        # the second stage may bring the analysis to (nvcc_multiple - the reserve) nvcc times; where
        # the ceiling (`budget.issues`) binds below that, the file is not near its multiple: no reserve
        self.reserve = self.issues - file_issues(budget, size, max(0.0, budget.nvcc_multiple - SECOND_STAGE_RESERVE))

    @property
    def cost(self) -> float:
        """What was charged, in warp-instructions of one core's time."""
        second = self.spent - self.quick + (self.runs - self.quick_runs) * RUN_COST + self.prepares
        return (self.quick + self.quick_runs * RUN_COST + self.modeled * KERNEL_COST + self.kernels * STATIC_COST
                + self.walked * WALK_STEP_COST + self.sliced / SLICE_STEPS_PER_UNIT + second / SECOND_STAGE_CORES)

    @property
    def left(self) -> int:
        return max(0, int(self.issues - self.cost))

    def second_stage_allowance(self, kernels_left: int) -> float:
        """A kernel's share of what is left short of the reserve, in the issues of its second
        stage's runs (the unit of `plan_second_stage`'s estimates: they run on the cores together)."""
        return SECOND_STAGE_CORES * max(0, self.left - self.reserve) / max(1, kernels_left)

    def expired(self) -> bool:
        return time.monotonic() > self.deadline

    def charge(self, issues: int) -> None:
        """One engine run of the second stage (`model.run_wave`)."""
        self.spent += issues
        self.runs += 1

    def charge_quick(self, issues: int, runs: int = 1, walked: int = 0) -> None:
        """A kernel the quick stage emulated, in `runs` engine runs, its prepare walking `walked` steps."""
        self.charge_quick_stage(issues, runs, 1, walked)

    def charge_quick_stage(self, issues: int, runs: int, modeled: int, walked: int = 0) -> None:
        """The quick stage's charges, also as a whole (a quick stage run ahead of nvcc, taken)."""
        self.spent += issues
        self.runs += runs
        self.quick += issues
        self.quick_runs += runs
        self.modeled += modeled
        self.walked += walked

    def charge_prepares(self, cost: float) -> None:
        """The launches a kernel's what-if points prepare (`SecondStagePlan.prepares`)."""
        self.prepares += cost

    def check(self) -> None:
        """Called before a second-stage run: a cancelled analysis stops here (`Cancelled`)."""
        if self.cancel is not None:
            self.cancel.check()
        if self.expired():
            raise BudgetSpent(f"the wall-clock budget of {self.seconds:g} s was spent")


#: no plan's smallest form costs less: a base run and one perturbed resource's 1.5 runs, each its
#: set-up at least (`plan_second_stage`'s estimate)
SMALLEST_SECOND_STAGE = (1 + 1.5) * RUN_COST
#: the least `run_cap` gives a run: 3x the largest run over the examples and tests/data/real (32,608)
RUN_CAP_FLOOR = 100_000


def run_cap(ledger: Ledger) -> int:
    """The most one engine run may issue: a quarter of the file's budget, so that a loop the model
    cannot end (a persistent kernel's queue) stops well inside it rather than at the engine's own
    guard. Such a run's time is only a lower bound, and it gets no second stage: more issues would
    not make it more than that (issue 35: half the budget was half of persistent_queue's time)."""
    return max(RUN_CAP_FLOOR, ledger.issues // 4)


def quick_run_budget(ledger: Ledger, kernels_left: int, default: int) -> int | None:
    """Per-run issue budget of a kernel's quick emulation: the default while the file's kernels
    fit in what is left, else an equal share of it (never below the floor). Most quick runs use a
    fraction of their budget, so the second stage and the later kernels keep what they did not.
    None: what is left would not pay for the kernel's prepare and one run's set-up, so it is not
    emulated (the kernels before it took the budget: a file's kernels are modeled in file order)."""
    if ledger.left < KERNEL_COST + RUN_COST:
        return None
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
    #: issues of one perturbed sensitivity run (None: `cost`): one that scales a short tail runs the
    #: full wave only
    perturbed_cost: Callable[[int], float] | None = None
    #: what preparing one more launch of the kernel costs (a block size or grid of the what-if
    #: sweep walks its own launch): the base launch's walk steps at WALK_STEP_COST
    prepare_cost: float = 0.0


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
    #: of `estimate`, the what-if launches' prepares (charged as planned: they run in the workers)
    prepares: float = 0.0
    #: why a study was cut: what the whole of it would need, and what was left for it
    why: str = ""

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
    The first two swap where preparing a launch costs more than a run (a long walk: each block size
    and grid prepares its own launch, an SM count only runs), so that the dearer points go first.
    """
    sens_b, wi_b = sensitivity_budget, what_if_budget
    resources: int | None = None
    sizes, counts, mults = shape.block_sizes, shape.sm_counts, shape.grid_multipliers
    with_what_if, with_sens = True, True

    def prepares() -> float:
        # every block size but the current one, and every grid but the base, prepares its launch
        if not (with_what_if and with_sens):
            return 0.0
        return (len([s for s in sizes if s != shape.current_block]) + max(0, len(mults) - 1)) * shape.prepare_cost

    def estimate() -> float:
        # Runs that the studies skip or share are not counted: a gap run only for a unit busy
        # ≥ 1 % of the time (about half of those used), and the current block size and all-SMs
        # point repeat the base run (WaveCache). Each run pays its set-up too (RUN_COST).
        total = 0.0
        if with_sens:
            n = resources if resources is not None else shape.resources
            perturbed = shape.perturbed_cost or shape.cost
            total += shape.cost(sens_b) + RUN_COST + 1.5 * n * (perturbed(sens_b) + RUN_COST)
        if with_what_if:
            runs = len(sizes) + len(counts) + max(0, len(mults) - 1) - 2 + shape.staged_loops
            total += max(1, runs) * (shape.cost(wi_b) + RUN_COST) + prepares()
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

    whole, whole_prepares = estimate(), prepares()
    smallest = 0.0
    sweeps = ((fewer_block_sizes, coarse_trajectory) if shape.prepare_cost > shape.cost(wi_b) + RUN_COST
              else (coarse_trajectory, fewer_block_sizes))
    for step in (*sweeps, smaller_runs, fewer_resources, no_what_if, smallest_runs, nothing):
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
        cuts=tuple(cuts), estimate=estimate(), prepares=prepares(),
        why=f"the whole study needs about {whole:,.0f} warp-instructions ({whole_prepares:,.0f} of them preparing "
            f"the what-if launches) and {allowance:,.0f} were left for this kernel" if cuts and with_sens else "")
