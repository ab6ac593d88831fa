"""What one analysis of one file produces: the stable, documented result schema.

`kernelscope analyze --json` prints `AnalysisResult.model_dump_json()`; the language
server caches it and translates it to LSP; docs/json-schema.md is generated from it.
Bump `SCHEMA_VERSION` on any incompatible change.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .advisor.advice import Advice
from .frontend.resources import Resources
from .machine.roofline import KernelRoofline
from .profile import Assumption, LaunchConfig, Profile

SCHEMA_VERSION = 1


class Message(BaseModel):
    """A compiler error/warning (source "nvcc") or a kernelscope note, on a line of the analysed file."""

    model_config = ConfigDict(frozen=True)

    file: str
    line: int | None  # 1-based
    column: int | None  # 1-based, as compilers print it
    severity: Literal["error", "warning", "note", "remark", "info"]
    message: str
    source: Literal["nvcc", "nvrtc", "ptxas", "kernelscope"] = "nvcc"
    #: where the message really came from, when it was attributed to an #include line
    origin: str | None = None

    @classmethod
    def note(cls, path, text: str, severity: Literal["info", "warning"] = "info") -> Message:
        """A kernelscope note on the file as a whole."""
        return cls(file=str(path), line=None, column=None, severity=severity, message=text, source="kernelscope")


class OccupancyReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    block_size: int
    active_blocks_per_sm: int
    active_warps_per_sm: int
    max_warps_per_sm: int
    occupancy: float  # 0..1, theoretical: what the limits allow each SM, whatever the grid
    limiter: str  # "warps", "registers", "shared_memory", "blocks", "block_size_invalid"
    # How the launch fills the device (None without a launch): grid blocks / (SMs x active blocks
    # per SM). Below 1 part of the GPU idles, whatever the theoretical occupancy says.
    waves: float | None = None
    sm_count: int | None = None


class StaticFact(BaseModel):
    """A fact read from SASS or source alone (no profile needed)."""

    model_config = ConfigDict(frozen=True)

    kind: Literal[
        "fp64_conversion", "fp64_math", "int_division", "noinline_call", "rolled_loop", "spill",
        "local_memory", "uncoalesced_access", "bank_conflict",
    ]
    line: int
    column: int | None = None  # 0-based character column of the culprit in the source, when known
    end_column: int | None = None
    detail: str
    cause: str | None = None  # the source literal or call that causes it, e.g. "0.25" or "sqrt"
    count: int = 1  # SASS instructions involved
    trip_count: int | None = None  # for rolled loops, when constant


class LineReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    line: int
    share: float  # of the kernel's samples (Starlight Eq. 2), 0..1
    #: of the kernel's samples, spent in the non-inlined functions this line calls (call_sites.py);
    #: not part of `share`, whose lines add up to 100 %
    callee_share: float = 0.0
    modeled_share: float | None = None  # the model's share, when `share` is measured
    samples: dict[str, float] = Field(default_factory=dict)  # by stall reason
    instruction_mix: dict[str, int] = Field(default_factory=dict)  # by instruction class, static count
    flops_per_execution: float = 0.0  # per thread, FMA = 2
    bytes_per_execution: dict[str, float] = Field(default_factory=dict)  # per thread, by memory space
    sass: tuple[str, ...] = ()  # "/*0x0090*/ LDG.E R2, desc[UR4][R2.64]"
    static_cost: float = 0.0  # issue-cycle estimate without a profile, for ranking when none exists


_LEVEL_NAMES = {"dram": "DRAM", "l2": "L2", "l1": "L1", "shared": "shared memory"}


class MemoryLevel(BaseModel):
    """One level of the modeled memory hierarchy (emulator/caches.py)."""

    model_config = ConfigDict(frozen=True)

    bytes: float  # moved at this level over the whole launch
    #: of the bytes requested at this level, the share it served (l1: of the global sectors
    #: requested; l2: of those L1 passed on); None for DRAM, which serves everything it is sent
    hit_rate: float | None = None


class MemoryReport(BaseModel):
    """The memory hierarchy as the model sees the launch: bytes and hit rate per level."""

    model_config = ConfigDict(frozen=True)

    levels: dict[str, MemoryLevel] = Field(default_factory=dict)  # "l1", "l2", "dram", "shared"
    binding_level: str | None = None  # the level whose bandwidth binds the model's time (roofline)


class KernelReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str  # demangled
    mangled: str
    line: int | None  # declaration line in the source
    end_line: int | None
    resources: Resources
    launch: LaunchConfig | None
    occupancy: OccupancyReport | None
    instruction_mix: dict[str, int] = Field(default_factory=dict)
    #: the launch's executed FLOPs per precision and bytes per level (the profile's `flops` and
    #: `bytes`, the roofline's) per thread of the launch: per thread x threads is the profile's
    #: total (stages.per_thread); empty where nothing was emulated or measured
    flops_per_thread: dict[str, float] = Field(default_factory=dict)
    bytes_per_thread: dict[str, float] = Field(default_factory=dict)
    facts: tuple[StaticFact, ...] = ()
    lines: tuple[LineReport, ...] = ()
    bound: Literal["memory", "compute", "latency"] | None = None
    #: where `bound` is "memory": the level whose bandwidth binds ("dram", "l2", "l1", "shared")
    bound_level: str | None = None
    bottleneck: str | None = None  # the resource named by sensitivity analysis, e.g. "dram throughput", "l2 latency"
    roofline_fraction: float | None = None  # achieved / attainable at this intensity
    predicted_duration_s: float | None = None  # from the model
    measured_duration_s: float | None = None  # from a measured profile matching this source
    memory: MemoryReport | None = None  # the modeled hierarchy (a measured profile's bytes are in `profile`)
    assumptions: tuple[Assumption, ...] = ()

    @property
    def bound_label(self) -> str | None:
        """"memory-bound (L2)", "compute-bound": the roofline's verdict as every front end words it."""
        if self.bound is None:
            return None
        level = _LEVEL_NAMES.get(self.bound_level or "") if self.bound == "memory" else None
        return f"{self.bound}-bound" + (f" ({level})" if level else "")

    def line_report(self, line: int) -> LineReport | None:
        return next((lr for lr in self.lines if lr.line == line), None)


class ToolchainInfo(BaseModel):
    model_config = ConfigDict(frozen=True)

    nvcc: str
    nvdisasm: str | None
    version: str
    origin: str  # which search rule found it
    frontend: Literal["nvcc", "nvrtc"] = "nvcc"


class AnalysisResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    schema_version: int = SCHEMA_VERSION
    source: str  # absolute path
    source_sha256: str
    arch: str
    device: str
    flags: tuple[str, ...] = ()
    toolchain: ToolchainInfo | None
    compiled: bool  # False when no cubin could be produced
    device_only: bool = False  # host code failed; kernels analysed from device code alone
    messages: tuple[Message, ...] = ()
    kernels: tuple[KernelReport, ...] = ()
    advice: tuple[Advice, ...] = ()
    profile: Profile | None = None
    rooflines: tuple[KernelRoofline, ...] = ()
    #: "quick": one emulation per kernel; "full": plus sensitivity and what-if sweeps
    depth: Literal["quick", "full"] = "full"
    timings: dict[str, float] = Field(default_factory=dict)  # seconds per pipeline stage

    def kernel(self, name: str) -> KernelReport | None:
        return next((k for k in self.kernels if name in (k.name, k.mangled)), None)

    def kernel_at(self, line: int) -> KernelReport | None:
        return next((k for k in self.kernels if k.line and k.end_line and k.line <= line <= k.end_line), None)
