"""The profile model: one shape for modeled (emulated) and measured (ncu, CUPTI, imported) data.

Everything downstream (blame, optimizers, estimators, roofline, the editor) reads this
and never asks where it came from, except to *show* the provenance. The quantities
follow GPA §II-A: every PC sample records the warp's state; a sample whose warp issued
is "selected" (active), every other one is a latency (stall) sample.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class StallReason(str, Enum):
    """Nsight Compute's warp-state names (per-PC `smsp__pcsamp_warps_issue_stalled_<reason>`)."""

    long_scoreboard = "long_scoreboard"
    short_scoreboard = "short_scoreboard"
    wait = "wait"
    barrier = "barrier"
    membar = "membar"
    math_pipe_throttle = "math_pipe_throttle"
    mio_throttle = "mio_throttle"
    lg_throttle = "lg_throttle"
    tex_throttle = "tex_throttle"
    not_selected = "not_selected"
    selected = "selected"
    branch_resolving = "branch_resolving"
    no_instruction = "no_instruction"
    dispatch_stall = "dispatch_stall"
    drain = "drain"
    sleeping = "sleeping"
    imc_miss = "imc_miss"
    misc = "misc"

    @property
    def label(self) -> str:
        return self.value.replace("_", " ")


#: Stall reasons that mean "waiting on a memory result"; GPA's opcode pruning uses them.
MEMORY_STALLS = frozenset({StallReason.long_scoreboard, StallReason.lg_throttle, StallReason.tex_throttle,
                           StallReason.mio_throttle, StallReason.membar, StallReason.drain})


class Assumption(BaseModel):
    """A value the model needed and did not observe; the editor shows these so users can correct them."""

    model_config = ConfigDict(frozen=True)

    name: str  # e.g. "grid", "trip_count@line 30", "l2_hit_rate"
    value: str
    source: Literal["sass", "captured", "launch_site", "annotation", "settings", "default", "measured"]
    detail: str = ""
    #: the analysed file's lines whose figures rest on this value alone (code that runs only because
    #: of it: the side of a branch the model could not compute); empty when it bears on the whole kernel
    lines: tuple[int, ...] = ()


class Provenance(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: Literal["modeled", "measured"]
    device: str  # product name, e.g. "H100 SXM"
    arch: str  # e.g. "sm_90"
    tool: str  # "kernelscope-emulator", "ncu", "cupti", "ncu-report import"
    tool_version: str
    time: datetime
    assumptions: tuple[Assumption, ...] = ()
    source_sha256: str | None = None  # of the .cu the profile belongs to; a changed file must not reuse it

    @property
    def summary(self) -> str:
        return f"{self.kind} ({self.tool} {self.tool_version}, {self.device})"


class PCSample(BaseModel):
    """Samples at one PC, by warp state. `samples[selected]` are the issued (active) samples."""

    model_config = ConfigDict(frozen=True)

    function: str  # mangled name of the function holding the PC
    pc: int  # offset within that function
    samples: dict[StallReason, float]
    executed: float | None = None  # warp-level instructions executed, where known

    @property
    def total(self) -> float:
        return sum(self.samples.values())

    @property
    def stalls(self) -> float:
        return self.total - self.samples.get(StallReason.selected, 0.0)


class LineSample(BaseModel):
    model_config = ConfigDict(frozen=True)

    file: str
    line: int
    samples: dict[StallReason, float]

    @property
    def total(self) -> float:
        return sum(self.samples.values())


class LaunchConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_smem: int = 0

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]


class KernelProfile(BaseModel):
    model_config = ConfigDict(frozen=True)

    kernel: str  # mangled
    name: str  # demangled
    launch: LaunchConfig
    registers_per_thread: int
    occupancy: float  # active warps / max warps per SM, theoretical for modeled, achieved for measured
    occupancy_limiter: str | None = None
    duration_s: float
    pcs: tuple[PCSample, ...]
    lines: tuple[LineSample, ...]
    #: fraction of peak for each resource (keys: the arch latency-table classes, e.g. "fp32", "dram")
    utilization: dict[str, float] = Field(default_factory=dict)
    #: FLOPs for the whole launch per precision: "fp64", "fp32", "fp16", "int", "tensor"
    flops: dict[str, float] = Field(default_factory=dict)
    #: bytes moved for the whole launch per level: "l1", "shared", "l2", "dram"
    bytes: dict[str, float] = Field(default_factory=dict)
    #: sector hit rate per cache level, 0..1: "l1" (L1/tex), "l2". Measured: from ncu's Memory Workload
    #: Analysis section (none without it). Modeled: L2's, as ncu counts it (`TrafficCounter`)
    hit_rates: dict[str, float] = Field(default_factory=dict)
    provenance: Provenance

    @property
    def total_samples(self) -> float:
        return sum(p.total for p in self.pcs)

    def line(self, line: int) -> LineSample | None:
        return next((ls for ls in self.lines if ls.line == line), None)


class Profile(BaseModel):
    """Profiles of the kernels of one source file, from one source of truth."""

    model_config = ConfigDict(frozen=True)

    kernels: tuple[KernelProfile, ...]
    provenance: Provenance

    def kernel(self, mangled_or_name: str) -> KernelProfile | None:
        return next((k for k in self.kernels if mangled_or_name in (k.kernel, k.name)), None)


def aggregate_lines(pcs: tuple[PCSample, ...], line_of: dict[tuple[str, int], tuple[str, int]]) -> tuple[LineSample, ...]:
    """Sum per-PC samples into per-line samples (Starlight Eq. 2's numerator per line).

    `line_of` maps (function, pc) to (file, line); it comes from `program.line_table`,
    the one place that maps PCs to lines. PCs without a line are left out.
    """
    acc: dict[tuple[str, int], dict[StallReason, float]] = {}
    for p in pcs:
        loc = line_of.get((p.function, p.pc))
        if loc is None:
            continue
        bucket = acc.setdefault(loc, {})
        for reason, n in p.samples.items():
            bucket[reason] = bucket.get(reason, 0.0) + n
    return tuple(LineSample(file=f, line=ln, samples=s) for (f, ln), s in sorted(acc.items()))
