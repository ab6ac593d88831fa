"""Hierarchical roofline (Starlight §3–4.2) and roofline scaling trajectories.

Ceilings: one compute roof per precision (FP64, FP32, FP16, INT32, tensor FP16) and one
bandwidth slope per memory level (L1, shared, L2, DRAM), from the arch catalogue's specs —
or, when the user's arch file gives measured values, from those (Starlight's "empirical
roofline": `DeviceSpec.fp32_tflops`, `l2_bandwidth_gbs`, …, or a Starlight-style JSON read
by `load_empirical`).

Each kernel gives one point per memory level it moves bytes at: x = operational intensity
(ops per byte of that level's traffic), y = achieved ops/s of its precision (Starlight Eq. 1:
attainable = min(peak, bandwidth × OI)). The precision (`dominant_precision`) is the
floating-point one (FP64, FP32, FP16, tensor) with the most operations; a kernel with no
floating-point work is placed by its integer operations against the INT32 roof (`isa.int_ops`
says what counts: index arithmetic included, so a copy that computes its addresses sits there,
far left); a kernel that counts no operation at all is memory-only (`MEMORY_ONLY`): its points
have intensity 0, which a log axis cannot place, and carry its achieved bytes/s against each
level's bandwidth, which the chart draws as bars beside the plot instead.

Bound classification (documented thresholds):
  * `latency` when the kernel reaches less than `LATENCY_FRACTION` (20 %) of the attainable
    performance at its most restrictive level — far below both roofs, so neither bandwidth nor
    compute limits it (dependency chains, too few warps);
  * otherwise `memory` if the binding roof at that level is the bandwidth slope (OI left of the
    ridge point) and `compute` if it is the flat peak.
A memory-only kernel is classified by its best bandwidth utilisation alone.

The scaling trajectory (roofline-scaling-trajectories §3) is the same kernel's DRAM point at
increasing concurrency (SM count or launch size), as the emulator's what-if models it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ..profile import KernelProfile
from .arch import ArchCatalog, DeviceSpec, MemoryLevel, Precision


#: Below this fraction of the attainable roof a kernel is latency-bound (see module doc).
LATENCY_FRACTION = 0.2

#: profile.flops keys -> catalogue precisions
PROFILE_PRECISIONS: dict[str, Precision] = {
    "fp64": Precision.fp64, "fp32": Precision.fp32, "fp16": Precision.fp16,
    "int": Precision.int32, "tensor": Precision.tensor_fp16,
}
#: The precision of a kernel that counts no operation: only its bytes place it (module doc).
MEMORY_ONLY = "none"
#: how the ceilings (and the chart, reports/chart.py) name each precision and memory level
LABELS = {Precision.fp64: "FP64", Precision.fp32: "FP32", Precision.fp16: "FP16", Precision.int32: "INT32",
          Precision.tensor_fp16: "Tensor FP16", MemoryLevel.l1: "L1", MemoryLevel.shared: "Shared",
          MemoryLevel.l2: "L2", MemoryLevel.dram: "DRAM"}


class Ceiling(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: Literal["compute", "memory"]
    name: str  # a Precision or MemoryLevel value: "fp32", "dram"
    label: str  # "FP32", "DRAM"
    value: float  # ops/s for compute, bytes/s for memory
    empirical: bool = False


class RooflineModel(BaseModel):
    model_config = ConfigDict(frozen=True)

    device: str
    compute: tuple[Ceiling, ...]
    memory: tuple[Ceiling, ...]

    def peak(self, precision: str) -> float | None:
        return next((c.value for c in self.compute if c.name == precision), None)

    def bandwidth(self, level: str) -> float | None:
        return next((c.value for c in self.memory if c.name == level), None)

    def ridge(self, precision: str, level: str) -> float | None:
        """Operational intensity where the slope of `level` meets the roof of `precision` (ops/byte)."""
        p, b = self.peak(precision), self.bandwidth(level)
        return p / b if p and b else None

    def attainable(self, precision: str, level: str, intensity: float) -> float:
        """Starlight Eq. 1: min(peak, bandwidth × OI)."""
        return min(self.peak(precision) or math.inf, (self.bandwidth(level) or math.inf) * intensity)


class KernelPoint(BaseModel):
    model_config = ConfigDict(frozen=True)

    level: str
    precision: str  # a Precision value, or MEMORY_ONLY
    intensity: float  # ops / byte at this level (0 for a memory-only kernel)
    performance: float  # achieved ops/s
    attainable: float  # Starlight Eq. 1 at this intensity
    bandwidth: float = 0.0  # achieved bytes/s at this level
    peak_bandwidth: float | None = None  # the level's slope (bytes/s); None when the specs give none


class TrajectoryPoint(BaseModel):
    model_config = ConfigDict(frozen=True)

    label: str  # "8 SMs", "block 256"
    concurrency: float
    intensity: float
    performance: float


class KernelRoofline(BaseModel):
    model_config = ConfigDict(frozen=True)

    kernel: str
    name: str
    provenance: str  # "modeled" / "measured"
    precision: str
    points: tuple[KernelPoint, ...]
    bound: Literal["memory", "compute", "latency"] | None
    fraction: float | None  # achieved / attainable at the binding level
    binding_level: str | None
    trajectory: tuple[TrajectoryPoint, ...] = ()


# ---------------------------------------------------------------------------------------------
# Ceilings
# ---------------------------------------------------------------------------------------------


def roofline_model(catalog: ArchCatalog, device: DeviceSpec, empirical: Mapping[str, Mapping[str, float]] | None = None
                   ) -> RooflineModel:
    """Ceilings from the device's specs; `empirical` ({"compute": {"fp32": GFLOP/s}, "memory": {"dram": GB/s}}) wins."""
    over_c = {k.lower(): v * 1e9 for k, v in (empirical or {}).get("compute", {}).items()}
    over_m = {k.lower(): v * 1e9 for k, v in (empirical or {}).get("memory", {}).items()}
    measured_c = {Precision.fp64: device.fp64_tflops, Precision.fp32: device.fp32_tflops, Precision.fp16: device.fp16_tflops,
                  Precision.int32: device.int32_tops}
    measured_m = {MemoryLevel.l1: device.l1_bandwidth_gbs, MemoryLevel.shared: device.shared_bandwidth_gbs,
                  MemoryLevel.l2: device.l2_bandwidth_gbs}
    compute = []
    for p in Precision:
        try:
            v = over_c.get(p.value) or catalog.peak_flops(device, p)
        except (AssertionError, KeyError):
            continue
        emp = p.value in over_c or (measured_c.get(p) is not None and device.user_override)
        compute.append(Ceiling(kind="compute", name=p.value, label=LABELS[p], value=v, empirical=emp))
    memory = []
    for lv in MemoryLevel:
        v = over_m.get(lv.value) or catalog.bandwidth(device, lv)
        if v:
            emp = lv.value in over_m or (measured_m.get(lv) is not None and device.user_override)
            memory.append(Ceiling(kind="memory", name=lv.value, label=LABELS[lv], value=v, empirical=emp))
    return RooflineModel(device=device.name, compute=tuple(compute), memory=tuple(memory))


def load_empirical(path: Path) -> dict[str, dict[str, float]]:
    """A Starlight-style empirical ceilings file: {"compute": {"fp32": GFLOP/s, …}, "memory": {"dram": GB/s, …}}."""
    data = json.loads(Path(path).read_text())
    return {k: {n: float(v) for n, v in data.get(k, {}).items()} for k in ("compute", "memory")}


# ---------------------------------------------------------------------------------------------
# Kernel points and bound
# ---------------------------------------------------------------------------------------------


def dominant_precision(flops: Mapping[str, float]) -> str:
    """Floating-point first: the FP precision with the most operations; INT32 only for a kernel
    with no FP work (every kernel does integer index arithmetic, which must not hide its FP
    point); MEMORY_ONLY when it counts no operation."""
    counted = [(v, k) for k, v in flops.items() if k in PROFILE_PRECISIONS and v > 0]
    best = max((c for c in counted if c[1] != "int"), default=None) or max(counted, default=None)
    return PROFILE_PRECISIONS[best[1]].value if best else MEMORY_ONLY


def _point_values(flops: Mapping[str, float], bytes_: Mapping[str, float], precision: str
                  ) -> tuple[float, dict[str, float]]:
    """(ops, intensity per level that moves bytes); a memory-only kernel's intensities are 0."""
    key = next((k for k, p in PROFILE_PRECISIONS.items() if p.value == precision), None)
    ops = flops.get(key, 0.0) if key else 0.0
    return ops, {lv: ops / b for lv, b in bytes_.items() if b > 0}


def kernel_roofline(profile: KernelProfile, model: RooflineModel,
                    trajectory: Sequence[TrajectoryPoint] = ()) -> KernelRoofline:
    precision = dominant_precision(profile.flops)
    dur = profile.duration_s
    ops, intensities = _point_values(profile.flops, profile.bytes, precision)
    perf = ops / dur if dur > 0 else 0.0
    points = tuple(KernelPoint(level=lv, precision=precision, intensity=oi, performance=perf,
                               attainable=model.attainable(precision, lv, oi) if ops > 0 else 0.0,
                               bandwidth=profile.bytes[lv] / dur if dur > 0 else 0.0,
                               peak_bandwidth=model.bandwidth(lv))
                   for lv, oi in intensities.items())  # a level without a known slope still gets its point
    bound, fraction, level = classify(profile, model, points)
    return KernelRoofline(kernel=profile.kernel, name=profile.name, provenance=profile.provenance.kind,
                          precision=precision, points=points, bound=bound, fraction=fraction, binding_level=level,
                          trajectory=tuple(trajectory))


def classify(profile: KernelProfile, model: RooflineModel, points: Sequence[KernelPoint]
             ) -> tuple[Literal["memory", "compute", "latency"] | None, float | None, str | None]:
    dur = profile.duration_s
    if dur <= 0 or not points:
        return None, None, None
    if points[0].precision == MEMORY_ONLY:  # no operations: bandwidth utilisation alone
        util = [(p.bandwidth / p.peak_bandwidth, p.level) for p in points if p.peak_bandwidth]
        if not util:
            return None, None, None
        frac, lv = max(util)
        return ("memory" if frac >= LATENCY_FRACTION else "latency"), frac, lv
    binding = min(points, key=lambda p: p.attainable)
    frac = binding.performance / binding.attainable if binding.attainable > 0 else 0.0
    if frac < LATENCY_FRACTION:
        return "latency", frac, binding.level
    peak = model.peak(binding.precision) or math.inf
    return ("compute" if binding.attainable >= peak else "memory"), frac, binding.level


def trajectory_points(samples: Iterable[tuple[str, float, Mapping[str, float], Mapping[str, float], float]],
                      level: str = "dram") -> tuple[TrajectoryPoint, ...]:
    """(label, concurrency, flops, bytes, duration_s) per what-if configuration -> DRAM-level points."""
    out = []
    for label, conc, flops, bytes_, dur in samples:
        prec = dominant_precision(flops)
        ops, oi = _point_values(flops, bytes_, prec)
        if ops > 0 and level in oi and dur > 0:
            out.append(TrajectoryPoint(label=label, concurrency=conc, intensity=oi[level], performance=ops / dur))
    return tuple(sorted(out, key=lambda t: t.concurrency))
