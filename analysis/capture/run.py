"""Launch capture as an input of an analysis: run it for a source file and put what it recorded
into `AnalysisOptions.captured`. Callers decide whether user code may run (a trusted workspace,
or the user's own command line); this module only runs it."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..frontend.conditional import Passes, compile_passes
from ..files import MAX_SOURCE_BYTES, read_regular_text, regular_size
from ..frontend.compile import local_headers
from ..frontend.inclusion import includers
from ..frontend.sass import demangle
from ..frontend.source import parse_source
from ..frontend.toolchain import CompileCommand, Toolchain, ToolchainError, database_commands, locate_toolchain
from ..context import AnalysisContext
from ..machine.arch import ArchCatalog
from ..options import AnalysisOptions
from ..process import CancelToken
from .capture import Capture, CaptureError, Containment, Unit, capture_program
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
    return "main" in _host_functions(source, flags)


def _host_functions(source: Path, flags: Sequence[str]) -> set[str]:
    """Names of the host functions the file defines, read as the host pass of a compile with
    `flags` reads it."""
    host = compile_passes(["nvcc", *flags], "sm_90", None).host  # host code: no arch in it
    try:
        model = parse_source(read_regular_text(source), Passes(host=host, device=host))
    except OSError:
        return set()
    return {f.name for f in model.functions if f.kind == "host"}


#: translation units a program may be linked from (cuda-samples put main() in a .cpp beside the .cu)
UNIT_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".c")
_MAX_SIBLINGS = 64


@dataclass(frozen=True)
class RunnableProgram:
    """What to build to run `main`'s program: its other translation units, and those beside it
    to add should it not link without them (a main() in a .cu calling a `_gold.cpp`'s reference)."""

    main: Unit
    units: tuple[Unit, ...] = ()
    beside: tuple[Unit, ...] = ()


def runnable_program(source: Path, options: AnalysisOptions) -> RunnableProgram | None:
    """The program whose main() launches `source`'s kernels: the file itself; for a header or a
    kernel file the workspace includes, the includer that has a main() (frontend/inclusion.py);
    else a translation unit beside it (in compile_commands.json, or in its folder) whose main()
    calls one of its host functions, linked with it and the folder's other units."""
    source = source.resolve()
    try:
        tc = locate_toolchain(options.nvcc_path)
    except ToolchainError:
        return RunnableProgram(Unit(source)) if has_main(source, options.flags) else None
    units = _units_beside(source.parent, options)
    if has_main(source, options.flags):
        return _program(Unit(source, units.get(source, ())), units, options, tc)
    found = includers(source, options.flags, tc, options.compile_commands)
    if (main := next((u for u in found if has_main(u, options.flags)), None)) is not None:
        return _program(Unit(main, units.get(main, ())), _units_beside(main.parent, options), options, tc)
    called = _host_functions(source, options.flags) - {"main"}  # what another unit's main() would call
    for path, flags in units.items():
        if path != source and called and _calls(path, called) and has_main(path, (*options.flags, *flags)):
            # a program split over files as cuda-samples' are: it links with all of them
            beside = _program(Unit(path, flags), units, options, tc).beside
            own = next((u for u in beside if u.path == source), Unit(source))
            return RunnableProgram(Unit(path, flags), (own, *(u for u in beside if u.path != source)))
    return None


def _program(main: Unit, units: dict[Path, tuple[str, ...]], options: AnalysisOptions,
             tc: Toolchain) -> RunnableProgram:
    """`main` with the units beside it that have no main() of their own and that it does not
    #include (those would define its kernels twice)."""
    included = set(local_headers(main.path, (*options.flags, *main.flags), tc))
    beside = tuple(Unit(p, f) for p, f in units.items()
                   if p != main.path and p not in included and not has_main(p, (*options.flags, *f)))
    return RunnableProgram(main, (), beside)


def _units_beside(folder: Path, options: AnalysisOptions) -> dict[Path, tuple[str, ...]]:
    """Translation units in `folder` -> the flags of their compile: the compile database's entries
    there when it lists any (its flags are the build's), else the folder's source files. Only
    regular files of a source's size (analysis/files.py): a FIFO or a link to /dev/zero named
    `x.cpp` is no unit."""
    listed = {cc.file.resolve(): _nvcc_flags(cc) for cc in database_commands(options.compile_commands)
              if cc.file.resolve().parent == folder and _regular(cc.file)}
    if listed:
        return listed
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return {}
    found = [folder / n for n in names if Path(n).suffix.lower() in UNIT_SUFFIXES]
    return {p.resolve(): () for p in found[:_MAX_SIBLINGS] if _regular(p)}


def _nvcc_flags(cc: CompileCommand) -> tuple[str, ...]:
    """An entry's flags as nvcc takes them: a host compiler's (a .cpp compiled by `c++`) keep their
    macros, include paths, standard and optimization, and hand its own options to the host
    compiler (`-fopenmp` must reach the link too); the rest are dropped."""
    if cc.is_nvcc:
        return cc.flags
    out: list[str] = []
    flags = iter(cc.flags)
    for f in flags:
        if f in ("-D", "-U", "-I", "-isystem"):
            out += [f, next(flags, "")]
        elif f.startswith(("-D", "-U", "-I", "-isystem", "-std=", "-O")):
            out.append(f)
        elif f.startswith(("-f", "-W", "-m", "-pthread")):
            out.append(f"-Xcompiler={f}")
    return tuple(out)


def _regular(path: Path) -> bool:
    size = regular_size(path)
    return size is not None and size <= MAX_SOURCE_BYTES


def _calls(unit: Path, names: set[str]) -> bool:
    try:
        text = read_regular_text(unit)
    except OSError:
        return False
    return any(re.search(rf"\b{re.escape(n)}\s*\(", text) for n in names)


def with_capture(source: Path, options: AnalysisOptions, *, argv: Sequence[str] = (), time_limit: float = 20.0,
                 launches_per_kernel: int = 64, cancel: CancelToken | None = None,
                 catalog: ArchCatalog | None = None) -> CaptureOutcome:
    """`options` with the launches `source`'s own main() makes. Failure is not an error of the
    analysis: the static sources (launch sites, annotations, defaults) still apply, and the
    message says why capture did not. `catalog`: the arch catalog the caller loaded for the
    analysis that follows (the stand-in runtime reports its device's SM count, which a program may size
    its grid by)."""
    source = source.resolve()
    program = runnable_program(source, options)
    if program is None:
        return CaptureOutcome(options, None, f"{source.name} has no main(), and no file of the workspace that "
                                             "includes it or calls it has one: launch capture needs a program to run")
    try:
        tc = locate_toolchain(options.nvcc_path)
        # the device as the analysis resolves it (context.py), from the caller's catalog
        device = AnalysisContext.resolve(options, catalog=catalog).device

        def run(units: Sequence[Unit]) -> Capture:
            return capture_program(tc, program.main.path, arch=options.arch, flags=(*options.flags, *program.main.flags),
                                   units=units, argv=argv, sm_count=device.sm_count, cancel=cancel,
                                   containment=Containment(time_limit=time_limit,
                                                           launches_per_kernel=launches_per_kernel))
        try:
            cap = run(program.units)
        except CaptureError as e:
            # a main() that calls functions of the units beside it links only with them
            if not (program.beside and "undefined reference" in e.output):
                raise
            cap = run((*program.units, *program.beside))
    except (CaptureError, ToolchainError) as e:
        hint = getattr(e, "hint", "")
        # the hint goes with the first line; the tool's last lines, if any, follow it
        head, _, tail = str(e).partition("\n")
        return CaptureOutcome(options, None, f"launch capture failed: {head}" + (f" ({hint})" if hint else "")
                              + (f"\n{tail}" if tail else ""))
    kernels = captured_kernels(cap, demangle(sorted(cap.counts), cancel=cancel))
    note = None
    if not cap.finished:
        note = (f"launch capture: the program stopped early (exit {cap.exit_code}); "
                f"{len(cap.launches)} launch(es) recorded before it did are used")
    return CaptureOutcome(options.model_copy(update={"captured": {**options.captured, **kernels}}), cap, note)
