"""Inclusion context: the translation unit a file's kernels are compiled and launched in.

A kernel is often defined in one file and launched from another: kernels in a `.cuh` that the
program's `.cu` includes, or a `kernels.cu` that a benchmark suite `#include`s into its main
file and that does not compile on its own. Like clangd, which gives a header the compile command
of a file that includes it, the analysis of such a file runs in the translation unit of an
includer: nvcc compiles the includer, and the results are those of the analysed file's lines.

Whichever file is analysed, its source model carries the other files of the unit as `context`
(`SourceModel.context`), so a kernel's launch sites, parameters and annotation are found in
whichever file of the unit holds them.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from ..files import MAX_SOURCE_BYTES, read_regular_text, regular_size
from .compile import CompileResult, CompilerMessage, local_headers
from .toolchain import Toolchain, database_commands

if TYPE_CHECKING:  # the source and program models are read after the compile (pipeline.py's import thread)
    from .conditional import Passes
    from .program import Program
    from .source import IncludedSource, SourceModel

#: Files nvcc does not compile as CUDA on its own: analysed in an includer's unit when one exists.
HEADER_SUFFIXES = frozenset({".cuh", ".h", ".hpp", ".hh", ".hxx", ".inl", ".inc"})
#: Files that may include the analysed one (the translation units of a workspace).
UNIT_SUFFIXES = frozenset({".cu"})
#: What marks a workspace's root, as an editor's root markers do (docs/editors.md).
ROOT_MARKERS = ("compile_commands.json", ".kernelscope.toml", ".git")
#: Folders never searched for includers: build outputs, environments, VCS data.
_SKIP_DIRS = frozenset({"build", "node_modules", "__pycache__", "venv", ".venv", "dist", "third_party"})
MAX_CANDIDATES = 400  # translation units examined per search, nearest folders first

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class InclusionContext:
    file: Path  # the analysed file: results are for its lines
    unit: Path  # the file nvcc compiles: `file` itself, or a file of the workspace that includes it

    @property
    def in_includer(self) -> bool:
        return self.unit != self.file


def is_header(path: Path) -> bool:
    return path.suffix.lower() in HEADER_SUFFIXES


def workspace_root(path: Path, compile_commands: Path | None = None) -> Path:
    """The folder searched for includers: the compile database's, else the nearest ancestor with
    a root marker, else the file's own folder."""
    if compile_commands is not None:
        # absolute: a relative `--compile-commands` and the absolute file would not share a common path
        compile_commands = compile_commands.absolute()
        return compile_commands if compile_commands.is_dir() else compile_commands.parent
    for d in path.resolve().parents:
        if any((d / m).exists() for m in ROOT_MARKERS):
            return d
    return path.resolve().parent


def _candidates(root: Path, near: Path) -> list[Path]:
    """Translation units under `root`, those nearest `near`'s folder first, at most MAX_CANDIDATES.

    Only regular files of a source's size (files.py): a `.cu` that is a FIFO, a device, a symlink
    loop or a symlink to /dev/zero would hang or exhaust the search, and includes nothing.
    os.walk follows no symlinked folder, so a folder loop cannot recur either."""
    found: list[Path] = []
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if not x.startswith(".") and x not in _SKIP_DIRS)
        for f in sorted(files):
            if Path(f).suffix.lower() not in UNIT_SUFFIXES:
                continue
            size = regular_size(Path(d) / f)
            if size is None or size > MAX_SOURCE_BYTES:
                log.debug("includer search: skipped %s (not a regular file of at most %d bytes)",
                          Path(d) / f, MAX_SOURCE_BYTES)
                continue
            found.append(Path(d) / f)
        if len(found) >= 4 * MAX_CANDIDATES:
            break

    def distance(p: Path) -> tuple[int, str]:
        common = os.path.commonpath([str(p.parent), str(near)])
        return (len(p.parent.relative_to(common).parts) + len(near.relative_to(common).parts), str(p))

    return sorted(found, key=distance)[:MAX_CANDIDATES]


def includers(path: Path, flags: Sequence[str], toolchain: Toolchain,
              compile_commands: Path | None = None) -> tuple[Path, ...]:
    """The workspace's translation units that include `path`, directly or through other headers:
    the compile database's entries first (their flags are the build's), then the nearest files."""
    path = path.resolve()
    database = {cc.file.resolve(): cc for cc in database_commands(compile_commands) if cc.file.is_file()}
    ordered = list(database) + [c.resolve() for c in _candidates(workspace_root(path, compile_commands), path.parent)]
    out: list[Path] = []
    for unit in dict.fromkeys(ordered):
        cc = database.get(unit)
        if unit != path and path in local_headers(unit, (*(cc.flags if cc else ()), *flags), toolchain):
            out.append(unit)
    return tuple(out)


def inclusion_context(path: Path, flags: Sequence[str], toolchain: Toolchain,
                      compile_commands: Path | None = None) -> InclusionContext | None:
    """The unit to analyse `path` in when it cannot be compiled on its own, or None when no file
    of the workspace includes it."""
    found = includers(path, flags, toolchain, compile_commands)
    return InclusionContext(file=path.resolve(), unit=found[0]) if found else None


def compile_in_context(source: Path, flags: Sequence[str], toolchain: Toolchain, compile_commands: Path | None,
                       compile_unit: Callable[[Path], CompileResult]) -> tuple[CompileResult, InclusionContext | None]:
    """Compile `source` on its own, or in the unit of a file that includes it: at once for a
    header (nvcc compiles no `.cuh`), and after a failed compile for a `.cu` that the workspace
    `#include`s (its errors alone are false ones: its includer supplies what it lacks)."""
    context = inclusion_context(source, flags, toolchain, compile_commands) if is_header(source) else None
    compiled = compile_unit(context.unit if context is not None else source)
    if not compiled.success and context is None and not is_header(source):
        context = inclusion_context(source, flags, toolchain, compile_commands)
        if context is None:
            return compiled, None
        in_unit = compile_unit(context.unit)
        if not in_unit.success:
            return compiled, None
        compiled = in_unit
    if context is not None and compiled.success:
        compiled = compiled.model_copy(update={"messages": messages_for(compiled.messages, context.file)})
    return compiled, context


def messages_for(messages: Sequence[CompilerMessage], file: Path) -> tuple[CompilerMessage, ...]:
    """The unit's messages about `file`'s own lines (the compiler attributed those in a header to
    the includer's `#include` line, keeping the header's position as the origin)."""
    out = []
    for m in messages:
        if m.origin_file is not None and _same(m.origin_file, file):
            out.append(m.model_copy(update={"file": str(file), "line": m.origin_line, "column": m.origin_column,
                                            "origin_file": None, "origin_line": None, "origin_column": None}))
        elif _same(m.file, file):
            out.append(m)
    return tuple(out)


def _same(a: str, b: Path) -> bool:
    try:
        return Path(a).resolve() == b.resolve()
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
        return False


def with_context(model: SourceModel, file: Path, unit: Path, flags: Sequence[str],
                 toolchain: Toolchain, passes: Passes | None = None) -> SourceModel:
    """`model` (of `file`) with the other files of `unit`'s translation unit as its context: the
    includer when `file` is analysed in its unit, and the local headers, those that hold kernels,
    launches or annotations. A file compiled on its own whose kernels are launched nowhere in its
    unit (a `kernels.cu` that compiles alone and that `main.cu` includes) also gets the launches
    of a workspace file that includes it. Each file's conditionals are resolved with `passes`,
    the unit's predefined macros (a header's own #defines above a conditional are read; those of
    the files that include it are not, and leave what depends on them undecided)."""
    file, unit = file.resolve(), unit.resolve()
    others = [unit] if unit != file else []
    others += [h for h in local_headers(unit, flags, toolchain) if h != file]
    context = [c for other in others if (c := _included(other, passes)) is not None]
    launched = {s.kernel for s in model.launch_sites} | {s.kernel for c in context for s in c.source.launch_sites}
    if unit == file and any(k.name not in launched for k in model.kernels):
        context += [c for c in (_included(p, passes) for p in includers(file, flags, toolchain)[:1]) if c is not None]
    return model.model_copy(update={"context": tuple(context)}) if context else model


def _included(path: Path, passes: Passes | None) -> IncludedSource | None:
    """A file of the unit, when it holds something a kernel is matched to."""
    from .source import IncludedSource, parse_source

    try:
        m = parse_source(read_regular_text(path), passes)
    except OSError:
        return None
    return IncludedSource(path=str(path), source=m) if m.kernels or m.launch_sites or m.annotations else None


def restricted_to_file(program: Program) -> Program:
    """`program` compiled from an includer, with only the kernels the analysed file defines: the
    includer's own kernels are results for another file. Device functions stay (callees)."""
    from .kernel_names import base_name

    own = {k.name for k in program.source.kernels}
    kept = tuple(f for f in program.functions if not f.sass.is_kernel or base_name(f.name) in own)
    return program.model_copy(update={"functions": kept})
