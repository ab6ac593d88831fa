"""CUPTI PC sampling through a small native shim (`cupti/pcsampling_shim.cpp`).

`cupti-python` has no binding for the `cuptiPCSampling*` API (measurement.md, verified), so a
C++ injection library does the sampling and writes JSON lines; this module builds it, runs the
user's program with it (`CUDA_INJECTION64_PATH`), and turns its records into a Profile.
PCs are mapped to lines offline by the caller's `line_of` (kernelscope's own SASS line table),
through `profile.aggregate_lines`, the one place that maps PCs to lines.

UNVERIFIED ON HARDWARE: the shim compiles against the real CUPTI 13 headers (tested), but it has
never run on a GPU; the record layout it reads is the one its own source writes. In particular
`pcOffset` is taken to be relative to the function start (cupti_pcsampling.h pairs it with the
function name for cuptiGetSassToSourceCorrelation) — confirm on a GPU.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterable, Mapping

from ..frontend.kernel_names import mangled_base_name
from ..process import CancelToken
from ..profile import Assumption, KernelProfile, LaunchConfig, PCSample, Profile, Provenance, StallReason, aggregate_lines
from .errors import CounterPermissionError, MeasurementError, ProgramCrashError, RemoteError, ToolNotFoundError
from .ncu import classify_ncu_output
from .stalls import add_samples, is_not_issued
from .target import ProfileTarget, execute, fetch_argv, last_lines, map_path, remote_report_path, run_on_target, tail

SHIM_SOURCE = Path(__file__).parent / "cupti" / "pcsampling_shim.cpp"

# CUptiResult values (cupti_result.h) that have a specific fix.
_CUPTI_INSUFFICIENT_PRIVILEGES = 35
_CUPTI_NOT_SUPPORTED_CODES = {27}  # CUPTI_ERROR_NOT_SUPPORTED


@dataclass(frozen=True)
class CuptiPaths:
    include: Path  # holds cupti.h and cupti_pcsampling.h
    library: Path  # libcupti.so[.N]
    origin: str


def _libcupti_in(directory: Path) -> Path | None:
    found = sorted(directory.glob("libcupti.so*"), key=lambda p: len(p.name))
    return found[0] if found else None


def find_cupti(environ: Mapping[str, str] | None = None) -> CuptiPaths | None:
    """CUPTI headers and library: the `nvidia-cuda-cupti` wheel (nvidia/cu13 or nvidia/cuda_cupti),
    then $CUDA_HOME/$CUDA_PATH and /usr/local/cuda, each as extras/CUPTI or the toolkit's own dirs."""
    env = os.environ if environ is None else environ
    candidates: list[tuple[Path, Path, str]] = []
    try:
        import nvidia  # namespace package of the NVIDIA wheels

        for root in map(Path, nvidia.__path__):
            for sub in ("cu13", "cu12", "cuda_cupti"):
                candidates.append((root / sub / "include", root / sub / "lib", "pip wheel"))
    except ImportError:
        pass
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if env.get(var):
            home = Path(env[var])
            candidates += [(home / "extras" / "CUPTI" / "include", home / "extras" / "CUPTI" / "lib64", var),
                           (home / "include", home / "lib64", var), (home / "include", home / "lib", var)]
    home = Path("/usr/local/cuda")
    candidates += [(home / "extras" / "CUPTI" / "include", home / "extras" / "CUPTI" / "lib64", str(home)),
                   (home / "include", home / "lib64", str(home)), (home / "include", home / "lib", str(home))]
    for include, lib, origin in candidates:
        if (include / "cupti_pcsampling.h").is_file() and lib.is_dir() and (so := _libcupti_in(lib)):
            return CuptiPaths(include=include, library=so, origin=origin)
    return None


def _cache_dir() -> Path:
    try:
        from platformdirs import user_cache_dir

        return Path(user_cache_dir("kernelscope")) / "cupti"
    except ImportError:
        return Path.home() / ".cache" / "kernelscope" / "cupti"


def build_shim(nvcc: Path, cupti_include: Path, cupti_lib: Path, *, out_dir: Path | None = None,
               cancel: CancelToken | None = None) -> Path:
    """Compile the shim into a shared library (cached by content); returns its path.

    `cupti_lib` is libcupti itself or its directory. The wheel ships only `libcupti.so.13` (no
    unversioned name), so the library is linked by path, with an rpath to find it at run time.
    """
    lib = cupti_lib if cupti_lib.is_file() else _libcupti_in(cupti_lib)
    if lib is None:
        raise ToolNotFoundError(f"No libcupti.so* in {cupti_lib}", hint="pip install nvidia-cuda-cupti, or set CUDA_HOME")
    key = hashlib.sha256(b"\0".join([SHIM_SOURCE.read_bytes(), str(nvcc).encode(), str(cupti_include).encode(),
                                     str(lib).encode()])).hexdigest()[:16]
    out = (out_dir or _cache_dir()) / f"kernelscope-pcsampling-{key}.so"
    if out.is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(f".{secrets.token_hex(4)}.tmp")
    argv = [str(nvcc), "-std=c++17", "-O2", "-shared", "-Xcompiler", "-fPIC", "-I", str(cupti_include),
            "-o", str(tmp), str(SHIM_SOURCE), "-Xlinker", str(lib), "-Xlinker", "-rpath", "-Xlinker", str(lib.parent)]
    # The pip nvcc finds its headers relative to itself; only PATH needs its bin dir (toolchain.md).
    env = {**os.environ, "PATH": f"{Path(nvcc).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    result = execute(argv, env=env, timeout=300, cancel=cancel, what="compiling the CUPTI shim")
    if result.returncode != 0 or not tmp.is_file():
        raise MeasurementError(f"Compiling the CUPTI PC-sampling shim failed: {last_lines(result.stderr, 5)}",
                               hint="Check that the CUPTI headers match the CUDA version of nvcc", output=tail(result))
    tmp.replace(out)  # atomic: a concurrent build never sees half a library
    return out


# --- the shim's records ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Sampled:
    """The shim's output, reduced: samples per (function, pcOffset), and the run's sample totals."""

    pcs: dict[tuple[str, int], dict[StallReason, float]]
    total_samples: int
    dropped_samples: int
    errors: tuple[tuple[str, int, str], ...]  # (where, CUptiResult, message)
    saw_context: bool


def parse_pcsampling(lines: Iterable[str]) -> Sampled:
    """Fold the shim's JSON lines: reason indices are resolved per context, `_not_issued`
    variants are dropped (a subset of the same samples), and a PC reported by several flushes is summed."""
    names: dict[tuple[int, int], str] = {}
    pcs: dict[tuple[str, int], dict[StallReason, float]] = {}
    total = dropped = 0
    errors: list[tuple[str, int, str]] = []
    saw_context = False
    for raw in lines:
        raw = raw.strip()
        if not raw:
            continue
        try:
            rec = json.loads(raw)
        except json.JSONDecodeError:
            continue  # a line cut short by a crash of the profiled program
        kind = rec.get("type")
        if kind == "reasons":
            saw_context = True
            for r in rec["reasons"]:
                names[(rec["context"], int(r["index"]))] = r["name"]
        elif kind == "pc":
            bucket = pcs.setdefault((rec["function"], int(rec["pcOffset"])), {})
            for index, n in rec["stalls"].items():
                name = names.get((rec["context"], int(index)), "misc")
                if n and not is_not_issued(name):
                    add_samples(bucket, name, float(n))
        elif kind == "flush":
            total += int(rec.get("totalSamples", 0))
            dropped += int(rec.get("droppedSamples", 0))
        elif kind == "error":
            errors.append((rec.get("where", "?"), int(rec.get("result", -1)), rec.get("message", "")))
    return Sampled(pcs=pcs, total_samples=total, dropped_samples=dropped, errors=tuple(errors), saw_context=saw_context)


def sampled_error(s: Sampled) -> MeasurementError | None:
    for where, code, message in s.errors:
        if code == _CUPTI_INSUFFICIENT_PRIVILEGES:
            return CounterPermissionError(f"CUPTI refused PC sampling in {where} ({message})")
        if code in _CUPTI_NOT_SUPPORTED_CODES:
            return MeasurementError(f"CUPTI PC sampling is not supported here ({where}: {message})",
                                    hint="PC sampling needs sm_70 or newer and a supported driver; use ncu instead")
    if s.errors and not s.pcs:
        where, code, message = s.errors[0]
        return MeasurementError(f"CUPTI PC sampling failed in {where}: {message} (CUptiResult {code})")
    if not s.saw_context:
        return MeasurementError("The program ran but the CUPTI shim saw no CUDA context",
                                hint="Check the program launches kernels, and that CUDA_INJECTION64_PATH reaches it "
                                     "(a launcher that clears the environment drops it)")
    return None


def sampled_profile(s: Sampled, line_of: Mapping[tuple[str, int], tuple[str, int]], *, time: datetime,
                    tool_version: str, device: str = "unrecorded", arch: str = "unrecorded") -> Profile:
    """One KernelProfile per sampled function. Launch, registers, occupancy and duration are not
    measured by PC sampling; they are zero and say so in the provenance."""
    notes = [Assumption(name="launch", value="unmeasured", source="default",
                        detail="CUPTI PC sampling records no launch configuration, registers, occupancy or duration")]
    if s.dropped_samples:
        notes.append(Assumption(name="note", value=f"{s.dropped_samples} of {s.total_samples} samples dropped by the "
                                "hardware buffer", source="measured"))
    prov = Provenance(kind="measured", device=device, arch=arch, tool="cupti", tool_version=tool_version, time=time,
                      assumptions=tuple(notes))
    by_function: dict[str, list[PCSample]] = {}
    for (function, offset), samples in sorted(s.pcs.items()):
        by_function.setdefault(function, []).append(PCSample(function=function, pc=offset, samples=samples))
    kernels = tuple(
        KernelProfile(kernel=function, name=mangled_base_name(function), launch=LaunchConfig(grid=(0, 0, 0), block=(0, 0, 0)),
                      registers_per_thread=0, occupancy=0.0, duration_s=0.0, pcs=tuple(pcs),
                      lines=aggregate_lines(tuple(pcs), dict(line_of)), provenance=prov)
        for function, pcs in by_function.items())
    return Profile(kernels=kernels, provenance=prov)


def run_cupti(target: ProfileTarget, *, shim: Path,
              line_of: Mapping[tuple[str, int], tuple[str, int]] | Callable[[], Mapping[tuple[str, int], tuple[str, int]]],
              cancel: CancelToken | None = None, period: int | None = None, out_path: Path | None = None,
              tool_version: str = "unknown") -> Profile:
    """Run the target with the shim injected and return its PC samples as a Profile (UNVERIFIED on hardware).

    For a remote target the shim must exist at the mapped path on the remote machine (built there),
    and the output comes back through the wrapper's fetch template or a shared mapping. `line_of` may
    be a function, called once the program ran: the cubins it loaded (KERNELSCOPE_PCSAMPLING_CUBINS)
    are known only then.
    """
    token = secrets.token_hex(6)
    local_out = out_path or Path(tempfile.gettempdir()) / f"kernelscope-pcsampling-{token}.jsonl"
    out_on_target, fetch = str(local_out), False
    shim_on_target = str(shim)
    if target.remote is not None:
        out_on_target, fetch = remote_report_path(local_out, target.remote, token, suffix=".jsonl")
        shim_on_target = map_path(str(shim), target.remote.paths)
    env = {**target.env, "CUDA_INJECTION64_PATH": shim_on_target, "KERNELSCOPE_PCSAMPLING_OUT": out_on_target}
    if period is not None:
        env["KERNELSCOPE_PCSAMPLING_PERIOD"] = str(period)
    sampled_target = target.model_copy(update={"env": env})
    started = datetime.now(timezone.utc)
    result = run_on_target(sampled_target, list(target.command), what="the program", timeout=target.timeout_s,
                           cancel=cancel)
    if result.returncode != 0:
        # The texts of a missing GPU, missing permissions or a crash are the program's own, as under ncu.
        error = classify_ncu_output(result.returncode, result.stdout + result.stderr)
        if error is None or type(error) is MeasurementError:
            error = ProgramCrashError(f"The program exited with code {result.returncode}: "
                                      f"{last_lines(result.stderr or result.stdout, 3)}", output=tail(result))
        raise error
    if fetch:
        assert target.remote is not None
        copied = execute(fetch_argv(target.remote, out_on_target, local_out), timeout=target.timeout_s, cancel=cancel,
                         what="copying the samples back")
        if copied.returncode != 0:
            raise RemoteError(f"Copying the samples back failed: {last_lines(copied.stderr, 3)}", output=tail(copied))
    if not local_out.is_file():
        raise MeasurementError("The CUPTI shim wrote no output",
                               hint="Check that the shim was built for this CUDA version and that the output "
                                    "directory is writable; the driver ignores an injection library it cannot load")
    with local_out.open(encoding="utf-8", errors="replace") as f:
        sampled = parse_pcsampling(f)
    if (error := sampled_error(sampled)) is not None:
        raise error
    return sampled_profile(sampled, line_of() if callable(line_of) else line_of, time=started,
                           tool_version=tool_version)
