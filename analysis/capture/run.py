"""Launch capture as an input of an analysis: run it for a source file and put what it recorded
into `AnalysisOptions.captured`. Callers decide whether user code may run (a trusted workspace,
or the user's own command line); this module only runs it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..frontend.conditional import Passes, compile_passes
from ..frontend.inclusion import includers
from ..frontend.sass import demangle
from ..frontend.source import parse_source
from ..frontend.toolchain import ToolchainError, locate_toolchain
from ..machine.arch import load_arch_specs
from ..options import AnalysisOptions
from ..process import CancelToken
from .capture import Capture, CaptureError, capture_program
from .hints import captured_kernels


@dataclass(frozen=True)
class CaptureOutcome:
    options: AnalysisOptions  # with `captured` filled, or unchanged when capture was not possible
    capture: Capture | None
    message: str | None  # why nothing was captured, or that the program stopped early


def has_main(source: Path, flags: Sequence[str] = ()) -> bool:
    """Whether the file defines a `main()` (from its syntax tree: a comment or a string that says
    `int main(` is not one), read as the host pass of a compile with `flags` reads it: braces that
    balance only once its conditionals are decided (`#if defined(_OPENACC)`) still give a main()."""
    host = compile_passes(["nvcc", *flags], "sm_90", None).host  # main() is host code: no arch in it
    try:
        model = parse_source(source.read_text(errors="replace"), Passes(host=host, device=host))
    except OSError:
        return False
    return any(f.name == "main" and f.kind == "host" for f in model.functions)


def program_of(source: Path, options: AnalysisOptions) -> Path | None:
    """The program whose main() launches `source`'s kernels: the file itself, or, for a header or
    a kernel file the workspace includes, the includer that has a main() (analysis/frontend/inclusion.py)."""
    if has_main(source, options.flags):
        return source
    try:
        tc = locate_toolchain(options.nvcc_path)
    except ToolchainError:
        return None
    found = includers(source, options.flags, tc, options.compile_commands)
    return next((u for u in found if has_main(u, options.flags)), None)


def with_capture(source: Path, options: AnalysisOptions, *, argv: Sequence[str] = (), time_limit: float = 20.0,
                 launches_per_kernel: int = 64, cancel: CancelToken | None = None) -> CaptureOutcome:
    """`options` with the launches `source`'s own main() makes. Failure is not an error of the
    analysis: the static sources (launch sites, annotations, defaults) still apply, and the
    message says why capture did not."""
    source = source.resolve()
    program = program_of(source, options)
    if program is None:
        return CaptureOutcome(options, None, f"{source.name} has no main(), and no file of the workspace that "
                                             "includes it has one: launch capture needs a program to run")
    source = program
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
    kernels = captured_kernels(cap, demangle(sorted(cap.counts), cancel=cancel))
    note = None
    if not cap.finished:
        note = (f"launch capture: the program stopped early (exit {cap.exit_code}); "
                f"{len(cap.launches)} launch(es) recorded before it did are used")
    return CaptureOutcome(options.model_copy(update={"captured": {**options.captured, **kernels}}), cap, note)
