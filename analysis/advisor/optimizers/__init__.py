"""The optimizers: one class per strategy, each with one `match(ctx) -> list[Advice]`.

`REGISTRY` is the one place they are listed; adding an optimizer is one class plus one line here
(docs/advisor.md, "Adding an optimizer").
"""

from __future__ import annotations

from .base import MatchContext, Optimizer, WhatIfReads
from .latency import CodeReordering, FunctionInlining, LoopUnrolling
from .intensity import RegisterTiling, TensorCores
from .parallel import BlockIncrease, OccupancyLimit, ThreadCoarsening, ThreadIncrease, WaveTail
from .stall import (FastMath, FunctionSplit, MemoryTransactionReduction, RegisterReuse, StrengthReduction,
                    WarpBalance, WarpShuffle)
from .starlight import ReducePrecision, SharedMemoryTiling
from .static import (CoalescedAccess, ContendedAtomics, DivergentBranch, DoubleMathOnFloat, DoublePrecisionConstant,
                     MissingRestrict, SharedBankConflicts, VectorizeLoads)

REGISTRY: tuple[Optimizer, ...] = (
    # GPA Table II — stall elimination (Eq. 2)
    RegisterReuse(), StrengthReduction(), FunctionSplit(), FastMath(), WarpBalance(), MemoryTransactionReduction(),
    # a block reduction's steps within a warp as shuffles (GPA Eq. 2 over its barriers and shared stores)
    WarpShuffle(),
    # GPA Table II — latency hiding (Eq. 4–5)
    LoopUnrolling(), CodeReordering(), FunctionInlining(),
    # GPA Table II — parallel (Eq. 6–10), and occupancy limits
    BlockIncrease(), ThreadIncrease(), OccupancyLimit(), WaveTail(), ThreadCoarsening(),
    # Starlight Table 1 — roofline-driven (Eq. 3)
    SharedMemoryTiling(), ReducePrecision(),
    # Starlight Table 1 — arithmetic intensity of an inner loop (GPA Eq. 2 over the loads / FMAs it removes)
    RegisterTiling(), TensorCores(),
    # Static source/SASS patterns
    DoublePrecisionConstant(), DoubleMathOnFloat(), MissingRestrict(), VectorizeLoads(), CoalescedAccess(),
    SharedBankConflicts(), ContendedAtomics(), DivergentBranch(),
)

__all__ = ["REGISTRY", "MatchContext", "Optimizer", "WhatIfReads"]
