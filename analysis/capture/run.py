"""Launch capture as an input of an analysis: run it for a source file and put what it recorded
into `AnalysisOptions.captured`. Callers decide whether user code may run (a trusted workspace,
or the user's own command line); this module only runs it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..arch import load_arch_specs
from ..options import AnalysisOptions
from ..process import CancelToken
from ..toolchain import ToolchainError, locate_toolchain
from .capture import Capture, CaptureError, capture_program
from .hints import captured_kernels

_MAIN = re.compile(r"\bint\s+main\s*\(")


@dataclass(frozen=True)
class CaptureOutcome:
    options: AnalysisOptions  # with `captured` filled, or unchanged when capture was not possible
    capture: Capture | None
    message: str | None  # why nothing was captured, or that the program stopped early


def has_main(source: Path) -> bool:
    return bool(_MAIN.search(source.read_text(errors="replace")))


def with_capture(source: Path, options: AnalysisOptions, *, argv: Sequence[str] = (), time_limit: float = 20.0,
                 launches_per_kernel: int = 64, cancel: CancelToken | None = None) -> CaptureOutcome:
    """`options` with the launches `source`'s own main() makes. Failure is not an error of the
    analysis: the static sources (launch sites, annotations, defaults) still apply, and the
    message says why capture did not."""
    source = source.resolve()
    if not has_main(source):
        return CaptureOutcome(options, None, f"{source.name} has no main(): launch capture needs a program to run")
    try:
        tc = locate_toolchain(options.nvcc_path)
        catalog = load_arch_specs(options.arch_file)
        device = catalog.device(options.device) if options.device else catalog.default_device(catalog.arch(options.arch))
        cap = capture_program(tc.nvcc, tc.cuobjdump, source, arch=options.arch, flags=options.flags, argv=argv,
                              time_limit=time_limit, launches_per_kernel=launches_per_kernel,
                              sm_count=device.sm_count, cancel=cancel)
    except (CaptureError, ToolchainError) as e:
        hint = getattr(e, "hint", "")
        return CaptureOutcome(options, None, f"launch capture failed: {e}" + (f" ({hint})" if hint else ""))
    kernels = captured_kernels(cap)
    note = None
    if not cap.finished:
        note = (f"launch capture: the program stopped early (exit {cap.exit_code}); "
                f"{len(cap.launches)} launch(es) recorded before it did are used")
    return CaptureOutcome(options.model_copy(update={"captured": {**options.captured, **kernels}}), cap, note)
