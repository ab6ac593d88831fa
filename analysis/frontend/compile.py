"""The compile step: one nvcc `-cubin` run per analysis, its diagnostics and ptxas resource report.

nvcc is the only frontend in the normal path (see docs/toolchain.md for why the NVRTC fast
path is not used). When host code fails to compile but kernels would not, the file is
compiled again with host functions blanked out (line numbers kept), so the kernels can
still be analysed; the original errors stay as diagnostics.
"""

from __future__ import annotations

import bisect
import os
import re
import signal
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict

from ..files import read_regular_text
from ..process import CancelToken, Started, ToolTimeout, finish_tool, run_tool
from .resources import KernelResources, parse_resources
from .toolchain import CompileCommand, Toolchain, filter_flags, supported_archs
from .treesitter import parser as _parser

if TYPE_CHECKING:
    from .prelaunch import Prelaunch

Severity = Literal["error", "warning", "note", "remark"]


class CompileSetupError(Exception):
    """The compile cannot start (unknown arch, unreadable source); raised before nvcc runs."""


class CompilerMessage(BaseModel):
    model_config = ConfigDict(frozen=True)

    file: str  # absolute; the analysed file when the message was attributed from a header
    line: int | None  # 1-based
    column: int | None  # 1-based
    severity: Severity
    message: str
    code: str | None = None  # EDG diagnostic number, e.g. "177-D"
    tool: str = "nvcc"  # which stage spoke: nvcc (EDG/cudafe), host compiler, ptxas, nvlink
    origin_file: str | None = None  # the header where the message really is
    origin_line: int | None = None
    origin_column: int | None = None


class CompileResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    success: bool  # a cubin was produced (possibly from device code alone)
    cubin: bytes | None
    cubin_path: Path | None  # the same bytes on disk, for nvdisasm/cuobjdump
    messages: tuple[CompilerMessage, ...]
    resources: tuple[KernelResources, ...]
    toolchain: Toolchain
    command: tuple[str, ...]  # exact argv of the compile that produced the cubin (or failed)
    frontend: Literal["nvcc", "nvrtc"]
    device_only: bool = False
    note: str = ""
    wall_s: float

    @property
    def errors(self) -> tuple[CompilerMessage, ...]:
        return tuple(m for m in self.messages if m.severity == "error")


DEVICE_ONLY_NOTE = ("host code failed to compile; kernels analysed from device code alone "
                    "(host functions were blanked out and the file compiled again)")

_ARCH_RE = re.compile(r"^sm_(\d{2,3})([af]?)$")


def validate_arch(arch: str, toolchain: Toolchain) -> str:
    m = _ARCH_RE.match(arch.strip())
    if m is None:
        raise CompileSetupError(f"'{arch}' is not a GPU architecture like sm_90 (sm_ followed by its compute capability).")
    arch = arch.strip()
    known = supported_archs(toolchain)
    if known is not None and f"sm_{m.group(1)}" not in known:
        raise CompileSetupError(f"nvcc {toolchain.version} at {toolchain.nvcc} cannot compile for {arch}; "
                                f"it supports {', '.join(sorted(known, key=_arch_key))}.")
    return arch


def _arch_key(a: str) -> int:
    m = _ARCH_RE.match(a)
    return int(m.group(1)) if m else 0


def nvcc_argv(source: Path, cubin: Path, arch: str, toolchain: Toolchain, flags: Sequence[str]) -> list[str]:
    # -lineinfo maps SASS to lines; -Xptxas -v gives the resource report at no extra cost.
    return [str(toolchain.nvcc), *flags, "-lineinfo", "-cubin", f"-arch={arch}", "-Xptxas", "-v",
            "-o", str(cubin), str(source)]


def compile_flags(source: Path, user_flags: Sequence[str],
                  compile_command: CompileCommand | None) -> tuple[tuple[str, ...], Path]:
    """The flags `compile_cuda` gives nvcc besides its own, and the folder it runs nvcc in."""
    cc_flags = compile_command.flags if compile_command is not None else ()
    flags = (*cc_flags, *filter_flags(user_flags, source))
    cwd = compile_command.directory if compile_command is not None and compile_command.directory.is_dir() else source.parent
    return flags, cwd


@dataclass(frozen=True)
class Invocation:
    """The nvcc run `compile_cuda` makes for a file, checked before anything runs (`invocation`)."""

    source: Path
    arch: str
    flags: tuple[str, ...]  # besides the compile's own (`nvcc_argv`)
    cwd: Path
    toolchain: Toolchain

    def argv(self, cubin: Path) -> list[str]:
        return nvcc_argv(self.source, cubin, self.arch, self.toolchain, self.flags)


def invocation(source: Path, *, arch: str, user_flags: Sequence[str], toolchain: Toolchain,
               compile_command: CompileCommand | None) -> Invocation:
    """The nvcc run `compile_cuda` makes for `source` (an absolute path). Raises CompileSetupError
    for one that must not run: an arch nvcc does not know, a path its shell would misread."""
    arch = validate_arch(arch, toolchain)
    _refuse_shell_text(source)
    flags, cwd = compile_flags(source, user_flags, compile_command)
    return Invocation(source, arch, flags, cwd, toolchain)


def compile_cuda(source: Path, *, arch: str = "sm_90", user_flags: Sequence[str] = (), toolchain: Toolchain,
                 compile_command: CompileCommand | None = None, cancel: CancelToken | None = None,
                 timeout: float = 120, workdir: Path | None = None, prelaunch: Prelaunch | None = None,
                 source_bytes: bytes | None = None) -> CompileResult:
    """Compile `source` to a cubin for `arch`; errors become messages, never exceptions.

    Raises CompileSetupError before running anything when the arch or the source is unusable,
    and after running nvcc when the compile did not finish (timeout, a signal) or failed for a
    reason of the machine (a full TMPDIR, no host compiler): only a finished compile is a result
    a cache may keep. Raises Cancelled when `cancel` fires. The cubin is written under `workdir` (a fresh temp dir
    when None; the caller owns it either way). `prelaunch` (the CLI's, prelaunch.py) may already
    run this very nvcc invocation: it is adopted then, and the invocation is recorded for the next
    run once it compiled. `source_bytes`: the file's content as the caller already read it (the
    analysis context's), which the device-only fallback compiles with the host code blanked; read
    here when not given.
    """
    start = time.perf_counter()
    source = Path(source).absolute()
    run = invocation(source, arch=arch, user_flags=user_flags, toolchain=toolchain, compile_command=compile_command)
    arch, flags, cwd = run.arch, run.flags, run.cwd
    if source_bytes is None:
        try:
            source_bytes = source.read_bytes()
        except OSError as e:
            raise CompileSetupError(f"Cannot read {source}: {e.strerror or e}") from None
    workdir = Path(tempfile.mkdtemp(prefix="kernelscope-")) if workdir is None else workdir
    workdir.mkdir(parents=True, exist_ok=True)
    cubin_path = workdir / f"{source.stem}.cubin"
    argv = run.argv(cubin_path)
    started = prelaunch.take(argv, cwd, toolchain.env, cubin_path) if prelaunch is not None else None
    output, returncode = _run_nvcc(argv, toolchain, cwd, timeout, cancel, started)
    if started is not None:
        prelaunch.settle(cubin_path)
    ctx = _Context(source=source, cwd=cwd, include_dirs=_include_dirs(flags, cwd, toolchain))
    messages = parse_messages(output, ctx)
    resources = parse_resources(output)
    cubin = _read_cubin(cubin_path) if returncode == 0 else None
    if cubin is not None:
        if prelaunch is not None:
            prelaunch.keep(argv, cwd, toolchain.env, cubin_path)
        return CompileResult(success=True, cubin=cubin, cubin_path=cubin_path, messages=messages, resources=resources,
                             toolchain=toolchain, command=tuple(argv), frontend="nvcc",
                             wall_s=time.perf_counter() - start)
    fallback = _device_only(source, source_bytes, messages, arch, toolchain, flags, cwd, workdir, timeout, cancel)
    if fallback is not None:
        f_argv, f_output, f_cubin = fallback
        return CompileResult(success=True, cubin=f_cubin, cubin_path=cubin_path, messages=messages,
                             resources=parse_resources(f_output), toolchain=toolchain, command=tuple(f_argv),
                             frontend="nvcc", device_only=True, note=DEVICE_ONLY_NOTE,
                             wall_s=time.perf_counter() - start)
    if not any(m.severity == "error" for m in messages):
        # nvcc failed without saying anything we recognise: keep its own words.
        tail = output.strip().splitlines()[-5:] or [f"nvcc exited with status {returncode}"]
        messages = (*messages, CompilerMessage(file=str(source), line=None, column=None, severity="error",
                                               message=" ".join(tail)))
    return CompileResult(success=False, cubin=None, cubin_path=None, messages=messages, resources=resources,
                         toolchain=toolchain, command=tuple(argv), frontend="nvcc", wall_s=time.perf_counter() - start)


#: nvcc runs its stages through /bin/sh with each path inside double quotes (checked on nvcc 13.0:
#: a source named `$(touch x).cu` creates `x`), so these characters are shell syntax to it.
_SHELL_ACTIVE_IN_QUOTES = ('$', '`', '"', '\\')


def _refuse_shell_text(source: Path) -> None:
    found = sorted({c for c in str(source) if c in _SHELL_ACTIVE_IN_QUOTES})
    if found:
        raise CompileSetupError(
            f"kernelscope does not compile {source}: nvcc passes file paths to a shell, where "
            f"{' '.join(found)} in the path would run as shell syntax (a file named `$(cmd).cu` runs cmd). "
            f"Rename the file or folder without these characters.")


def _run_nvcc(argv: list[str], toolchain: Toolchain, cwd: Path, timeout: float,
              cancel: CancelToken | None, started: Started | None = None) -> tuple[str, int]:
    try:
        if started is not None:  # the same invocation, started before the analysis could (prelaunch.py)
            r = finish_tool(started, timeout=timeout, cancel=cancel)
        else:
            r = run_tool(argv, cwd=cwd, env=dict(toolchain.env), timeout=timeout, cancel=cancel)
    except ToolTimeout as e:
        # A compile that did not finish says nothing about the source (a stopped or starved
        # compiler ends here too): an exception, so that no "does not compile" result is cached.
        raise CompileSetupError(f"{e} (the compile timeout, kernelscope.analysis.compileTimeoutS, is {timeout:g} s). Nothing "
                                f"was cached: analyse again, or raise the timeout for a file that needs longer") from None
    except OSError as e:
        raise CompileSetupError(f"Cannot run {argv[0]}: {e.strerror or e}") from None
    if r.returncode < 0:
        # Killed by a signal from outside (OOM killer, a user's kill): not a fact about the source, so it
        # must not become a cached "does not compile" result.
        try:
            name = signal.Signals(-r.returncode).name
        except ValueError:
            name = f"signal {-r.returncode}"
        raise CompileSetupError(f"nvcc was stopped by {name} (out of memory, or killed from outside); "
                                f"save again to retry")
    # ptxas's report and EDG's messages both go to stderr; stdout is normally empty.
    output = r.stdout + r.stderr
    if r.returncode != 0 and (failure := _MACHINE_FAILURE.search(output)):
        raise CompileSetupError(_machine_failure_message(failure.group(0), output, toolchain))
    return output, r.returncode


#: nvcc's words when this machine, not the source, failed: a full or unwritable TMPDIR (where nvcc
#: writes its intermediate files: "Failed to preprocess host compiler properties" is how a full one
#: shows, checked on nvcc 13.0), a host compiler it cannot run, memory, a stage killed from outside
#: ("'cicc' died due to signal 9 (Kill signal)": the OOM killer; a crash, signal 11, is the
#: compiler's bug on this source and stays a result). Such a failure is an exception, never a
#: result: a cached "does not compile" would outlive the cause.
_MACHINE_FAILURE = re.compile(r"Failed to preprocess host compiler properties|No space left on device|"
                              r"Disk quota exceeded|Read-only file system|Could not open output file|"
                              r"Cannot allocate memory|Permission denied|died due to signal (?:9|15)\b")


def _machine_failure_message(what: str, output: str, toolchain: Toolchain) -> str:
    tmp = toolchain.env.get("TMPDIR") or tempfile.gettempdir()
    detail = " / ".join(line.strip() for line in output.strip().splitlines()[-3:]).rstrip(".")
    return (f"nvcc failed for a reason of this machine, not of the file ({what}): {detail}. Check that the "
            f"temporary folder {tmp} (TMPDIR) is writable and has free space, and that nvcc's host compiler "
            f"(-ccbin, else g++ on PATH) runs. Nothing was cached: analyse again once that is fixed")


def _read_cubin(p: Path) -> bytes | None:
    try:
        data = p.read_bytes()
    except OSError:
        return None
    return data or None


# ---------------------------------------------------------------------------------------------
# Messages

class _Context(BaseModel):
    model_config = ConfigDict(frozen=True)

    source: Path
    cwd: Path
    include_dirs: tuple[Path, ...]


_EDG = re.compile(r"^(?P<file>.+?)\((?P<line>\d+)\): (?P<sev>catastrophic error|internal error|command-line error|"
                  r"error|warning|remark|note)(?: #(?P<code>[\w-]+))?: (?P<msg>.*)$")
_GCC = re.compile(r"^(?P<file>[^\s:][^:]*?):(?P<line>\d+):(?:(?P<col>\d+):)? (?P<sev>fatal error|error|warning|note):"
                  r" (?P<msg>.*)$")
_INCLUDED_FROM = re.compile(r"^(?:In file included from|\s+from) (?P<file>.+?):(?P<line>\d+)(?::\d+)?[:,]$")
_PTXAS = re.compile(r"^ptxas(?: (?P<file>.+?), line (?P<line>\d+);)? ?(?P<sev>error|warning|fatal|info)\s*: ?(?P<msg>.*)$")
_TOOL = re.compile(r"^(?P<tool>nvcc|nvlink|fatbinary|cicc|cudafe\+\+|nvdisasm|collect2|[\w/.-]*\bld)(?:\.exe)?"
                   r"(?::| ) ?(?P<sev>fatal error|error|warning|fatal)\s*: ?(?P<msg>.*)$")
_LD = re.compile(r"^(?P<tool>[\w/.-]*\bld): (?P<msg>.*)$")
_IGNORE = re.compile(r"^(?:Remark: The warnings can be suppressed|\d+ errors? detected in the compilation|"
                     r"compilation terminated\.|Error limit reached\.|--- compilation aborted|.*: In (?:member )?"
                     r"function |.*: At global scope:|.*: In instantiation of |\s+\d* \| |\s+\|)")

_SEVERITY: dict[str, Severity] = {"catastrophic error": "error", "internal error": "error",
                                  "command-line error": "error", "fatal error": "error", "fatal": "error",
                                  "error": "error", "warning": "warning", "remark": "remark", "note": "note"}


@dataclass
class _Raw:
    """A message as printed, before attribution."""

    file: str | None
    line: int | None
    column: int | None
    severity: Severity
    message: str
    code: str | None
    tool: str
    included_from: tuple[tuple[str, int], ...] = ()
    echo: list[str] = field(default_factory=list)  # EDG's source echo and caret lines


def parse_messages(output: str, ctx: _Context) -> tuple[CompilerMessage, ...]:
    # split on \n only: str.splitlines would also break at form feeds and other bytes in echoed garbage.
    raws = _scan(line.rstrip("\r") for line in output.split("\n"))
    return tuple(_attribute(r, ctx) for r in raws)


def _scan(lines: Iterable[str]) -> list[_Raw]:
    raws: list[_Raw] = []
    chain: list[tuple[str, int]] = []
    in_ptxas_info = False
    in_detected = False
    for line in lines:
        if not line.strip():
            in_detected = False
            continue
        if m := _INCLUDED_FROM.match(line):
            chain.append((m["file"], int(m["line"])))
            continue
        if m := _EDG.match(line):
            raws.append(_Raw(file=m["file"], line=int(m["line"]), column=None, severity=_SEVERITY[m["sev"]],
                             message=m["msg"], code=m["code"], tool="nvcc"))
            in_ptxas_info = in_detected = False
            continue
        if m := _GCC.match(line):
            raws.append(_Raw(file=m["file"], line=int(m["line"]), column=int(m["col"]) if m["col"] else None,
                             severity=_SEVERITY[m["sev"]], message=m["msg"], code=None, tool="host compiler",
                             included_from=tuple(chain)))
            chain = []
            in_ptxas_info = in_detected = False
            continue
        if m := _PTXAS.match(line):
            in_ptxas_info = m["sev"] == "info"  # -Xptxas -v's report: resources, not diagnostics
            if not in_ptxas_info:
                raws.append(_Raw(file=m["file"], line=int(m["line"]) if m["line"] else None, column=None,
                                 severity=_SEVERITY[m["sev"]], message=m["msg"].strip(), code=None, tool="ptxas"))
            continue
        if m := _TOOL.match(line):
            tool = Path(m["tool"]).name
            raws.append(_Raw(file=None, line=None, column=None, severity=_SEVERITY[m["sev"]],
                             message=m["msg"].strip(), code=None, tool="linker" if tool in ("ld", "collect2") else tool))
            in_ptxas_info = False
            continue
        if m := _LD.match(line):
            raws.append(_Raw(file=None, line=None, column=None, severity="error", message=m["msg"].strip(),
                             code=None, tool="linker"))
            continue
        if _IGNORE.match(line) or in_ptxas_info:
            continue
        stripped = line.strip()
        if raws and (stripped.startswith("detected during") or in_detected):
            # EDG's template instantiation context belongs to the message above it.
            raws[-1].message += " (" + stripped.rstrip(":") + ")"
            in_detected = True
            continue
        if raws and raws[-1].tool == "nvcc" and line.startswith(" ") and len(raws[-1].echo) < 2:
            raws[-1].echo.append(line)
            continue
        # Anything else is an echo of source text (gcc's caret lines, garbage input): never a message.
    return raws


def _resolve(file: str, ctx: _Context) -> Path:
    p = Path(file)
    return (p if p.is_absolute() else ctx.cwd / p).resolve()


def _same(a: Path, b: Path) -> bool:
    return a == b or a.resolve() == b.resolve()


def _attribute(raw: _Raw, ctx: _Context) -> CompilerMessage:
    src = str(ctx.source)
    message = raw.message
    if raw.file is None or raw.file.endswith(".ptx") or raw.file == "<command-line>":
        # ptxas speaks about nvcc's temporary PTX, nvcc/linker about no file: pin to the analysed file.
        if raw.file and raw.file.endswith(".ptx") and raw.line is not None:
            message = f"{message} (in the generated PTX, line {raw.line})"
        return CompilerMessage(file=src, line=None, column=None, severity=raw.severity, message=message,
                               code=raw.code, tool=raw.tool)
    path = _resolve(raw.file, ctx)
    column = raw.column if raw.column is not None else _edg_column(raw.echo, path, raw.line)
    if _same(path, ctx.source):
        return CompilerMessage(file=src, line=raw.line, column=column, severity=raw.severity, message=message,
                               code=raw.code, tool=raw.tool)
    line = _include_line_from_chain(raw.included_from, ctx)
    if line is None:
        line = include_line_for(ctx.source, path, ctx.include_dirs)
    return CompilerMessage(file=src, line=line, column=None, severity=raw.severity,
                           message=f"{message} (in {path.name}:{raw.line})", code=raw.code, tool=raw.tool,
                           origin_file=str(path), origin_line=raw.line, origin_column=column)


def _include_line_from_chain(chain: Sequence[tuple[str, int]], ctx: _Context) -> int | None:
    # gcc lists the chain innermost first; the analysed file's entry is the #include to blame.
    for file, line in reversed(chain):
        if _same(Path(file) if Path(file).is_absolute() else ctx.cwd / file, ctx.source):
            return line
    return None


def _edg_column(echo: Sequence[str], path: Path, line: int | None) -> int | None:
    """EDG echoes the *preprocessed* line (e.g. __global__ shown as __attribute__((global))) with a
    caret below; map the caret back onto the original line."""
    if len(echo) < 2 or line is None or "^" not in echo[1]:
        return None
    echoed, caret = echo[0][2:], echo[1].index("^") - 2
    if caret < 0:
        return None
    original = _source_line(path, line)
    if original is None:
        return None
    if echoed == original:
        return caret + 1
    suffix = echoed[caret:]
    if suffix and original.endswith(suffix):
        return len(original) - len(suffix) + 1
    tok = re.match(r"\w+|\S", suffix)
    if tok:
        hits = [m.start() for m in re.finditer(re.escape(tok.group(0)), original)]
        if hits:
            # The preprocessed line is usually longer, so the nearest occurrence from the right wins.
            shift = len(echoed) - len(original)
            return min(hits, key=lambda h: abs(h - (caret - shift))) + 1
    return None


def _source_line(path: Path, line: int) -> str | None:
    text = _read_text(str(path))
    if text is None:
        return None
    lines = text.splitlines()
    return lines[line - 1] if 0 < line <= len(lines) else None


@lru_cache(maxsize=64)
def _read_text_cached(path: str, mtime_ns: int) -> str | None:
    try:
        return read_regular_text(path)  # a header may be a FIFO or /dev/zero under a source's name (files.py)
    except OSError:
        return None


def _read_text(path: str) -> str | None:
    try:
        return _read_text_cached(path, os.stat(path).st_mtime_ns)
    except OSError:
        return None


# ---------------------------------------------------------------------------------------------
# Header attribution: which #include line of the analysed file pulls in a header.

_INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.MULTILINE)


def _include_dirs(flags: Sequence[str], cwd: Path, toolchain: Toolchain) -> tuple[Path, ...]:
    dirs: list[Path] = []
    for i, a in enumerate(flags):
        val = None
        if a in ("-I", "-isystem", "--include-path", "--system-include") and i + 1 < len(flags):
            val = flags[i + 1]
        elif a.startswith("-I"):
            val = a[2:]
        elif a.startswith(("--include-path=", "--system-include=")):
            val = a.split("=", 1)[1]
        if val:
            p = Path(val)
            dirs.append(p if p.is_absolute() else cwd / p)
    dirs.append(toolchain.nvcc.resolve().parent.parent / "include")
    return tuple(dirs)


def _includes(path: Path, include_dirs: Sequence[Path]) -> list[tuple[int, Path]]:
    text = _read_text(str(path))
    if text is None:
        return []
    found: list[tuple[int, Path]] = []
    for m in _INCLUDE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        dirs = [path.parent, *include_dirs] if m.group(1) == '"' else list(include_dirs)
        for d in dirs:
            cand = d / m.group(2)
            if cand.is_file():
                found.append((line, cand.resolve()))
                break
    return found


def local_headers(source: Path, flags: Sequence[str], toolchain: Toolchain, limit: int = 500) -> tuple[Path, ...]:
    """Headers `source` includes, directly or not, that are not the toolchain's own: a result
    computed from `source` is stale when one of them changes."""
    dirs = _include_dirs(flags, source.parent, toolchain)
    system = toolchain.nvcc.resolve().parent.parent
    seen: dict[Path, None] = {}
    todo = [source]
    while todo and len(seen) < limit:
        for _, header in _includes(todo.pop(), dirs):
            if header not in seen and not header.is_relative_to(system) and not str(header).startswith("/usr/"):
                seen[header] = None
                todo.append(header)
    return tuple(seen)


def include_line_for(source: Path, header: Path, include_dirs: Sequence[Path], limit: int = 2000) -> int | None:
    """The line of `source` whose #include reaches `header`, directly or through other headers."""
    header = header.resolve()
    for line, first in _includes(source, include_dirs):
        seen: set[Path] = set()
        todo = [first]
        while todo and len(seen) < limit:
            h = todo.pop()
            if h == header:
                return line
            if h in seen:
                continue
            seen.add(h)
            todo += [p for _, p in _includes(h, include_dirs)]
    return None


# ---------------------------------------------------------------------------------------------
# Device-only fallback

_DEVICE_QUALIFIER = re.compile(rb"\b__(?:global|device)__\b|__attribute__\s*\(\(\s*(?:global|device)")
_CONTAINERS = {"translation_unit", "preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef",
               "namespace_definition", "declaration_list", "linkage_specification"}


def namespace_scope(node) -> Iterator:
    """The syntax nodes at namespace scope under `node`: inside namespaces, `extern "C"` blocks
    and `#if` branches too."""
    for child in node.named_children:
        if child.type in _CONTAINERS:
            yield from namespace_scope(child)
        else:
            yield child


def _namespace_functions(source: bytes, tree):
    """(definition, its body or None, its signature's bytes) of each function defined at namespace
    scope, a template's included (the definition node is the template's)."""
    for child in namespace_scope(tree.root_node):
        if child.type not in ("function_definition", "template_declaration"):
            continue
        fn = child if child.type == "function_definition" else next(
            (c for c in child.named_children if c.type == "function_definition"), None)
        if fn is None:
            continue
        body = fn.child_by_field_name("body")
        yield child, body, source[child.start_byte:body.start_byte if body else fn.end_byte]


def host_function_spans(source: bytes, tree=None) -> list[tuple[int, int]]:
    """Byte spans of host-only function definitions at namespace scope (tree-sitter-cuda; `tree`
    is `source`'s, when the caller has parsed it already).

    Methods inside classes and constexpr functions are kept: device code may call them
    (--expt-relaxed-constexpr), and removing a method changes the class.
    """
    return [(_declaration(d).start_byte, d.end_byte)
            for d, _, signature in _namespace_functions(source, tree or _parser().parse(source))
            if not _DEVICE_QUALIFIER.search(signature) and b"constexpr" not in signature]


def _declaration(definition):
    """The whole declaration a definition is: `extern "C" void f() {...}` without braces around it
    is one linkage specification, whose `extern "C"` left alone does not compile (Rodinia's
    backprop_cuda.cu)."""
    parent = definition.parent
    if parent is not None and parent.type == "linkage_specification" and parent.child_by_field_name("body") == definition:
        return parent
    return definition


_HOST_QUALIFIER = re.compile(rb"\b__host__\b|__attribute__\s*\(\(\s*host")


def comment_spans(source: bytes, tree=None) -> list[tuple[int, int]]:
    """Byte spans of the comments of `source` (tree-sitter-cuda), outermost first."""
    tree = tree or _parser().parse(source)
    out, todo = [], [tree.root_node]
    while todo:
        node = todo.pop()
        if node.type == "comment":
            out.append((node.start_byte, node.end_byte))
        else:
            todo.extend(node.children)
    return sorted(out)


def device_body_spans(source: bytes, tree=None) -> list[tuple[int, int]]:
    """Byte spans of the insides of the bodies of kernels and `__device__`-only functions at
    namespace scope: code the host never runs, so the launches a program makes do not depend on it
    (launch capture keys its runs by the rest: analysis/capture/capture.py)."""
    return [(body.start_byte + 1, body.end_byte - 1)  # the braces stay
            for _, body, signature in _namespace_functions(source, tree or _parser().parse(source))
            if body is not None and body.type == "compound_statement" and _DEVICE_QUALIFIER.search(signature)
            and not _HOST_QUALIFIER.search(signature) and b"constexpr" not in signature]


def blank_spans(source: bytes, spans: Iterable[tuple[int, int]]) -> bytes:
    """Replace the spans with spaces, keeping newlines so every line number stays the same."""
    out = bytearray(source)
    for start, end in spans:
        for i in range(start, end):
            if out[i] not in (0x0A, 0x0D):
                out[i] = 0x20
    return bytes(out)


def _line_spans(source: bytes) -> list[int]:
    """Byte offset of the start of each line (index 0 = line 1)."""
    starts = [0]
    starts += [i + 1 for i, b in enumerate(source) if b == 0x0A]
    return starts


def _device_only(source: Path, source_bytes: bytes, messages: Sequence[CompilerMessage], arch: str,
                 toolchain: Toolchain, flags: Sequence[str], cwd: Path, workdir: Path, timeout: float,
                 cancel: CancelToken | None) -> tuple[list[str], str, bytes] | None:
    """Compile again without host functions when every error lies in host code; None when that does not apply."""
    errors = [m for m in messages if m.severity == "error"]
    if not errors:
        return None
    spans = host_function_spans(source_bytes)
    starts = _line_spans(source_bytes)
    host_lines: set[int] = set()
    for s, e in spans:
        first = _line_of(starts, s)
        host_lines.update(range(first, _line_of(starts, max(s, e - 1)) + 1))
    missing_includes: list[tuple[int, int]] = []
    for m in errors:
        if m.line is None:
            return None  # nvcc option or ptxas errors: device code is the problem, or nothing is
        if m.origin_file is None and m.line in host_lines:
            continue
        if m.tool == "host compiler" and "No such file" in m.message and m.origin_file is None:
            # A host header that is not installed (gcc stops at it): drop that #include line.
            lo = starts[m.line - 1]
            hi = starts[m.line] if m.line < len(starts) else len(source_bytes)
            missing_includes.append((lo, hi))
            continue
        return None
    blanked = blank_spans(source_bytes, [*spans, *missing_includes])
    # #line keeps diagnostics and -lineinfo pointing at the user's file; -I its folder keeps
    # its quoted includes resolving as before.
    device_src = workdir / f"{source.stem}.device_only{source.suffix or '.cu'}"
    device_src.write_bytes(b'#line 1 "' + str(source).replace("\\", "\\\\").encode() + b'"\n' + blanked)
    cubin_path = workdir / f"{source.stem}.cubin"
    argv = nvcc_argv(device_src, cubin_path, arch, toolchain, [*flags, f"-I{source.parent}"])
    output, rc = _run_nvcc(argv, toolchain, cwd, timeout, cancel)
    cubin = _read_cubin(cubin_path) if rc == 0 else None
    return (argv, output, cubin) if cubin is not None else None


def _line_of(starts: Sequence[int], offset: int) -> int:
    return bisect.bisect_right(starts, offset)
