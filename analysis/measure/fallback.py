"""The counter-permission fallback chain: Nsight Compute, else CUPTI PC sampling, else the model,
and a label saying which one ran and why the ones before it did not.

Only a refusal of the GPU's counters (`CounterPermissionError`: ERR_NVGPUCTRPERM, a container
without the capability) moves down the chain. Every other failure (no GPU, a crash, a timeout,
a missing ncu) is raised as it is: it is the program's or the setup's, and a second profiler
would run into it again.

Whether CUPTI PC sampling is allowed where ncu's counters are refused is not settled by NVIDIA's
documents, so the chain tries it and takes CUPTI's own answer:
- NVIDIA's page on CUPTI_ERROR_INSUFFICIENT_PRIVILEGES
  (https://developer.nvidia.com/CUPTI_ERROR_INSUFFICIENT_PRIVILEGES): with profiling restricted to
  admin users, a non-admin's *profiling* APIs get CUPTI_ERROR_INSUFFICIENT_PRIVILEGES and its
  *tracing* APIs work;
- CUPTI's Limitations (https://docs.nvidia.com/cupti/r_limitations.html): since CUDA 10.2 tracing
  is allowed for non-root users, "events and metrics profiling" is still restricted;
- neither names the PC Sampling API. NVIDIA's ERR_NVGPUCTRPERM page covers tools that use "the GPU
  Performance Counters or the GPU Hardware Event System", and PC sampling reads the SMs' warp
  sampler; one public report has a CUPTI PC-sampling backend failing with CUptiResult 35,
  CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (triton-lang/triton#4868, Proton's `cupti_pcsampling`).
So where the admin restriction is what refused ncu, CUPTI will most likely be refused too; that
refusal (the shim's result 35) is named in the label and the model is shown. It costs one more
run of the program, and where PC sampling is allowed (a driver that permits it, a capability
that covers it) the user gets measured hot lines instead of none.
"""

from __future__ import annotations

import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Literal

from ..process import CancelToken
from ..profile import Profile
from .errors import MEANWHILE, CounterPermissionError, MeasurementError, ToolNotFoundError
from .ncu import run_ncu
from .target import ProfileTarget, map_path

#: which profile the user is shown
Ran = Literal["ncu", "cupti", "modeled"]

CUPTI = "CUPTI PC sampling"


@dataclass(frozen=True)
class Refusal:
    """A profiler the chain passed over, and why (one line, the error's own words)."""

    tool: str
    reason: str


@dataclass(frozen=True)
class Measurement:
    """What the chain ran: ncu's report, CUPTI's samples, or nothing measured (the model)."""

    ran: Ran
    report: Path | None = None  # ncu's report (ran == "ncu"): the analysis reads it
    profile: Profile | None = None  # the measured profile (ncu's or CUPTI's)
    refused: tuple[Refusal, ...] = ()
    #: the counters' refusal, kept whole: its message names every fix, and is shown once
    permission: CounterPermissionError | None = None

    @property
    def label(self) -> str:
        """e.g. 'sampled by CUPTI PC sampling (ncu: The profiler may not read ... (ERR_NVGPUCTRPERM))'."""
        head = {"ncu": "measured by Nsight Compute (ncu)", "cupti": f"sampled by {CUPTI}", "modeled": "modeled"}[self.ran]
        why = "; ".join(f"{r.tool}: {r.reason}" for r in self.refused)
        return f"{head} ({why})" if why else head

    @property
    def message(self) -> str | None:
        """The one permission message (every fix), saying what is shown meanwhile; None where ncu ran."""
        if self.permission is None:
            return None
        if self.ran == "cupti":
            shown = f"Until then kernelscope shows {CUPTI}'s hot lines beside the modeled profile."
        else:
            why = "; ".join(f"{r.tool}: {r.reason}" for r in self.refused if r.tool != "ncu")
            shown = f"{MEANWHILE[:-1]} ({why})." if why else MEANWHILE
        return str(self.permission).replace(MEANWHILE, shown)


def measure_with_fallback(target: ProfileTarget, *, report_path: Path, ncu_path: str = "ncu",
                          source: Path | None = None, cancel: CancelToken | None = None,
                          on_warning: Callable[[str], None] | None = None,
                          on_progress: Callable[[str], None] | None = None,
                          nvcc_path: str | None = None, cupti: bool = True, shim_dir: Path | None = None) -> Measurement:
    """Profile `target` with ncu into `report_path`; where the counters are refused, with CUPTI PC
    sampling (when `cupti` and a shim can be built here); else nothing, and the model is shown.

    `nvcc_path` builds the CUPTI shim (default: the toolchain search); `shim_dir` caches it.
    Raises what run_ncu raises for any failure other than the counters' refusal.
    """
    try:
        profile = run_ncu(target, cancel=cancel, ncu_path=ncu_path, report_path=report_path, source=source,
                          on_warning=on_warning, on_progress=on_progress)
        return Measurement(ran="ncu", report=report_path, profile=profile)
    except CounterPermissionError as refused:
        ncu = Refusal("ncu", refused.message)
        if not cupti:
            return Measurement(ran="modeled", refused=(ncu, Refusal(CUPTI, "not tried (turned off)")), permission=refused)
        try:
            sampled = sample_with_cupti(target, report_path=report_path, source=source, cancel=cancel,
                                        nvcc_path=nvcc_path, shim_dir=shim_dir)
        except MeasurementError as e:
            return Measurement(ran="modeled", refused=(ncu, Refusal(CUPTI, e.message)), permission=refused)
        return Measurement(ran="cupti", profile=sampled, refused=(ncu,), permission=refused)


def sample_with_cupti(target: ProfileTarget, *, report_path: Path, source: Path | None = None,
                      cancel: CancelToken | None = None, nvcc_path: str | None = None,
                      shim_dir: Path | None = None) -> Profile:
    """Run `target` under the CUPTI shim; PCs are mapped to lines through the cubins the program loaded.

    The samples and cubins are written beside `report_path`, which the caller already chose where
    the GPU machine sees it (the shared filesystem of a Slurm cluster)."""
    from ..frontend.toolchain import ToolchainError, locate_toolchain
    from .cupti import build_shim, find_cupti, run_cupti

    remote = target.remote
    if remote is not None and remote.fetch:
        # the shim is built here; with no shared filesystem the GPU machine cannot load it
        raise MeasurementError("not tried: the CUPTI shim is built on this machine and the remote side "
                               "shares no filesystem with it (a fetch template is set)")
    paths = find_cupti()
    if paths is None:
        raise ToolNotFoundError("not available: no CUPTI headers and library here (the nvidia-cuda-cupti wheel, "
                                "$CUDA_HOME, /usr/local/cuda)", hint="pip install nvidia-cuda-cupti, or set CUDA_HOME")
    try:
        toolchain = locate_toolchain(nvcc_path)
    except ToolchainError as e:
        raise ToolNotFoundError(f"not available: no nvcc to build the CUPTI shim ({e})") from None
    shim = build_shim(toolchain.nvcc, paths.include, paths.library, out_dir=shim_dir, cancel=cancel)
    token = secrets.token_hex(6)
    cubins = report_path.parent / f"{report_path.stem}.cubins-{token}"
    cubins.mkdir(parents=True, exist_ok=True)
    where = map_path(str(cubins), remote.paths) if remote is not None else str(cubins)
    sampled = target.model_copy(update={"env": {**target.env, "KERNELSCOPE_PCSAMPLING_CUBINS": where}})
    samples = report_path.parent / f"{report_path.stem}.pcsampling-{token}.jsonl"
    try:
        return run_cupti(sampled, shim=shim, out_path=samples, cancel=cancel,
                         line_of=lambda: cubin_line_table(cubins, source, toolchain.nvdisasm, cancel=cancel))
    finally:  # the Profile holds what they said
        shutil.rmtree(cubins, ignore_errors=True)
        samples.unlink(missing_ok=True)


def cubin_line_table(directory: Path, source: Path | None, nvdisasm: Path, *,
                     cancel: CancelToken | None = None) -> dict[tuple[str, int], tuple[str, int]]:
    """(function, pc offset) -> (file, line) over the cubins in `directory` (the shim saves each
    module the program loaded): the program's own code, not a recompile, so the PCs are the sampled ones."""
    from ..frontend.disassembly import read_sass
    from ..frontend.program import line_table
    from ..frontend.sass import DisassemblyError

    table: dict[tuple[str, int], tuple[str, int]] = {}
    for cubin in sorted(directory.glob("*.cubin")):
        try:
            module = read_sass(cubin.read_bytes(), cubin, nvdisasm, cancel=cancel)
        except (DisassemblyError, OSError):
            continue  # a module kernelscope cannot read (a library's) has no lines; its PCs stay unmapped
        table.update(line_table(module, str(source) if source is not None else ""))
    return table


def hot_lines(profile: Profile, n: int = 5) -> list[str]:
    """Per kernel, its `n` most sampled lines and their shares, e.g. 'saxpy: line 4 71 %, line 3 20 %'."""
    out = []
    for k in profile.kernels:
        total = k.total_samples or 1.0
        top = sorted(k.lines, key=lambda ls: ls.total, reverse=True)[:n]
        lines = ", ".join(f"line {ls.line} {ls.total / total:.0%}" for ls in top)
        out.append(f"{k.name}: {lines or f'{k.total_samples:.0f} samples, no line information'}")
    return out


__all__ = ["CUPTI", "Measurement", "Ran", "Refusal", "cubin_line_table", "hot_lines", "measure_with_fallback",
           "sample_with_cupti"]
