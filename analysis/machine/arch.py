"""GPU architecture and product descriptions, loaded from `data/arch_specs.toml`.

Descriptions are data (llvm-mca's scheduling models, GPA's GPUArchitecture): the emulator,
the occupancy calculator and the roofline read these models and never branch on an arch name.
Every number in the data file names its source; `docs/arch-specs.md` explains the layout,
the derivations and how to override a device with measured (empirical) ceilings, as
Starlight §4 allows.
"""

from __future__ import annotations

import json
import re
import tomllib
from enum import Enum
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

BUILTIN_FILE = Path(__file__).resolve().parents[1] / "data" / "arch_specs.toml"


class ArchSpecError(ValueError):
    """The architecture data is wrong or a lookup failed; the message names the file and field."""


class UnknownArchError(ArchSpecError):
    pass


class Resource(str, Enum):
    """The resource classes an SM emulator schedules (SAAKE §3: one latency L and gap G each)."""

    fp32 = "fp32"
    fp64 = "fp64"
    fp16 = "fp16"
    int = "int"
    sfu = "sfu"  # MUFU
    conversion = "conversion"  # F2F / I2F / F2I
    tensor = "tensor"
    lsu = "lsu"  # L1 / global issue
    shared = "shared"
    l2 = "l2"
    dram = "dram"
    constant = "constant"
    branch = "branch"
    barrier = "barrier"
    atomic = "atomic"


class Precision(str, Enum):
    fp64 = "fp64"
    fp32 = "fp32"
    fp16 = "fp16"
    int32 = "int32"
    tensor_fp16 = "tensor_fp16"


class MemoryLevel(str, Enum):
    l1 = "l1"
    shared = "shared"
    l2 = "l2"
    dram = "dram"


SourceIds = tuple[str, ...]


class Sourced(BaseModel):
    """A field group with citations: `source` covers every field, `<field>_source` overrides one."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: SourceIds = Field(min_length=1)
    field_sources: dict[str, SourceIds] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _collect_field_sources(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        per_field = dict(data.pop("field_sources", {}) or {})
        for key in [k for k in data if k.endswith("_source")]:
            target = key.removesuffix("_source")
            if target not in cls.model_fields or target in ("source", "field_sources"):
                raise ValueError(f"'{key}' cites a field '{target}' that does not exist")
            per_field[target] = data.pop(key)
        if per_field:
            data["field_sources"] = per_field
        return data

    def sources_for(self, field: str) -> SourceIds:
        return self.field_sources.get(field, self.source)


class InstructionSpec(Sourced):
    """One pipe: `latency` in cycles, `gap` in cycles between two warp-instructions on one SMSP.

    `rate_per_sm` is the Programming Guide's "results per clock cycle per multiprocessor" (FLOP for
    tensor); the gap follows from it: a warp-instruction yields warp_size × results_per_lane
    results and each of the SM's sub-partitions gets rate / schedulers of them per clock.
    `None` means no public figure was found; for l2/dram the gap comes from the device's bandwidth
    (`DeviceSpec.pipe_gap`).
    """

    latency: float | None = Field(None, gt=0)
    gap: float | None = Field(None, gt=0)
    rate_per_sm: float | None = Field(None, gt=0)
    results_per_lane: float = Field(1, gt=0)  # 2 for packed HFMA2; 128 FLOP for HMMA.16816 (2·16·8·16/32)

    @model_validator(mode="after")
    def _one_throughput(self) -> InstructionSpec:
        if self.gap is not None and self.rate_per_sm is not None:
            raise ValueError("give either 'gap' or 'rate_per_sm', not both")
        return self


class ICacheSpec(Sourced):
    """The instruction-cache hierarchy: an L0 per SM sub-partition, an L1 per SM (Jia et al. 2018/2019).

    Sizes in bytes; `l0_miss_latency` is the fetch of a line that misses L0 and hits L1,
    `l1_miss_latency` the fetch of a line that misses both (served from the GPC-level cache / L2).
    `prefetch_lines` is the depth of the stream buffer each sub-partition prefetches the lines after
    a miss with (Huerta et al. 2025); a table without it has no prefetcher. `l0_fill_cycles` and
    `l1_fill_cycles` are the cycles between two lines arriving from L1 into a sub-partition's L0,
    and from beyond into the SM's L1 (the fetch bandwidth code that streams meets); a table without
    them fetches as many lines at once as are asked for.
    """

    l0_bytes: int = Field(gt=0)
    l1_bytes: int = Field(gt=0)
    line_bytes: int = Field(gt=0)
    instruction_bytes: int = Field(gt=0)  # 128-bit instruction words since Volta
    l0_miss_latency: float = Field(gt=0)
    l1_miss_latency: float = Field(gt=0)
    prefetch_lines: int = Field(0, ge=0)
    l0_fill_cycles: float = Field(0.0, ge=0)
    l1_fill_cycles: float = Field(0.0, ge=0)


class DataCacheSpec(Sourced):
    """The SM's unified L1 data cache / shared memory array, in the sizes the Programming Guide gives.

    What is not carved out for shared memory caches global and local data (CC 7.0+: one array).
    `carveouts_kib` are the shared-memory capacities the driver can configure; it picks the smallest
    that holds the resident blocks' shared memory and at least `min_carveout_kib`.
    """

    unified_bytes: int = Field(gt=0)
    line_bytes: int = Field(128, gt=0)  # tags are per 128 B line, valid bits per 32 B sector
    sector_bytes: int = Field(32, gt=0)
    carveouts_kib: tuple[int, ...]
    min_carveout_kib: int = Field(0, ge=0)

    def l1_bytes(self, shared_per_sm: int) -> int:
        """Bytes left to L1 when the resident blocks need `shared_per_sm` bytes of shared memory."""
        need = max(shared_per_sm, self.min_carveout_kib * 1024)
        carve = next((c * 1024 for c in sorted(self.carveouts_kib) if c * 1024 >= need),
                     max(self.carveouts_kib) * 1024)
        return max(0, self.unified_bytes - carve)


class ConstantBank(Sourced):
    """Where bank 0 holds what the SASS reads as `c[0x0][offset]`: blockDim.xyz, gridDim.xyz and the
    first kernel argument. The layout is the compiler's, and it moved on sm_100 (CUDA 13)."""

    block_dim: int = Field(ge=0)  # blockDim.x; .y and .z follow at +4, +8
    grid_dim: int = Field(ge=0)  # gridDim.x; .y and .z follow at +4, +8
    params: int = Field(ge=0)  # the first kernel argument; the others follow, each aligned to its size

    def dimension(self, offset: int) -> tuple[str, int] | None:
        """("block" | "grid", 0/1/2 for x/y/z) for a launch dimension's offset, else None."""
        for name, base in (("block", self.block_dim), ("grid", self.grid_dim)):
            if base <= offset < base + 12 and (offset - base) % 4 == 0:
                return name, (offset - base) // 4
        return None


class ArchSpec(Sourced):
    """Per compute capability: CUDA's limits (Programming Guide Tables 30/31, cuda_occupancy.h) and pipes."""

    name: str  # "sm_80"
    codename: str
    warp_size: int = Field(gt=0)
    schedulers_per_sm: int = Field(gt=0)  # = SM sub-partitions (cudaOccSubPartitionsPerMultiprocessor)
    max_threads_per_block: int = Field(gt=0)
    max_threads_per_sm: int = Field(gt=0)
    max_warps_per_sm: int = Field(gt=0)
    max_blocks_per_sm: int = Field(gt=0)
    registers_per_sm: int = Field(gt=0)
    max_registers_per_block: int = Field(gt=0)
    max_registers_per_thread: int = Field(gt=0)
    register_allocation_unit: int = Field(gt=0)
    register_allocation_granularity: Literal["warp"]
    shared_memory_per_sm: int = Field(gt=0)  # at the maximum carveout
    max_shared_memory_per_block: int = Field(gt=0)  # without opt-in
    max_shared_memory_per_block_optin: int = Field(gt=0)
    shared_memory_allocation_unit: int = Field(gt=0)
    reserved_shared_memory_per_block: int = Field(ge=0)
    ldst_units_per_smsp: int = Field(gt=0)
    instructions: dict[Resource, InstructionSpec]
    constant_bank: ConstantBank
    icache: ICacheSpec | None = None  # None: fetch is not modeled (a user file without the table)
    l1: DataCacheSpec | None = None  # None: no L1 data cache is modeled (every load goes to L2)

    @field_validator("instructions")
    @classmethod
    def _all_classes(cls, v: dict[Resource, InstructionSpec]) -> dict[Resource, InstructionSpec]:
        missing = [c.value for c in Resource if c not in v]
        if missing:
            raise ValueError(f"missing instruction classes: {', '.join(missing)}")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> ArchSpec:
        if self.max_warps_per_sm * self.warp_size != self.max_threads_per_sm:
            raise ValueError("max_warps_per_sm × warp_size must equal max_threads_per_sm")
        return self

    @property
    def compute_capability(self) -> tuple[int, int]:
        digits = self.name.removeprefix("sm_")
        return int(digits[:-1]), int(digits[-1])

    def pipe_gap(self, cls: Resource) -> float | None:
        spec = self.instructions[cls]
        if spec.gap is not None:
            return spec.gap
        if spec.rate_per_sm is None:
            return None
        return self.warp_size * spec.results_per_lane / (spec.rate_per_sm / self.schedulers_per_sm)


# Shared memory: 32 banks × 32 bits per clock (Programming Guide, shared memory for CC 5.x+).
# L1 and shared memory are one unified data array on CC 7.0+, so L1 is given the same path width.
SHARED_BYTES_PER_CLOCK_PER_SM = 128
# A fully coalesced warp request of 4-byte words: the unit the l2/dram gaps are expressed in.
WARP_REQUEST_BYTES = 128


class DeviceSpec(Sourced):
    """A named product. Peaks not given are derived from the arch rates (see docs/arch-specs.md)."""

    key: str
    name: str
    arch: str
    aliases: tuple[str, ...] = ()
    sm_count: int = Field(gt=0)
    boost_clock_mhz: float = Field(gt=0)
    base_clock_mhz: float | None = Field(None, gt=0)
    memory_clock_mhz: float | None = Field(None, gt=0)
    memory_type: str | None = None
    dram_bandwidth_gbs: float = Field(gt=0)
    l2_size_kib: int | None = Field(None, gt=0)
    tensor_fp16_dense_tflops: float = Field(gt=0)
    #: the FP16-input tensor rate with an FP32 accumulator over the rate with an FP16 one: 0.5 on
    #: GeForce boards (their whitepapers' two "Peak FP16 Tensor TFLOPS" rows), 1 on data-center and
    #: workstation parts, whose datasheets give one rate
    tensor_fp32_accumulate_ratio: float = Field(1.0, gt=0, le=1)
    # Empirical ceilings (Starlight §4): when set they replace the derived values.
    fp64_tflops: float | None = Field(None, gt=0)
    fp32_tflops: float | None = Field(None, gt=0)
    fp16_tflops: float | None = Field(None, gt=0)
    int32_tops: float | None = Field(None, gt=0)
    l2_bandwidth_gbs: float | None = Field(None, gt=0)
    l1_bandwidth_gbs: float | None = Field(None, gt=0)
    shared_bandwidth_gbs: float | None = Field(None, gt=0)
    #: gpu__time_duration of an empty kernel: launch processing and the grid's completion, which
    #: every launch pays beside its blocks' work (measured; None where nobody has measured it)
    launch_overhead_us: float | None = Field(None, ge=0)
    user_override: bool = False  # a user file added this device or changed some of its fields

    @property
    def clock_hz(self) -> float:
        return self.boost_clock_mhz * 1e6


class ArchCatalog(BaseModel):
    """Every arch, device and source of one loaded data file (plus a user override file)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    archs: dict[str, ArchSpec]
    devices: dict[str, DeviceSpec]
    sources: dict[str, dict[str, str]]

    def arch(self, name: str) -> ArchSpec:
        key = normalize_arch(name)
        if key not in self.archs:
            raise UnknownArchError(f"unknown architecture '{name}'; known: {', '.join(self.archs)}")
        return self.archs[key]

    def device(self, name: str) -> DeviceSpec:
        wanted = _fold(name)
        for dev in self.devices.values():
            if wanted in {_fold(dev.key), _fold(dev.name), *map(_fold, dev.aliases)}:
                return dev
        raise ArchSpecError(f"unknown device '{name}'; known: {', '.join(d.name for d in self.devices.values())}")

    def default_device(self, arch: str | ArchSpec) -> DeviceSpec:
        key = arch.name if isinstance(arch, ArchSpec) else self.arch(arch).name
        for dev in self.devices.values():  # file order: the flagship is listed first
            if dev.arch == key:
                return dev
        raise ArchSpecError(f"no device is listed for {key}")

    def peak_flops(self, device: DeviceSpec, precision: Precision) -> float:
        """FLOP/s (OP/s for int32): a measured ceiling if given, else rate × 2 (FMA) × SMs × boost clock.

        The tensor roof is the pipe's highest rate, FP16 accumulate: a device's
        `tensor_fp16_dense_tflops` is its FP32-accumulate figure, which GeForce boards run at
        `tensor_fp32_accumulate_ratio` of the pipe (the emulator runs an FP16-accumulate HMMA at the
        full rate, so a lower roof would be one the model's own kernels break)."""
        override = {
            Precision.fp64: device.fp64_tflops, Precision.fp32: device.fp32_tflops,
            Precision.fp16: device.fp16_tflops, Precision.int32: device.int32_tops,
            Precision.tensor_fp16: device.tensor_fp16_dense_tflops / device.tensor_fp32_accumulate_ratio,
        }[precision]
        if override is not None:
            return override * 1e12
        cls = {Precision.fp64: Resource.fp64, Precision.fp32: Resource.fp32,
               Precision.fp16: Resource.fp16, Precision.int32: Resource.int}[precision]
        rate = self.arch(device.arch).instructions[cls].rate_per_sm
        assert rate is not None, f"{device.arch} has no {cls.value} rate"
        # An FMA (IMAD for int32) counts as two operations, as the whitepapers' peak tables count them.
        ops_per_result = 2
        return rate * ops_per_result * device.sm_count * device.clock_hz

    def bandwidth(self, device: DeviceSpec, level: MemoryLevel) -> float | None:
        """Bytes/s; shared and L1 derived from 128 B/clock/SM unless measured; L2 only if given."""
        if level is MemoryLevel.dram:
            return device.dram_bandwidth_gbs * 1e9
        if level is MemoryLevel.l2:
            return None if device.l2_bandwidth_gbs is None else device.l2_bandwidth_gbs * 1e9
        given = device.shared_bandwidth_gbs if level is MemoryLevel.shared else device.l1_bandwidth_gbs
        if given is not None:
            return given * 1e9
        return SHARED_BYTES_PER_CLOCK_PER_SM * device.sm_count * device.clock_hz

    def pipe_gap(self, device: DeviceSpec, cls: Resource) -> float | None:
        """The arch's gap, except l2/dram: one warp request's bytes at the SMSP's share of bandwidth."""
        arch = self.arch(device.arch)
        if cls not in (Resource.l2, Resource.dram):
            return arch.pipe_gap(cls)
        bw = self.bandwidth(device, MemoryLevel.l2 if cls is Resource.l2 else MemoryLevel.dram)
        if bw is None:
            return None
        bytes_per_clock_per_smsp = bw / device.clock_hz / device.sm_count / arch.schedulers_per_sm
        return WARP_REQUEST_BYTES / bytes_per_clock_per_smsp


def launch_overhead(device: DeviceSpec) -> tuple[float, DeviceSpec | None]:
    """Seconds every launch on `device` pays beside its blocks' work, and the device it was
    measured on: `device` itself, else the built-in catalogue's nearest measured device (same
    architecture first); (0, None) when none is measured."""
    if device.launch_overhead_us is not None:
        return device.launch_overhead_us * 1e-6, device
    known = [d for d in _builtin_catalog().devices.values() if d.launch_overhead_us is not None]
    if not known:
        return 0.0, None
    near = min(known, key=lambda d: (d.arch != device.arch, d.key))
    return (near.launch_overhead_us or 0.0) * 1e-6, near


def normalize_arch(name: str) -> str:
    """'sm_90a', '90', 'SM_90', 'compute_90' -> 'sm_90' (arch-specific suffixes share the limits)."""
    m = re.fullmatch(r"(?:sm_|compute_)?(\d+)[af]?", name.strip().lower())
    if not m:
        raise UnknownArchError(f"'{name}' is not an architecture like sm_90")
    return f"sm_{m.group(1)}"


def _fold(s: str) -> str:
    return re.sub(r"[\s_\-]+", " ", s.strip().lower())


# ---------------------------------------------------------------------------------------------
# Loading: the built-in file is parsed once; a user file is merged field-wise on top of it.


def load_arch_specs(user_file: Path | None = None) -> ArchCatalog:
    if user_file is None:
        return _builtin_catalog()
    user_file = Path(user_file)
    return _build(_merge(_builtin_raw(), _read(user_file), user_file), str(user_file))


@lru_cache(maxsize=1)
def _builtin_catalog() -> ArchCatalog:
    return _build(_builtin_raw(), str(BUILTIN_FILE))


def _builtin_raw() -> dict[str, Any]:
    return _read(BUILTIN_FILE)


def _read(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
        return json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
    except (OSError, tomllib.TOMLDecodeError, json.JSONDecodeError) as e:
        raise ArchSpecError(f"{path}: cannot read arch specs: {e}") from e


_TOP_LEVEL = {"schema_version", "sources", "arch", "device"}
USER_SOURCE_ID = "user-file"


def _merge(base: dict[str, Any], user: dict[str, Any], path: Path) -> dict[str, Any]:
    """Field-wise override: a user device key that exists replaces only the fields it names.

    Each field the user file sets without its own `<field>_source` is cited to the user file,
    so measured ceilings keep their provenance next to the datasheet ones.
    """
    unknown = set(user) - _TOP_LEVEL
    if unknown:
        raise ArchSpecError(f"{path}: unknown top-level table(s): {', '.join(sorted(unknown))}")
    merged = {k: dict(v) if isinstance(v, dict) else v for k, v in base.items()}
    merged["sources"][USER_SOURCE_ID] = {"title": "user override file", "url": str(path), "status": "user"}
    for table in ("sources", "arch", "device"):
        for key, fields in (user.get(table) or {}).items():
            if not isinstance(fields, dict):
                raise ArchSpecError(f"{path}: {table}.{key} must be a table")
            existing = merged[table].get(key)
            model = {"arch": ArchSpec, "device": DeviceSpec}.get(table)
            if existing:
                body = _deep_merge(existing, fields)
            else:
                body = {"source": [USER_SOURCE_ID], **fields} if model is not None else dict(fields)
            if existing and model is not None:
                for name in fields:
                    cited = name.endswith("_source") or name == "source" or f"{name}_source" in fields
                    if not cited and name in model.model_fields:
                        body[f"{name}_source"] = [USER_SOURCE_ID]
            if table == "device":
                body["user_override"] = True
            merged[table][key] = body
    return merged


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _build(raw: dict[str, Any], origin: str) -> ArchCatalog:
    try:
        archs = {key: _validate(ArchSpec, "arch", key, {**body, "name": key})
                 for key, body in (raw.get("arch") or {}).items()}
        devices = {key: _validate(DeviceSpec, "device", key, {**body, "key": key})
                   for key, body in (raw.get("device") or {}).items()}
    except _Located as e:
        raise ArchSpecError(f"{origin}: {e}") from e.__cause__
    catalog = ArchCatalog(archs=archs, devices=devices, sources=raw.get("sources") or {})
    _check_references(catalog, origin)
    return catalog


class _Located(Exception):
    """A validation error already rewritten with TOML paths (table.key.field)."""


def _validate(model: type[BaseModel], table: str, key: str, body: dict[str, Any]) -> Any:
    try:
        return model.model_validate(body)
    except ValidationError as e:
        raise _Located("; ".join(
            f"{'.'.join([table, key, *map(str, err['loc'])])}: {err['msg']}" for err in e.errors()
        )) from e


def _check_references(catalog: ArchCatalog, origin: str) -> None:
    for key, dev in catalog.devices.items():
        if dev.arch not in catalog.archs:
            raise ArchSpecError(f"{origin}: device.{key}.arch: unknown architecture '{dev.arch}'")
    for where, group in _sourced_groups(catalog):
        for ids in (group.source, *group.field_sources.values()):
            for sid in ids:
                if sid not in catalog.sources:
                    raise ArchSpecError(f"{origin}: {where}: cites unknown source '{sid}'")


def _sourced_groups(catalog: ArchCatalog):
    for key, arch in catalog.archs.items():
        yield f"arch.{key}", arch
        for cls, ins in arch.instructions.items():
            yield f"arch.{key}.instructions.{cls.value}", ins
        if arch.icache is not None:
            yield f"arch.{key}.icache", arch.icache
        if arch.l1 is not None:
            yield f"arch.{key}.l1", arch.l1
    for key, dev in catalog.devices.items():
        yield f"device.{key}", dev
