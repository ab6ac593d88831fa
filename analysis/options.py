"""Options that change what an analysis computes. The server's settings embed these.

Everything here is part of the cache key (see `AnalysisOptions.cache_key`).
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.json_schema import SkipJsonSchema


class LaunchHint(BaseModel):
    """What the user tells the model about a kernel's launch when the source does not fold to constants."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    grid: tuple[int, int, int] | int | None = Field(None, description="Blocks in the grid (x or (x, y, z)).")
    block: tuple[int, int, int] | int | None = Field(None, description="Threads per block (x or (x, y, z)).")
    dynamic_smem: int | None = Field(None, ge=0, description="Dynamic shared memory per block, bytes.")
    trip_count: int | None = Field(None, ge=1, description="Trip count for the kernel's loops whose bound is not constant.")
    values: dict[str, int] = Field(default_factory=dict,
                                   description="Values of kernel parameters or variables, e.g. {\"n\": 16777216}.")


class CapturedKernel(BaseModel):
    """A kernel's launch as the program made it, recorded by launch capture (analysis/capture/):
    its most frequent configuration, that launch's argument bytes, and how often it launched."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_smem: int = 0
    args: tuple[str, ...] = ()  # hex bytes per parameter, in declaration order
    launches: int = 1  # over all configurations, including those beyond the recording cap
    configurations: int = 1


_UNSIGNED = ("unsigned", "size_t", "uint", "uint8_t", "uint16_t", "uint32_t", "uint64_t")
_INTEGER = ("int", "long", "short", "char", "size_t", "int8_t", "int16_t", "int32_t", "int64_t", "bool", *_UNSIGNED)


def scalar_value(raw_hex: str, type_text: str) -> int | None:
    """An integer kernel argument from its bytes (little-endian, the CUDA ABI on x86-64 and
    aarch64); floating-point, struct and pointer arguments are not integer values of the model."""
    t = " ".join(w for w in type_text.replace("*", " * ").split() if w not in ("const", "volatile", "__restrict__"))
    if "*" in t or "&" in t or not any(w in _INTEGER for w in t.split()):
        return None
    raw = bytes.fromhex(raw_hex)
    if len(raw) not in (1, 2, 4, 8):
        return None
    return int.from_bytes(raw, "little", signed=not any(w in _UNSIGNED for w in t.split()))


class AnalysisBudget(BaseModel):
    """What one analysis of a file may cost (docs/emulator.md, "Budget")."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    issues: int = Field(5_000_000, ge=10_000, le=20_000_000, description=(
        "The most one file's analysis may spend, in the emulator's warp-instructions (the quick stage, "
        "sensitivity and what-if together, with the fixed costs of runs and kernels), whatever the file's size; "
        "below it the budget is `nvcc_multiple`. Past it the second stage degrades (coarser sweeps, smaller "
        "runs, fewer perturbations, none), then kernels are not emulated, and the result lists what was cut."))
    nvcc_multiple: float = Field(4.0, gt=0, le=1_000, description=(
        "The analysis's work on one file (engine runs and their set-up, each kernel's preparation, static "
        "facts and advice) may take about this many times nvcc's own time on the file, estimated from its size "
        "(functions, SASS instructions, bytes of source) so that the result stays a function of its inputs."))
    seconds: float = Field(30.0, gt=0, le=600, description=(
        "Wall-clock backstop for one file's second stage; when it binds the result depends on the "
        "machine's speed, and says so."))
    processes: int | None = Field(None, ge=1, le=64, description=(
        "Processes the second stage's independent runs may use at once (this one included); default: the "
        "CPUs the analysis may run on, at most 4. The result is the same whatever the number; only its "
        "wall-clock time changes."))
    # not a user setting (out of the settings' schema, their docs and the cache key): the server's choice
    workers_only: SkipJsonSchema[bool] = Field(False, exclude=True, description=(
        "Run the second stage's runs in worker processes only, none in the analysing process, which then "
        "only waits (the language server sets it: its requests, a hover, need that process's interpreter). "
        "The result is the same either way."))
    run_ahead: SkipJsonSchema[bool] = Field(True, exclude=True, description=(
        "Run the quick stage on NVRTC's cubin of the device code while nvcc compiles (analysis/speculation.py); "
        "kept only when nvcc's cubin gives the same SASS, resources and macros, so the result is the same "
        "either way (benchmarks turn it off to measure what it saves)."))


class AnalysisOptions(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    arch: str = Field("sm_90", description="Target architecture, e.g. sm_80, sm_90.")
    device: str | None = Field(None, description="Named product for peaks and SM count (default: the arch's flagship).")
    nvcc_path: str | None = Field(None, description="Explicit nvcc; otherwise compile_commands.json, PATH, CUDA_HOME, then the pip wheels.")
    flags: tuple[str, ...] = Field((), description="Extra nvcc flags, e.g. [\"-O3\", \"-std=c++17\"].")
    compile_commands: Path | None = Field(None, description="Path to compile_commands.json (file or its directory).")
    arch_file: Path | None = Field(None, description="A TOML/JSON file overriding or adding device specs (empirical ceilings).")
    launch_hints: dict[str, LaunchHint] = Field(default_factory=dict,
                                                description="Per-kernel launch and trip-count hints, keyed by kernel name.")
    captured: dict[str, CapturedKernel] = Field(default_factory=dict,
                                                description="Launches recorded by launch capture, keyed by kernel name; they take precedence over folded launch sites.")
    default_trip_count: int = Field(64, ge=1, description="Trip count assumed for loops whose bound is unknown.")
    l2_hit_rate: float | None = Field(None, ge=0.0, le=1.0,
                                      description="Fraction of global loads served by L2 (default: derived from access pattern).")
    emulate: bool = Field(True, description="Run the abstract emulator (modeled stall profile).")
    budget: AnalysisBudget = Field(default_factory=AnalysisBudget,
                                   description="What one analysis may cost: emulated warp-instructions and wall time.")
    compile_timeout_s: float = Field(120.0, gt=0, le=3600, description="Stop a compile that takes longer than this.")

    @field_validator("arch")
    @classmethod
    def _arch_form(cls, v: str) -> str:
        v = v.strip()
        digits = v[3:] if v.startswith("sm_") else v
        if not digits.rstrip("af").isdigit():
            raise ValueError(f"'{v}' is not an architecture like sm_90")
        return v if v.startswith("sm_") else f"sm_{v}"

    def cache_key(self, source_sha256: str, toolchain_version: str) -> str:
        # the number of processes changes when a result comes, not what it is
        settings = self.model_dump_json(exclude={"budget": {"processes"}})
        # the files the settings name count by their contents: an arch file or compile database
        # edited in place must not serve the result made with the old one
        named = "|".join(_content_digest(p) for p in (self.arch_file, self.compile_commands))
        blob = f"{source_sha256}|{toolchain_version}|{engine_fingerprint()}|{settings}|{named}"
        return hashlib.sha256(blob.encode()).hexdigest()


def _content_digest(path: Path | None) -> str:
    """A digest of the file a setting names (a compile database's folder: its compile_commands.json);
    "-" where there is none or it cannot be read (the analysis then reports that itself). Read as
    every file kernelscope did not write is (files.py): a FIFO or /dev/zero named here must not hang."""
    if path is None:
        return "-"
    from .files import MAX_DATABASE_BYTES, compile_database_file, read_regular  # here: options.py loads alone

    try:
        return hashlib.sha256(read_regular(compile_database_file(path), MAX_DATABASE_BYTES)).hexdigest()
    except OSError:
        return "-"


@lru_cache(maxsize=1)
def engine_fingerprint() -> str:
    """A digest of the analysis engine's own code and data.

    Part of every cache key: a result cached by another version of the emulator, advisor or arch
    data must not be served after an upgrade, nor after an edit to a development install, where
    the package version does not move. Hashing ~1 MB of files costs a few ms once per process.
    """
    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for f in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".toml", ".json", ".cpp", ".h") and p.is_file()):
        h.update(f.relative_to(root).as_posix().encode())
        h.update(b"\0")
        h.update(f.read_bytes())
    return h.hexdigest()[:16]
