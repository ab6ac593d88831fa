"""The whole static pipeline for one file: compile -> program -> facts -> profile -> advice.

`analyze` is the single entry point the CLI and the language server call. Apart from running
the compiler it is a pure function of (file content, options, toolchain), so its result can be
cached under `AnalysisOptions.cache_key`.
"""

from __future__ import annotations

import hashlib
import importlib
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Literal
from pathlib import Path

from .collector import young_only
from .context import AnalysisContext, ProgramInputs
from .files import read_regular
from .frontend.compile import CompilerMessage, CompileSetupError, compile_cuda, invocation, local_headers
from .frontend.inclusion import compile_in_context, inclusion_context, is_header
from .frontend.prelaunch import Prelaunch
from .frontend.toolchain import Toolchain, find_compile_command, locate_toolchain
from .options import AnalysisOptions
from .process import CancelToken
from .results import AnalysisResult, Message, ToolchainInfo
from .speculation import Speculation

#: the stages after the compile (`stages.py`, and the SASS reader), imported on a thread while
#: nvcc runs: their imports are about half of the command line's start-up, and the compile waits
#: on a child process that leaves this one idle
_LATE_STAGES = (f"{__package__}.frontend.disassembly", f"{__package__}.stages")


#: architectures whose SASS decoding table this process has loaded (`load_late_stages`)
_DECODER_READY: set[str] = set()


def load_late_stages(arch: str | None = None) -> None:
    """Import the stages after the compile now: what a long-running caller (the language
    server) does once at start-up, so that no analysis shares the interpreter with the import.
    With `arch`, also load its SASS decoding table; a cubin builds the decoders of the opcodes it
    uses as it is decoded (building all of them, ~70 ms in a new process, outlasted nvcc)."""
    for name in _LATE_STAGES:
        importlib.import_module(name)
    if arch is not None and arch not in _DECODER_READY:
        from .frontend.cubin.encoding import arch_table

        arch_table(arch)
        _DECODER_READY.add(arch)

#: progress(stage, fraction) — fraction in 0..1 of the whole analysis
Progress = Callable[[str, float], None]


def source_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def input_digest(source: Path, options: AnalysisOptions, toolchain: Toolchain, data: bytes | None = None) -> str:
    """The content hash a cached result of `source` is valid for: the file (`data`, its bytes as the
    caller read them, else read here) and its local headers."""
    h = hashlib.sha256(read_regular(source) if data is None else data)
    # a header is analysed in the unit of a file that includes it (analysis/frontend/inclusion.py)
    context = inclusion_context(source, options.flags, toolchain, options.compile_commands) if is_header(source) else None
    unit = context.unit if context is not None else source
    for header in ((unit,) if unit != source else ()) + local_headers(unit, options.flags, toolchain):
        try:
            h.update(str(header).encode() + b"\0" + read_regular(header))
        except OSError:
            h.update(str(header).encode() + b"\0missing")
    return h.hexdigest()


def resolve_toolchain(source: Path, options: AnalysisOptions) -> Toolchain:
    """The toolchain an analysis of `source` would use (the server keys its cache on its version)."""
    cc = find_compile_command(source, options.compile_commands)
    return locate_toolchain(options.nvcc_path, cc)


def begin_compile(source: Path, options: AnalysisOptions, toolchain: Toolchain,
                  cancel: CancelToken | None = None) -> Prelaunch | None:
    """The compile `analyze(source, options)` will run, started now, for that analysis to adopt
    (`prelaunch=`): a caller that resolves more before it (launch capture, which changes the launches
    and not the compile) does it while nvcc compiles. None for a header (the unit compiled is a file
    that includes it) and for an invocation that must not run (the analysis then says why). `cancel`
    stops it, as it stops the analysis's own."""
    source = source.resolve()
    if is_header(source):
        return None
    cc = find_compile_command(source, options.compile_commands)
    try:
        run = invocation(source, arch=options.arch, user_flags=options.flags, toolchain=toolchain, compile_command=cc)
    except CompileSetupError:
        return None
    cubin = Path(f"{source.stem}.cubin")  # stands for where the analysis's compile writes (prelaunch.py)
    return Prelaunch.now(run.argv(cubin), run.cwd, toolchain.env, cubin, cancel)


def _message(m: CompilerMessage) -> Message:
    origin = f"{m.origin_file}:{m.origin_line}" if m.origin_file and m.origin_line else m.origin_file
    source = "ptxas" if m.tool == "ptxas" else "nvcc"
    return Message(file=m.file, line=m.line, column=m.column, severity=m.severity, message=m.message,
                   source=source, origin=origin)


@young_only()  # the heap it builds lives until the result: not walked again and again (collector.py)
def analyze(source: Path, options: AnalysisOptions, *, cancel: CancelToken | None = None,
            progress: Progress | None = None, toolchain: Toolchain | None = None,
            measured_report: Path | None = None, depth: Literal["quick", "full"] = "full",
            on_partial: Callable[[AnalysisResult], None] | None = None,
            prelaunch: Prelaunch | None = None, context: AnalysisContext | None = None) -> AnalysisResult:
    """Analyse the file on disk at `source` (editors analyse what was saved).

    `depth="quick"` stops after one emulation per kernel; "full" adds sensitivity and what-if
    (bottleneck resource, block-size and SM-count sweeps), calling `on_partial` with the quick
    result first so an editor can show it while the rest runs.

    Raises ToolchainError / CompileSetupError / ArchSpecError for setup problems (the caller
    shows their message); compiler errors in the file are results, not exceptions.
    `prelaunch` is the command line's head start on the compile (frontend/prelaunch.py).
    `context`: what the caller resolved before (`AnalysisContext.resolve`, through
    `application.resolve_context`): its arch catalog, and the file's bytes when it read `source`. The
    analysis takes both rather than loading or reading them again, so the text the caller shows is
    the text analysed; it resolves the arch and the device for `options` (capture, run between,
    adds launches to the options, never another arch).
    """
    cancel = cancel or CancelToken()
    report = progress or (lambda stage, fraction: None)
    timings: dict[str, float] = {}
    source = source.resolve()
    if context is not None and context.path == source:
        data = context.data
    else:
        data = read_regular(source)  # a FIFO or a link to /dev/zero under a .cu name: an OSError, not a hang
    digest = source_digest(data)
    ctx = AnalysisContext.resolve(options, catalog=context.catalog if context is not None else None, path=source,
                                  data=data, measured_report=measured_report)
    device = ctx.device
    toolchain = toolchain or resolve_toolchain(source, options)
    ctx = replace(ctx, toolchain=toolchain)
    cc = find_compile_command(source, options.compile_commands)
    base = dict(source=str(source), source_sha256=digest, arch=options.arch, device=device.name, flags=options.flags,
                toolchain=ToolchainInfo(nvcc=str(toolchain.nvcc), nvdisasm=str(toolchain.nvdisasm),
                                        version=toolchain.version, origin=toolchain.origin))

    loading = None
    if options.arch not in _DECODER_READY or not all(name in sys.modules for name in _LATE_STAGES):
        # while nvcc runs (benchmarks/analyze.py, the static path of noinline_call and sgemm_tiled:
        # 0.43-0.46 s when this also built every opcode's decoder, 0.37-0.40 s without, nvcc 0.23 s)
        loading = threading.Thread(target=load_late_stages, args=(options.arch,), daemon=True,
                                   name="kernelscope-import")
        loading.start()
    # The quick stage run on NVRTC's cubin while nvcc compiles, taken if nvcc's gives the same
    # inputs. Only in a process that has the later stages loaded (the language server): a command
    # line's one analysis spends nvcc's time importing them, and its prelaunched nvcc ends first
    # (benchmarks/analyze.py: median 3.28x nvcc with a run ahead, 2.72x without, same hour).
    ahead = None if loading is not None or is_header(source) or measured_report else Speculation.begin(ctx, cc)
    try:
        report("compile", 0.0)
        t = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="kernelscope-") as work:
            def compile_unit(unit: Path):
                unit_cc = cc if unit == source else find_compile_command(unit, options.compile_commands)
                # the file's bytes as the context read them (its device-only fallback blanks them)
                return compile_cuda(unit, arch=options.arch, user_flags=options.flags, toolchain=toolchain,
                                    compile_command=unit_cc, cancel=cancel, timeout=options.compile_timeout_s,
                                    workdir=Path(work), prelaunch=prelaunch,
                                    source_bytes=ctx.data if unit == source else None)

            compiled, includer = compile_in_context(source, options.flags, toolchain, options.compile_commands,
                                                    compile_unit)
            unit = includer.unit if includer is not None else source
            timings["compile"] = time.perf_counter() - t
            messages = [_message(m) for m in compiled.messages]
            if includer is not None:
                messages.append(Message.note(
                    source, f"analysed in the translation unit of {unit}, which includes this file"))
            if compiled.device_only:
                messages.append(Message.note(source, compiled.note, "warning"))
            if not compiled.success or compiled.cubin_path is None:
                return AnalysisResult(**base, compiled=False, messages=tuple(messages), timings=timings)
            cancel.check()
            report("disassemble", 0.5)
            t = time.perf_counter()
            if loading is not None:  # what the thread builds, the decoder would otherwise build now
                loading.join()
            from .frontend.disassembly import read_sass

            module = read_sass(compiled.cubin, compiled.cubin_path, toolchain.nvdisasm, cancel=cancel)
            timings["disassemble"] = time.perf_counter() - t

        from . import stages

        inputs = ProgramInputs.of(module, compiled.resources, compiled.command, options.arch, toolchain)
        ctx = replace(ctx, unit=unit, inputs=inputs)
        taken = None
        if ahead is not None:
            t = time.perf_counter()
            taken = ahead.take(inputs) if unit == source else None
            ahead.close()  # not taken: stopped now, not when the second stage ends
            if taken is not None:
                timings["model"] = time.perf_counter() - t  # the wait for what was run ahead to end
        return stages.model_file(ctx, compiled, messages, base, timings, cancel, report, depth, on_partial, taken)
    finally:
        if ahead is not None:
            ahead.close()
