"""Import an Nsight Compute report (.ncu-rep) into the profile model, through NVIDIA's `ncu_report` module.

The module needs neither a GPU nor ncu (measurement.md, verified on three real reports).
Traps it documents, all handled here:
- instanced metrics of one launch have different lengths (201 `inst_executed` PCs against 120
  sampled PCs), so per-PC data is JOINED BY PC, never by index;
- PCs are absolute: the offset is pc − the largest `launch__function_pcs` start ≤ pc;
- per PC, `smsp__pcsamp_sample_count` = the sum of all `..._stalled_<reason>` values (including
  `selected`); the `_not_issued` variants are a subset and are not added.
"""

from __future__ import annotations

import argparse
import bisect
import json
import sys
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator

from ..frontend.kernel_names import base_name, mangled_base_name
from ..process import CancelToken, ToolTimeout, run_tool
from ..profile import (Assumption, KernelProfile, LaunchConfig, PCSample, Profile, Provenance, StallReason,
                       aggregate_lines)
from .errors import ReportError, StaleReportError
from .source_check import SourceEvidence, check_source, same_file, text_sha256
from .stalls import PCSAMP_PREFIX, add_samples, is_not_issued
from .target import last_lines

#: First bytes of every .ncu-rep seen (three reports, ncu 2020–2025).
REPORT_MAGIC = b"NVR\x00"

NO_LINEINFO = "report has no line information (-lineinfo missing)"

# --- small metric readers -------------------------------------------------------------------------


def _metric(act: Any, name: str) -> Any | None:
    return act.metric_by_name(name)


def _scalar(act: Any, name: str) -> float | None:
    m = _metric(act, name)
    if m is None:
        return None
    try:
        v = m.value()
    except Exception:  # a metric the report lists but cannot evaluate
        return None
    return float(v) if isinstance(v, (int, float)) else None


def _string(act: Any, name: str) -> str | None:
    m = _metric(act, name)
    if m is None:
        return None
    try:
        return m.as_string()
    except Exception:
        v = m.value()
        return None if v is None else str(v)


def _first(act: Any, *names: str) -> tuple[str, float] | None:
    for n in names:
        v = _scalar(act, n)
        if v is not None:
            return n, v
    return None


def per_pc(act: Any, name: str) -> dict[int, int]:
    """An instanced per-PC metric as {absolute pc: value}, keyed by its correlation ids."""
    m = _metric(act, name)
    if m is None or not m.num_instances():
        return {}
    ids = m.correlation_ids()
    return {ids.as_uint64(i): m.as_uint64(i) for i in range(m.num_instances())}


_TIME_UNITS = {"ns": 1e-9, "nsecond": 1e-9, "us": 1e-6, "usecond": 1e-6, "ms": 1e-3, "msecond": 1e-3,
               "s": 1.0, "second": 1.0}


def _seconds(act: Any, name: str) -> float | None:
    m = _metric(act, name)
    if m is None:
        return None
    return float(m.value()) * _TIME_UNITS.get((m.unit() or "ns").strip().lower(), 1e-9)


# --- functions and PCs ---------------------------------------------------------------------------


@dataclass(frozen=True)
class FunctionMap:
    """The functions of one launch by start address (`launch__function_pcs`), for pc -> (function, offset)."""

    starts: tuple[int, ...]
    names: tuple[str, ...]

    def locate(self, pc: int) -> tuple[str, int]:
        i = bisect.bisect_right(self.starts, pc) - 1
        if i < 0:  # a PC below every start cannot happen in a sound report; keep it, relative to the first
            i = 0
        return self.names[i], pc - self.starts[i]


def function_map(act: Any, kernel: str, pcs: Iterable[int]) -> tuple[FunctionMap, tuple[str, ...]]:
    """Start addresses and names; with several functions (non-inlined device functions), only the
    addresses are in the report, so the others are labelled `<kernel>#fn<k>` in address order."""
    m = _metric(act, "launch__function_pcs")
    starts = sorted({m.as_uint64(i) for i in range(m.num_instances())}) if m is not None else []
    notes: list[str] = []
    if not starts:
        pcs = list(pcs)
        starts = [min(pcs)] if pcs else [0]
        notes.append("launch__function_pcs missing: PC offsets are relative to the lowest recorded PC")
    if len(starts) == 1:
        return FunctionMap((starts[0],), (kernel,)), tuple(notes)
    notes.append(f"{len(starts)} functions in this launch (non-inlined device functions); the report does not "
                 f"name them, so their PCs are labelled {kernel}#fn0..#fn{len(starts) - 1} in address order; "
                 "per-line samples come from the report's own line table and are unaffected")
    return FunctionMap(tuple(starts), tuple(f"{kernel}#fn{k}" for k in range(len(starts)))), tuple(notes)


def stall_metric_names(act: Any) -> list[str]:
    return sorted(n for n in act.metric_names() if n.startswith(PCSAMP_PREFIX) and not is_not_issued(n))


def raw_pc_metrics(act: Any) -> tuple[dict[int, int], dict[str, dict[int, int]]]:
    """`inst_executed` and each stall-reason metric, per absolute PC (each read once)."""
    return per_pc(act, "inst_executed"), {name: per_pc(act, name) for name in stall_metric_names(act)}


def pc_samples(executed: dict[int, int], stalls: dict[str, dict[int, int]], fmap: FunctionMap) -> dict[int, PCSample]:
    """Per absolute PC: the samples by reason JOINED BY PC with `inst_executed` (lengths differ)."""
    by_pc: dict[int, dict[StallReason, float]] = {}
    for name, values in stalls.items():
        for pc, n in values.items():
            bucket = by_pc.setdefault(pc, {})
            if n:
                add_samples(bucket, name, float(n))
    out: dict[int, PCSample] = {}
    for pc in sorted(set(by_pc) | set(executed)):
        function, offset = fmap.locate(pc)
        out[pc] = PCSample(function=function, pc=offset, samples=by_pc.get(pc, {}),
                           executed=float(executed[pc]) if pc in executed else None)
    return out


# --- kernel-level quantities -----------------------------------------------------------------------


def launch_config(act: Any) -> LaunchConfig:
    def dims(kind: str) -> tuple[int, int, int]:
        xyz = [_scalar(act, f"launch__{kind}_dim_{d}") for d in "xyz"]
        if all(v is not None for v in xyz):
            return int(xyz[0]), int(xyz[1]), int(xyz[2])  # type: ignore[arg-type]
        return int(_scalar(act, f"launch__{kind}_size") or 0), 1, 1

    return LaunchConfig(grid=dims("grid"), block=dims("block"),
                        dynamic_smem=int(_scalar(act, "launch__shared_mem_per_block_dynamic") or 0))


def occupancy_limiter(act: Any) -> str | None:
    """The resource allowing the fewest blocks per SM (`launch__occupancy_limit_*`); ties are all named."""
    limits = {r: _scalar(act, f"launch__occupancy_limit_{r}") for r in ("registers", "shared_mem", "warps", "blocks")}
    known = {r: v for r, v in limits.items() if v is not None}
    if not known:
        return None
    low = min(known.values())
    return ", ".join(r for r, v in known.items() if v == low)


#: FLOPs per thread instruction: an FMA is two operations (offload thesis §4.3.1; ncu's roofline sections).
_FLOP_OPS = {"fp64": (("dadd", 1), ("dmul", 1), ("dfma", 2)),
             "fp32": (("fadd", 1), ("fmul", 1), ("ffma", 2)),
             "fp16": (("hadd", 1), ("hmul", 1), ("hfma", 2))}

_FLOP_PEAK = {"fp64": "dfma", "fp32": "ffma", "fp16": "hfma"}


def thread_inst(act: Any, op: str, duration_s: float) -> tuple[float, str] | None:
    """Predicated-on thread instructions of one opcode for the whole launch, and how it was obtained.

    Reports captured with the roofline sections hold only the rate `...sum.per_cycle_elapsed`;
    rate × `smsp__cycles_elapsed.avg` (or × cycles/s × duration) gives the count. Checked here
    against `sass__thread_inst_executed_true_per_opcode` on the GTX 1660 and A100 reports: exact.
    """
    base = f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum"
    total = _scalar(act, base)
    if total is not None:
        return total, base
    rate = _scalar(act, base + ".per_cycle_elapsed")
    if rate is None:
        return None
    cycles = _scalar(act, "smsp__cycles_elapsed.avg")
    if cycles is not None:
        return rate * cycles, f"{base}.per_cycle_elapsed × smsp__cycles_elapsed.avg"
    hz = _scalar(act, "smsp__cycles_elapsed.avg.per_second")
    if hz is not None and duration_s > 0:
        return rate * hz * duration_s, f"{base}.per_cycle_elapsed × smsp__cycles_elapsed.avg.per_second × duration"
    return None


def flops(act: Any, duration_s: float) -> tuple[dict[str, float], list[str]]:
    out: dict[str, float] = {}
    how: list[str] = []
    for precision, ops in _FLOP_OPS.items():
        parts = [(thread_inst(act, op, duration_s), weight) for op, weight in ops]
        if all(p is None for p, _ in parts):
            continue
        out[precision] = sum(p[0] * w for p, w in parts if p is not None)
        derived = {p[1] for p, _ in parts if p is not None and "per_cycle" in p[1]}
        if derived:
            how.append(f"flops.{precision} from per-cycle rates ({'; '.join(sorted(derived))})")
    return out, how


#: the sector hit rates of ncu's Memory Workload Analysis section, by the profile's level names
_HIT_RATES = {"l1": "l1tex__t_sector_hit_rate.pct", "l2": "lts__t_sector_hit_rate.pct"}
#: the L2 sectors the SMs' loads, stores and atomics send (ncu's "srcunit_tex"), and those of them that miss
_L2_DATA = ("lts__t_sectors_srcunit_tex_op_read.sum", "lts__t_sectors_srcunit_tex_op_write.sum",
            "lts__t_sectors_srcunit_tex_op_atom.sum", "lts__t_sectors_srcunit_tex_op_red.sum")
_L2_DATA_MISS = "lts__t_sectors_srcunit_tex_lookup_miss.sum"


def hit_rates(act: Any) -> dict[str, float]:
    """Sector hit rate per cache level (0..1), where the report holds the section (a report captured
    without it has none, and the comparison says so).

    L2's is the kernel's own data accesses' (the SMs' sectors and their misses) where the report
    has those counters: ncu's lts__t_sector_hit_rate also counts L2's other clients, which in the
    H100 reports send ~1.4 MB per launch that nearly all hit (a 64-thread kernel reads 99 %), so
    the whole-L2 figure says little of the kernel's loads; it is the fallback."""
    out = {}
    for level, metric in _HIT_RATES.items():
        if (pct := _scalar(act, metric)) is not None:
            # ncu's ratio can pass 100 % by a little (seen: 100.6 % on a 64-thread kernel); a rate is at most 1
            out[level] = min(1.0, max(0.0, pct / 100.0))
    parts = [_scalar(act, m) for m in _L2_DATA]
    miss = _scalar(act, _L2_DATA_MISS)
    if miss is not None and all(p is not None for p in parts) and sum(parts) > 0:
        out["l2"] = min(1.0, max(0.0, 1.0 - miss / sum(parts)))
    return out


def bytes_moved(act: Any, duration_s: float) -> tuple[dict[str, float], list[str]]:
    """Bytes per memory level; the first metric present wins, in the order ncu's roofline sections use."""
    out: dict[str, float] = {}
    how: list[str] = []
    dram = _scalar(act, "dram__bytes.sum")
    if dram is None:
        rd, wr = _scalar(act, "dram__bytes_read.sum"), _scalar(act, "dram__bytes_write.sum")
        if rd is not None and wr is not None:
            dram = rd + wr
        elif (rate := _scalar(act, "dram__bytes.sum.per_second")) is not None:
            dram = rate * duration_s
            how.append("bytes.dram = dram__bytes.sum.per_second × duration")
    if dram is not None:
        out["dram"] = dram
    l2 = _scalar(act, "lts__t_bytes.sum")
    if l2 is None and (sectors := _scalar(act, "lts__t_sectors.sum")) is not None:
        l2 = sectors * 32  # an L2 sector is 32 bytes (Nsight Compute Kernel Profiling Guide, memory model)
    if l2 is not None:
        out["l2"] = l2
    l1 = _scalar(act, "l1tex__t_bytes.sum")
    if l1 is None:
        wb = _first(act, "l1tex__lsu_writeback_active_mem_lgds.sum", "l1tex__lsu_writeback_active_mem_lg.sum")
        if wb is not None:
            # ncu's hierarchical roofline: L1 bytes = writeback-active cycles × 128 B/cycle (measurement.md)
            l1 = wb[1] * 128
            how.append(f"bytes.l1 = {wb[0]} × 128 B (ncu's hierarchical-roofline definition)")
    if l1 is not None:
        out["l1"] = l1
    shared = _scalar(act, "smsp__sass_data_bytes_mem_shared.sum")
    if shared is None and (wf := _scalar(act, "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum")) is not None:
        # A shared-memory wavefront occupies the 128 B/cycle data path for one cycle: an upper bound
        # on the bytes requested (a one-lane access is one wavefront too).
        shared = wf * 128
        how.append("bytes.shared = l1tex__data_pipe_lsu_wavefronts_mem_shared.sum × 128 B (upper bound)")
    if shared is not None:
        out["shared"] = shared
    return out, how


_UTILIZATION = {
    "sm": ("sm__throughput.avg.pct_of_peak_sustained_elapsed",),
    "memory": ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",),
    "dram": ("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
    "l1": ("l1tex__throughput.avg.pct_of_peak_sustained_active",),
    "l2": ("lts__throughput.avg.pct_of_peak_sustained_elapsed",),
}


def utilization(act: Any, flop: dict[str, float], duration_s: float) -> dict[str, float]:
    """Fractions of peak (0..1): ncu's SOL percentages, and achieved/peak FLOP rate per precision."""
    out = {key: hit[1] / 100.0 for key, names in _UTILIZATION.items() if (hit := _first(act, *names))}
    hz = _scalar(act, "sm__cycles_elapsed.avg.per_second")
    for precision, n in flop.items():
        per_cycle = _scalar(act, f"sm__sass_thread_inst_executed_op_{_FLOP_PEAK[precision]}_pred_on.sum.peak_sustained")
        if per_cycle and hz and duration_s > 0:
            out[precision] = (n / duration_s) / (per_cycle * 2 * hz)  # peak = FMA rate × 2 ops (measurement.md)
    return out


def device_and_arch(act: Any) -> tuple[str, str]:
    device = _string(act, "device__attribute_display_name") or "unknown device"
    major = _scalar(act, "device__attribute_compute_capability_major")
    minor = _scalar(act, "device__attribute_compute_capability_minor")
    arch = f"sm_{int(major)}{int(minor)}" if major is not None and minor is not None else "unknown"
    return device, arch


# --- the report ------------------------------------------------------------------------------------


def _ncu_report_module() -> Any:
    try:
        import ncu_report  # NVIDIA's reader (PyPI `ncu-report`), absolute import: not this module
    except ImportError as e:
        raise ReportError("Cannot read .ncu-rep files: the `ncu_report` module is not installed",
                          hint="pip install ncu-report") from e
    return ncu_report


def open_report(path: Path) -> Any:
    _check_file(path)
    mod = _ncu_report_module()
    try:
        ctx = mod.load_report(str(path))
        n_ranges = ctx.num_ranges() if ctx is not None else None
    except Exception as e:  # the SWIG layer raises plain RuntimeErrors
        raise ReportError(f"Nsight Compute's reader could not open {path}: {e}",
                          hint="The file may be truncated or from a newer ncu; re-export it or update ncu-report") from e
    if not n_ranges:
        raise ReportError(f"{path} has an Nsight Compute header but no readable results: it is corrupt or truncated",
                          hint="Copy the report again (binary mode) or re-run the profile")
    return ctx


def actions(ctx: Any, path: Path) -> Iterator[Any]:
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            act = rng.action_by_idx(a)
            if act is None or not len(act.metric_names()):
                raise ReportError(f"Result {a} of range {r} in {path} is empty: the report is corrupt or truncated",
                                  hint="Copy the report again (binary mode) or re-run the profile")
            yield act


def _name(mod: Any, act: Any, base: str) -> str | None:
    kind = getattr(mod.IAction, base, None)
    return act.name(kind) if kind is not None else None


def _line_of(act: Any, pcs: dict[int, PCSample], source: Path | None) -> dict[tuple[str, int], tuple[str, int]]:
    """(function, offset) -> (file, line) from the report's own line table (the binary that ran).
    A file with the source's base name is reported under the local path, the one the editor has open."""
    out = {}
    for pc, sample in pcs.items():
        si = act.source_info(pc)
        if si is None:
            continue
        file = si.file_name()
        out[(sample.function, sample.pc)] = (str(source) if same_file(file, source) else file, int(si.line()))
    return out


def _report_lines(act: Any, pcs: Iterable[int]) -> set[tuple[str, int]]:
    return {(si.file_name(), int(si.line())) for pc in pcs if (si := act.source_info(pc)) is not None}


def _embedded_sources(act: Any) -> dict[str, str]:
    files = act.source_files()
    return {str(k): str(v) for k, v in files.items()} if files is not None and len(files) else {}


def kernel_profile(mod: Any, act: Any, *, source: Path | None, time: datetime,
                   time_note: Assumption) -> tuple[KernelProfile, SourceEvidence, bool]:
    """One launch as a KernelProfile; also the source evidence and whether it had line info."""
    demangled = _name(mod, act, "NameBase_DEMANGLED") or act.name()
    mangled = _name(mod, act, "NameBase_MANGLED") or demangled
    function = _name(mod, act, "NameBase_FUNCTION") or base_name(demangled)
    duration_s = _seconds(act, "gpu__time_duration.sum") or 0.0

    executed, stalls = raw_pc_metrics(act)
    pcs_all = set(executed).union(*stalls.values())
    fmap, fnotes = function_map(act, mangled, pcs_all)
    by_pc = pc_samples(executed, stalls, fmap)
    line_of = _line_of(act, by_pc, source)
    lines = aggregate_lines(tuple(by_pc.values()), line_of)
    has_lines = bool(line_of)

    flop, flop_how = flops(act, duration_s)
    moved, bytes_how = bytes_moved(act, duration_s)
    occ = _scalar(act, "sm__warps_active.avg.pct_of_peak_sustained_active")
    notes = [*fnotes, *flop_how, *bytes_how]
    if occ is None:
        notes.append("achieved occupancy (sm__warps_active) not in the report; occupancy is 0")
    if not has_lines:
        notes.append(NO_LINEINFO)
    device, arch = device_and_arch(act)
    prov = Provenance(kind="measured", device=device, arch=arch, tool="ncu", tool_version="unrecorded", time=time,
                      assumptions=(time_note, *(Assumption(name="note", value=n, source="measured") for n in notes)))
    kp = KernelProfile(
        kernel=mangled, name=demangled, launch=launch_config(act),
        registers_per_thread=int(_scalar(act, "launch__registers_per_thread") or 0),
        occupancy=(occ or 0.0) / 100.0, occupancy_limiter=occupancy_limiter(act),
        duration_s=duration_s, pcs=tuple(by_pc[pc] for pc in sorted(by_pc)), lines=lines,
        utilization=utilization(act, flop, duration_s), flops=flop, bytes=moved, hit_rates=hit_rates(act),
        provenance=prov)
    evidence = SourceEvidence(embedded=_embedded_sources(act), lines=frozenset(_report_lines(act, pcs_all)),
                              kernel_names=(function,))
    return kp, evidence, has_lines


#: seconds NVIDIA's reader may take on one report before it is killed
READ_TIMEOUT_S = 120.0


def load_ncu_report(path: Path, *, source: Path | None = None, source_text: str | None = None,
                    cancel: CancelToken | None = None, timeout: float = READ_TIMEOUT_S) -> Profile:
    """Read every profiled launch of a .ncu-rep into a measured Profile.

    With `source`/`source_text`, refuse (StaleReportError) a report captured from another version
    of that file, and report its lines under the local path. Raises ReportError, never a traceback.

    NVIDIA's reader is native code behind SWIG, and it runs in a child process: on an H100 with
    ncu 2025.3.1 it segfaulted in `IMetric.unit()` inside a long-lived process (a test run) on a
    report that a fresh process read without fault, and a crash in the language server's own
    process would end the server. A crash or a hang of the reader is a ReportError here.
    """
    path = Path(path)
    _check_file(path)
    if source is not None and source_text is None:
        source_text = _read_source(Path(source))
    st = path.stat()
    key = (str(path.resolve()), st.st_mtime_ns, st.st_size, str(Path(source).resolve()) if source is not None else None,
           source_text)
    if (known := _READ.get(key)) is not None:
        return known  # the CLI reads a report's GPU, then analyses with it: one child process, not two
    profile = _read_in_child(path, source, source_text, cancel, timeout)
    _READ[key] = profile
    while len(_READ) > 8:
        del _READ[next(iter(_READ))]
    return profile


#: reports read in this process, by file identity and the source they were checked against
_READ: dict[tuple, Profile] = {}


def _read_in_child(path: Path, source: Path | None, source_text: str | None, cancel: CancelToken | None,
                   timeout: float) -> Profile:
    with tempfile.TemporaryDirectory(prefix="kernelscope-ncu-report-") as tmp:
        argv = [sys.executable, "-m", __name__, str(path)]
        if source is not None:
            argv += ["--source", str(source)]
        if source_text is not None:
            (text_file := Path(tmp) / "source.txt").write_text(source_text, encoding="utf-8")
            argv += ["--source-text", str(text_file)]
        try:
            res = run_tool(argv, timeout=timeout, cancel=cancel)
        except ToolTimeout:
            raise ReportError(f"Nsight Compute's reader did not finish reading {path} in {timeout:.0f} s and was "
                              "stopped", hint="The report may be very large or damaged; re-export it with fewer "
                              "sections or launches") from None
    if res.returncode == 0:
        return Profile.model_validate_json(res.stdout)
    try:
        err = json.loads(res.stdout)
    except ValueError:
        err = None
    if isinstance(err, dict) and err.get("kind") in _ERRORS:
        raise _ERRORS[err["kind"]](err["message"], hint=err.get("hint", ""))
    how = f"crashed (signal {-res.returncode})" if res.returncode < 0 else f"failed (exit {res.returncode})"
    raise ReportError(f"Nsight Compute's reader {how} reading {path}",
                      hint="Open the report in Nsight Compute to check it, or update ncu-report (pip install -U "
                           "ncu-report)", output=last_lines(res.stderr, 20))


_ERRORS = {"ReportError": ReportError, "StaleReportError": StaleReportError}


def _check_file(path: Path) -> None:
    if not path.exists():
        raise ReportError(f"No report at {path}", hint="Check the path; ncu writes <name>.ncu-rep for `-o <name>`")
    if not path.is_file():
        raise ReportError(f"{path} is not a file", hint="Pass the .ncu-rep file itself")
    with path.open("rb") as f:
        head = f.read(len(REPORT_MAGIC))
    if head != REPORT_MAGIC:
        raise ReportError(f"{path} is not an Nsight Compute report (it does not start with the .ncu-rep header)",
                          hint="Open a file written by `ncu -o`; CSV or text exports cannot be imported")


def _read_source(source: Path) -> str:
    try:
        return source.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise ReportError(f"Cannot read the source {source} to check the report against: {e.strerror}") from e


def read_report(path: Path, *, source: Path | None = None, source_text: str | None = None) -> Profile:
    """`load_ncu_report`'s work, in this process: what its child process runs."""
    path = Path(path)
    mod = _ncu_report_module()
    ctx = open_report(path)
    if source is not None and source_text is None:
        source_text = _read_source(Path(source))
    # ncu_report does not expose the capture time or the ncu version; the file time is the best bound.
    time = datetime.fromtimestamp(path.stat().st_mtime, tz=timezone.utc)
    time_note = Assumption(name="time", value=time.isoformat(), source="default",
                           detail="the report file's modification time: ncu_report does not expose the capture time")
    kernels, evidence, any_lines = [], [], False
    for act in actions(ctx, path):
        kp, ev, has_lines = kernel_profile(mod, act, source=Path(source) if source else None, time=time,
                                           time_note=time_note)
        kernels.append(kp)
        evidence.append(ev)
        any_lines |= has_lines
    notes: list[str] = []
    sha = None
    if source_text is not None:
        merged = SourceEvidence(embedded={k: v for ev in evidence for k, v in ev.embedded.items()},
                                lines=frozenset().union(*(ev.lines for ev in evidence)),
                                kernel_names=tuple(n for ev in evidence for n in ev.kernel_names))
        notes.extend(check_source(merged, Path(source) if source else None, source_text))
        sha = text_sha256(source_text)
    if not any_lines:
        notes.append(NO_LINEINFO)
    devices = sorted({k.provenance.device for k in kernels})
    archs = sorted({k.provenance.arch for k in kernels})
    prov = Provenance(kind="measured", device=", ".join(devices), arch=", ".join(archs), tool="ncu",
                      tool_version="unrecorded", time=time, source_sha256=sha,
                      assumptions=(time_note, *(Assumption(name="note", value=n, source="measured") for n in notes)))
    return Profile(kernels=tuple(kernels), provenance=prov)


def match_kernels(profile: Profile, kernel_mangled_names: Iterable[str]) -> dict[str, tuple[KernelProfile, ...]]:
    """Profiled launches of each of kernelscope's kernels: by mangled name, else by base function name.

    A kernel launched several times maps to all its launches (in report order); an unmatched
    name maps to an empty tuple.
    """
    out: dict[str, tuple[KernelProfile, ...]] = {}
    for name in kernel_mangled_names:
        exact = tuple(k for k in profile.kernels if k.kernel == name)
        if not exact:
            want = mangled_base_name(name)
            exact = tuple(k for k in profile.kernels if base_name(k.name) == want)
        out[name] = exact
    return out


def main(argv: list[str] | None = None) -> int:
    """The child of `load_ncu_report`: the Profile as JSON on stdout, or the error as JSON and exit 3."""
    ap = argparse.ArgumentParser()
    ap.add_argument("report", type=Path)
    ap.add_argument("--source", type=Path, default=None)
    ap.add_argument("--source-text", type=Path, default=None, help="a file holding the source's text")
    args = ap.parse_args(argv)
    text = args.source_text.read_text(encoding="utf-8") if args.source_text else None
    try:
        profile = read_report(args.report, source=args.source, source_text=text)
    except (ReportError, StaleReportError) as e:
        print(json.dumps({"kind": type(e).__name__, "message": e.message, "hint": e.hint}))
        return 3
    sys.stdout.write(profile.model_dump_json())
    return 0


if __name__ == "__main__":
    sys.exit(main())
