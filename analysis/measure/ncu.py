"""Run Nsight Compute on the user's program (locally or through a remote wrapper) and import the report.

UNVERIFIED ON HARDWARE: nothing in this module has run ncu on a GPU yet. The command line
follows measurement.md and the Nsight Compute CLI manual; the error texts come from real ncu
output quoted in public issues (cited at each pattern). What is tested here without a GPU:
the argv builder, the remote templating, error classification and the process handling.
"""

from __future__ import annotations

import re
import secrets
import tempfile
import signal
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from ..process import CancelToken
from ..profile import Profile
from .errors import (CounterPermissionError, KernelNotFoundError, MeasurementError, NoGpuError, ProfileTimeoutError,
                     ProgramCrashError, RemoteError, ReportError, ToolNotFoundError)
from .ncu_report import NO_LINEINFO, load_ncu_report
from .slurm import NODE_TOOL_HINT, srun_index
from .target import (ProfileTarget, container_runtime, execute, fetch_argv, last_lines, remote_report_path,
                     run_on_target, tail)

#: Sections for per-PC stalls, launch data, occupancy, the roofline and the memory hierarchy's hit
#: rates and traffic per level (measurement.md, "Collecting with ncu").
SECTIONS = ("SourceCounters", "WarpStateStats", "LaunchStats", "Occupancy", "SpeedOfLight",
            "SpeedOfLight_RooflineChart", "SpeedOfLight_HierarchicalSingleRooflineChart",
            "SpeedOfLight_HierarchicalDoubleRooflineChart", "MemoryWorkloadAnalysis",
            "MemoryWorkloadAnalysis_Chart")


def sampling_interval_option(ncu_help_text: str) -> str | None:
    """`--warp-sampling-interval` in current ncu, `--sampling-interval` in older ones (measurement.md)."""
    if "--warp-sampling-interval" in ncu_help_text:
        return "--warp-sampling-interval"
    if "--sampling-interval" in ncu_help_text:
        return "--sampling-interval"
    return None


def _supports(option: str, ncu_help_text: str) -> bool:
    # An empty help text means "unknown": assume a current ncu rather than drop options silently.
    return not ncu_help_text or option in ncu_help_text


def report_stem(report_path: Path | str) -> str:
    """ncu appends `.ncu-rep` to the `-o` name itself; passing the stem avoids `x.ncu-rep.ncu-rep`."""
    s = str(report_path)
    return s[: -len(".ncu-rep")] if s.endswith(".ncu-rep") else s


def build_ncu_command(target: ProfileTarget, ncu_path: str, report_path: Path | str, ncu_help_text: str) -> list[str]:
    """The ncu argv (an argument list; no shell) that profiles `target.command` into `report_path`."""
    argv = [ncu_path]
    for section in SECTIONS:
        argv += ["--section", section]
    if _supports("--import-source", ncu_help_text):
        argv += ["--import-source", "yes"]  # embeds the source: lets the importer refuse a stale report
    if _supports("--clock-control", ncu_help_text):
        # The default, `base`, locks clocks to base and changes absolute peaks; `none` worked on the
        # lent machines (measurement.md) and works under MIG (ComputeCanada/puppet-magic_castle#348).
        argv += ["--clock-control", "none"]
    if (opt := sampling_interval_option(ncu_help_text) if ncu_help_text else "--warp-sampling-interval"):
        argv += [opt, "auto"]
    if _supports("--target-processes", ncu_help_text):
        argv += ["--target-processes", "all"]  # programs launched through a script or wrapper
    regex = target.kernel_regex or "."
    if target.first_of_each and not target.launch_skip and target.launch_count is None and ":" not in regex:
        # --kernel-id's invocation number counts per kernel name (context:stream:name:invocation;
        # on an H100 with ncu 2025.3.1 `::regex:.:1` profiled ka's and kb's first launches, `-c 1` ka's alone)
        return [*argv, "--kernel-id", f"::regex:{regex}:1", "-f", "-o", report_stem(report_path), *target.command]
    if target.kernel_regex:
        argv += ["-k", f"regex:{target.kernel_regex}"]
    if target.launch_skip:
        argv += ["-s", str(target.launch_skip)]
    if target.launch_count is not None:
        argv += ["-c", str(target.launch_count)]
    argv += ["-f", "-o", report_stem(report_path)]
    return argv + list(target.command)


# --- classifying ncu's output ----------------------------------------------------------------------

# Each pattern is a message text seen in real ncu output; the source is cited beside it.
_PERMISSION = re.compile(r"ERR_NVGPUCTRPERM|CUPTI_ERROR_INSUFFICIENT_PRIVILEGES")
# ncu and nvprof both print ERR_NVGPUCTRPERM (tests/measure/fixtures/ncu-output/README.md); a CUPTI-based
# tool in a container prints the CUptiResult's name (geoffxy/habitat#5)
_DEVICE = re.compile(r"on the target device (\d+)")
# "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance
# Counters on the target device 0. ..." (deepseek-ai/DeepGEMM#46; huggingface/hub-docs#2714)
_NO_GPU = re.compile(
    r"no CUDA-capable device is detected"  # cudaErrorNoDevice's text (microsoft/nni#2916, NVIDIA/VideoProcessingFramework#432)
    r"|No CUDA-capable device"
    r"|CUDA_ERROR_NO_DEVICE"
    r"|failed to connect to the CUDA driver"  # "==ERROR== Nsight Compute failed to connect to the CUDA driver (stub libcuda.so[.1] on path?)."
    r"|Failed to initialize the profiler: LibraryNotLoaded",  # "... Check that a compatible driver library is loaded."
    re.IGNORECASE)
_NO_KERNELS = re.compile(r"==WARNING== No kernels were profiled")  # NVIDIA/PyProf#142
_APP_ERROR = re.compile(r"==ERROR== The application returned an error code \((\d+)\)")
# "==ERROR== The application returned an error code (1)." / "(9)." / "(15)." (public issue logs, e.g.
# an srun job: "... error code (9). ==ERROR== An error occurred while trying to profile. ==WARNING== No kernels were profiled.")
_FAILED_TO_PROFILE = re.compile(r'==ERROR== Failed to profile "?([^"\n]*?)"? in process')
# '==ERROR== Failed to profile "volta_h884gemm_128x256_ldg8_nn" in process 24701', followed by ncu shutting the
# program down ("Trying to shutdown target application ... error code (15)"): ncu's failure, not the program's.
_ERROR_LINE = re.compile(r"^==ERROR== .*$", re.MULTILINE)


def signal_name(returncode: int) -> str | None:
    """Name of the signal that ended a process: negative return codes from Popen, 128+N from shells/ssh."""
    n = -returncode if returncode < 0 else returncode - 128 if 128 < returncode < 128 + 65 else 0
    try:
        return signal.Signals(n).name if n else None
    except ValueError:
        return None


def classify_ncu_output(returncode: int, output: str, *, kernel_regex: str | None = None,
                        container: str | None = None) -> MeasurementError | None:
    """The MeasurementError that ncu's exit status and output describe, or None for a usable run.

    Order matters: the root cause first (permissions, no GPU), then the program, then the filter;
    a permission failure also prints "No kernels were profiled".
    """
    errors = last_lines("\n".join(_ERROR_LINE.findall(output)), 3)
    if _PERMISSION.search(output):
        device = f" of device {m.group(1)}" if (m := _DEVICE.search(output)) else ""
        hint = CounterPermissionError.container_hint.format(runtime=container) if container else ""
        return CounterPermissionError(f"The profiler may not read the GPU's performance counters{device} "
                                      "(ERR_NVGPUCTRPERM)", hint=hint, output=output)
    if m := _NO_GPU.search(output):
        return NoGpuError(f"No usable CUDA GPU for profiling ({m.group(0)})", output=output)
    if failed := _FAILED_TO_PROFILE.search(output):
        return MeasurementError(f'Nsight Compute failed to profile "{failed.group(1)}" ({errors})',
                                hint="Try --replay-mode application (kernels that depend on each other), fewer "
                                     "sections, or --clock-control none (MIG); the ncu output has the details",
                                output=output)
    app = _APP_ERROR.search(output)
    sig = signal_name(returncode)
    if sig or (app and app.group(1) != "0"):
        code = f"was killed by {sig}" if sig else f"exited with code {app.group(1)}"  # type: ignore[union-attr]
        return ProgramCrashError(f"The profiled program {code} ({errors})", output=output)
    if _NO_KERNELS.search(output):
        which = f"matching regex:{kernel_regex}" if kernel_regex else "at all"
        return KernelNotFoundError(f"No kernel launch was profiled {which}", output=output)
    if returncode != 0:
        return MeasurementError(f"ncu failed with exit code {returncode} ({errors})",
                                hint="Run the same command in a terminal to see ncu's full output", output=output)
    return None


# --- running ----------------------------------------------------------------------------------------


def ncu_version(text: str) -> str:
    """`ncu --version` prints e.g. "NVIDIA (R) Nsight Compute Command Line Profiler ... Version 2025.3.0.0 (build ...)"."""
    m = re.search(r"Version\s+([\w.\-]+)", text)
    return m.group(1) if m else "unknown"


def rank_report(report_path: Path | str, rank: int | str) -> str:
    """One rank's report: ncu expands `%q{SLURM_PROCID}` in its -o name to each task's rank
    (Nsight Compute CLI manual, --export), so the ranks of a multi-task srun do not overwrite each other."""
    return f"{report_stem(report_path)}.rank{rank}.ncu-rep"


def gather_ranks(report: Path) -> list[Path]:
    """Move rank 0's report to `report` (where the caller reads it) and return the other ranks' reports."""
    rank0 = Path(rank_report(report, 0))
    ranks = sorted(report.parent.glob(f"{Path(report_stem(report)).name}.rank*.ncu-rep"))
    if rank0.exists():
        rank0.replace(report)
    return [r for r in ranks if r != rank0]


def run_ncu(target: ProfileTarget, *, cancel: CancelToken | None = None, ncu_path: str = "ncu",
            report_path: Path | None = None, source: Path | None = None,
            on_warning: Callable[[str], None] | None = None,
            on_progress: Callable[[str], None] | None = None) -> Profile:
    """Profile `target` with ncu and return the measured Profile (UNVERIFIED on hardware).

    Steps: `ncu --help`/`--version` (through the wrapper: the remote ncu is the one that runs),
    the optional build, the profile, fetching the report back, and the import. A report without
    line information is kept; `on_warning` hears about it. `on_progress` hears the Slurm job's state.

    Through Slurm every srun is a job that may wait in the queue, so the profile is one job: it
    prints ncu's version first, ncu's options are taken to be a current ncu's, and each rank writes
    its own report (rank 0's is the one imported, the others are kept beside it).
    """
    token = secrets.token_hex(6)
    local_report = Path(report_path) if report_path else Path(tempfile.gettempdir()) / f"kernelscope-{token}.ncu-rep"
    one_job = target.remote is not None and srun_index(target.remote.run) is not None

    def run(argv: list[str], what: str, timeout: float):
        return run_on_target(target, argv, what=what, timeout=timeout, cancel=cancel, on_progress=on_progress)

    help_text = "" if one_job else run([ncu_path, "--help"], "ncu --help", 60).stdout
    version = "unknown" if one_job else ncu_version(run([ncu_path, "--version"], "ncu --version", 60).stdout)
    if target.build:
        built = run(list(target.build), "the build step", target.timeout_s)
        if built.returncode != 0:
            raise MeasurementError(f"The build step failed with exit code {built.returncode}: "
                                   f"{last_lines(built.stderr or built.stdout, 3)}",
                                   hint="Fix the build (and compile with -lineinfo) before profiling", output=tail(built))
    fetch = False
    report_on_target: str = str(local_report)
    if target.remote is not None:
        report_on_target, fetch = remote_report_path(local_report, target.remote, token)
    argv = build_ncu_command(target, ncu_path, rank_report(report_on_target, "%q{SLURM_PROCID}") if one_job
                             else report_on_target, help_text)
    if one_job:
        # sh -c runs ncu twice in the one job: $0 is ncu (no quoting layer), "$@" the profiling command's options
        argv = ["sh", "-c", '"$0" --version && exec "$0" "$@"', *argv]
    started = datetime.now(timezone.utc)
    try:
        result = run(argv, "ncu", target.timeout_s)
    except ProfileTimeoutError as e:
        if one_job and not fetch:
            gather_ranks(local_report)  # rank 0's partial report, where the caller looks
        if not local_report.exists():
            raise
        # ncu writes results as it goes; what was finished before the kill is still worth opening.
        raise ProfileTimeoutError(f"{e.message}; the partial report is kept at {local_report}",
                                  partial_report=local_report) from e
    if one_job:
        if result.returncode == 127:  # sh's "command not found" (POSIX sh, EXIT STATUS): no ncu on the node
            said = next((ln for ln in result.stderr.splitlines() if "not found" in ln), "")
            raise ToolNotFoundError(f"Cannot run ncu on the Slurm node: {ncu_path} was not found ({said.strip()})",
                                    hint=NODE_TOOL_HINT, output=tail(result))
        version = ncu_version(result.stdout)
        report_on_target = rank_report(report_on_target, 0)
        if not fetch and (others := gather_ranks(local_report)) and on_warning is not None:
            on_warning(f"{len(others) + 1} ranks were profiled: rank 0's report is shown, the others are "
                       f"{', '.join(str(r) for r in others)}")
    error = classify_ncu_output(result.returncode, result.stdout + result.stderr, kernel_regex=target.kernel_regex,
                                container=container_runtime(target.remote.run) if target.remote else None)
    if error is not None:
        raise error
    if fetch:
        assert target.remote is not None
        copied = execute(fetch_argv(target.remote, report_on_target, local_report), timeout=target.timeout_s,
                         cancel=cancel, what="copying the report back")
        if copied.returncode != 0:
            raise RemoteError(f"Copying the report back failed (exit {copied.returncode}): "
                              f"{last_lines(copied.stderr, 3)}", output=tail(copied))
    if not local_report.exists():
        raise ReportError(f"ncu finished but wrote no report at {local_report}",
                          hint="Check the output directory is writable (on the remote side, too)")
    profile = load_ncu_report(local_report, source=source, cancel=cancel)
    prov = profile.provenance.model_copy(update={
        "tool_version": version, "time": started,
        "assumptions": tuple(a for a in profile.provenance.assumptions if a.name != "time")})
    kernels = tuple(k.model_copy(update={"provenance": k.provenance.model_copy(update={
        "tool_version": version, "time": started,
        "assumptions": tuple(a for a in k.provenance.assumptions if a.name != "time")})}) for k in profile.kernels)
    if on_warning is not None and any(a.value == NO_LINEINFO for a in prov.assumptions):
        on_warning("The profiled binary has no line information: per-line stalls are unavailable. "
                   "Compile with `nvcc -lineinfo` and profile again.")
    return Profile(kernels=kernels, provenance=prov)


__all__ = ["SECTIONS", "build_ncu_command", "classify_ncu_output", "gather_ranks", "ncu_version", "rank_report", "run_ncu",
           "sampling_interval_option", "signal_name"]
