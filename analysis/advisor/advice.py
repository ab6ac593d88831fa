"""Advice records: what the optimizers matched, what the estimators predict, and how to apply it.

An `Advice` is the unit every consumer shows: a diagnostic on its lines, a hover entry,
a code action built from its `fix`, a SARIF result, a row in the HTML report.
Lines are 1-based; columns are 0-based *characters* of the line (the server converts to
the client's UTF-8/16/32 units).
"""

from __future__ import annotations

import hashlib
import os
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class SourceEdit(BaseModel):
    """Replace the text between (line, col) and (end_line, end_col) with `new_text`."""

    model_config = ConfigDict(frozen=True)

    line: int
    col: int
    end_line: int
    end_col: int
    new_text: str


FixKind = Literal[
    "pragma_unroll", "float_literal", "float_math_function", "forceinline", "restrict_const",
    "launch_bounds", "block_size", "hoist_load", "shared_memory_tiling",
]


class Fix(BaseModel):
    """A mechanical edit that code actions apply as a WorkspaceEdit."""

    model_config = ConfigDict(frozen=True)

    kind: FixKind
    description: str  # e.g. "insert `#pragma unroll 4` before the loop at line 30"
    edits: tuple[SourceEdit, ...]
    is_snippet: bool = False  # new_text uses LSP snippet placeholders (${1:...})


class Hotspot(BaseModel):
    """A def -> use pair from the blamer (GPA Fig. 8's "hotspots")."""

    model_config = ConfigDict(frozen=True)

    def_line: int | None
    use_line: int | None
    def_pc: int
    use_pc: int
    def_opcode: str
    use_opcode: str
    distance: int  # instructions between def and use along the path
    samples: float  # stall samples blamed on this pair
    category: str  # GPA's classes: "global memory", "shared memory", "arithmetic", ...


#: the launch inputs an estimate from the launch's shape rests on (`Advice.assumed`)
LAUNCH_INPUTS = ("grid", "block", "dynamic_smem")
#: the assumption that names code the model ran only on a guessed branch (`Assumption.lines`)
GUESSED_BRANCHES = "control_flow"


class Estimate(BaseModel):
    """A predicted speedup and the formula that produced it, so users can check the arithmetic."""

    model_config = ConfigDict(frozen=True)

    speedup: float
    formula: str  # e.g. "GPA Eq. 2: T/(T−M)"
    inputs: dict[str, float] = Field(default_factory=dict)
    #: the emulator ran the changed kernel (a what-if): its units are in the figure, so neither the
    #: roofline bound nor the cap on unmodeled figures applies (`optimizers.base.grounded`)
    remodeled: bool = False
    #: the figure reads the launch's waves or occupancy (every parallel optimizer's does): on an
    #: assumed launch it is a guess, and the item says so (`optimizers.base.Optimizer.advice`)
    reads_launch: bool = False


class Advice(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    optimizer: str  # e.g. "loop_unrolling", "fast_math", "double_precision_constant"
    title: str  # short, for lists and code-action titles
    kernel: str  # mangled name
    kernel_name: str
    lines: tuple[int, ...]  # primary line first
    #: the file `lines` are in when it is not the analysed one: a kernel defined in an included
    #: `.cu` (Rodinia's `#include "needle_kernel.cu"`). Such advice has no fix and is no diagnostic of
    #: the analysed file; analysing the included file itself shows it there. None: the analysed file
    file: str | None = None
    columns: tuple[int, int] | None = None  # (start, end) on the primary line, when precise
    hotspots: tuple[Hotspot, ...] = ()
    importance: float  # share of the kernel's samples (0..1) this advice concerns, or what `importance_basis` says
    #: what `importance` is a share of, as the reports print it after the percentage: the samples,
    #: or for a launch-shape advice the SMs left idle or the warp slots left empty (not samples)
    importance_basis: str = "of samples"
    #: the defaulted inputs the estimate rests on (the launch's grid, block, dynamic shared memory
    #: when neither capture, the source, an annotation nor a hint gave them; `control_flow` when its
    #: lines run in the model only on a branch it guessed): such advice is never a warning, and its
    #: message names the assumption (and, for a launch, how to give the real value)
    assumed: tuple[str, ...] = ()
    estimate: Estimate
    provenance: Literal["modeled", "measured", "static"]
    message: str  # the fact with numbers, what it means, what to do
    fix: Fix | None = None
    #: PCs of the kernel's instructions the remedy changes: two items changing the same ones are one fix
    changes: tuple[int, ...] = ()
    #: the other optimizers whose items were this same fix (merged into this one: ranking.merge_same_fix)
    also: tuple[str, ...] = ()
    verified_speedup: float | None = None  # filled by verification (re-model or re-measure)
    #: what the re-model of the fix said (analysis/advisor/verify.py); None until verified
    verification: Literal["verified", "no_change", "slower", "does_not_compile"] | None = None

    @property
    def speedup(self) -> float:
        return self.verified_speedup if self.verified_speedup is not None else self.estimate.speedup

    @property
    def where(self) -> str:
        """Where its lines are, as every report says it: "line 12", or "needle_kernel.cu:162" for
        another file's (`file`), without a line where the item has none (a launch-shape item of a
        kernel defined there)."""
        line = self.lines[0] if self.lines and self.lines[0] > 0 else None
        if self.file is None:
            return f"line {line if line is not None else '?'}"
        name = os.path.basename(self.file)
        return f"{name}:{line}" if line is not None else name

    @property
    def rests_on(self) -> str:
        """What of `assumed` its figure rests on, as the reports say it ("" for nothing)."""
        parts = (["on the assumed launch"] if any(n in LAUNCH_INPUTS for n in self.assumed) else []) + \
            (["on a guessed branch"] if GUESSED_BRANCHES in self.assumed else [])
        return "; ".join(parts)

    @property
    def no_modeled_gain(self) -> bool:
        """Its fix was re-modeled and gains nothing (or loses): kept in reports, not shown as a diagnostic."""
        return self.verification in ("no_change", "slower")


def advice_id(optimizer: str, kernel: str, line: int, detail: str = "") -> str:
    """Stable across runs of the same source, so verification results can be cached by it."""
    return hashlib.sha1(f"{optimizer}|{kernel}|{line}|{detail}".encode()).hexdigest()[:12]
