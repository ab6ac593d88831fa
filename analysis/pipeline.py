"""The whole static pipeline for one file: compile -> program -> facts -> profile -> advice.

`analyze` is the single entry point the CLI and the language server call. Apart from running
the compiler it is a pure function of (file content, options, toolchain), so its result can be
cached under `AnalysisOptions.cache_key`.
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from .arch import ArchCatalog, load_arch_specs
from .compile import CompileResult, CompilerMessage, KernelResources, compile_cuda
from .options import AnalysisOptions
from .process import CancelToken
from .program import FunctionProgram, Program, build_program
from .results import AnalysisResult, KernelReport, Message, Resources, ToolchainInfo
from .sass import disassemble
from .source import SourceModel, parse_source
from .static_facts import kernel_facts
from .toolchain import Toolchain, find_compile_command, locate_toolchain

#: progress(stage, fraction) — fraction in 0..1 of the whole analysis
Progress = Callable[[str, float], None]


def source_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def resolve_toolchain(source: Path, options: AnalysisOptions) -> Toolchain:
    """The toolchain an analysis of `source` would use (the server keys its cache on its version)."""
    cc = find_compile_command(source, options.compile_commands) if options.compile_commands else None
    return locate_toolchain(options.nvcc_path, cc)


def _message(m: CompilerMessage) -> Message:
    origin = f"{m.origin_file}:{m.origin_line}" if m.origin_file and m.origin_line else m.origin_file
    source = "ptxas" if m.tool == "ptxas" else "nvcc"
    return Message(file=m.file, line=m.line, column=m.column, severity=m.severity, message=m.message,
                   source=source, origin=origin)


def _resources(r: KernelResources) -> Resources:
    return Resources(registers=r.registers, barriers=r.barriers, static_smem=r.shared_bytes,
                     constant_bytes=sum(r.constant_bytes.values()), stack_frame=r.stack_frame_bytes,
                     spill_stores=r.spill_store_bytes, spill_loads=r.spill_load_bytes, local_bytes=r.local_bytes)


def _note(path: Path, text: str, severity: str = "info") -> Message:
    return Message(file=str(path), line=None, column=None, severity=severity, message=text, source="kernelscope")


def analyze(source: Path, options: AnalysisOptions, *, cancel: CancelToken | None = None,
            progress: Progress | None = None, toolchain: Toolchain | None = None,
            measured_report: Path | None = None) -> AnalysisResult:
    """Analyse the file on disk at `source` (editors analyse what was saved).

    Raises ToolchainError / CompileSetupError / ArchSpecError for setup problems (the caller
    shows their message); compiler errors in the file are results, not exceptions.
    """
    cancel = cancel or CancelToken()
    report = progress or (lambda stage, fraction: None)
    timings: dict[str, float] = {}
    source = source.resolve()
    data = source.read_bytes()
    digest = source_digest(data)
    catalog = load_arch_specs(options.arch_file)
    arch = catalog.arch(options.arch)
    device = catalog.device(options.device) if options.device else catalog.default_device(arch)
    toolchain = toolchain or resolve_toolchain(source, options)
    cc = find_compile_command(source, options.compile_commands) if options.compile_commands else None
    base = dict(source=str(source), source_sha256=digest, arch=options.arch, device=device.name, flags=options.flags,
                toolchain=ToolchainInfo(nvcc=str(toolchain.nvcc), nvdisasm=str(toolchain.nvdisasm),
                                        version=toolchain.version, origin=toolchain.origin))

    report("compile", 0.0)
    t = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kernelscope-") as work:
        compiled = compile_cuda(source, arch=options.arch, user_flags=options.flags, toolchain=toolchain,
                                compile_command=cc, cancel=cancel, timeout=options.compile_timeout_s,
                                workdir=Path(work))
        timings["compile"] = time.perf_counter() - t
        messages = [_message(m) for m in compiled.messages]
        if compiled.device_only:
            messages.append(_note(source, compiled.note, "warning"))
        if not compiled.success or compiled.cubin_path is None:
            return AnalysisResult(**base, compiled=False, messages=tuple(messages), timings=timings)
        cancel.check()
        report("disassemble", 0.5)
        t = time.perf_counter()
        module = disassemble(compiled.cubin_path, toolchain.nvdisasm, cancel=cancel)
        timings["disassemble"] = time.perf_counter() - t

    t = time.perf_counter()
    text = data.decode("utf-8", errors="replace")
    src = parse_source(text)
    program = build_program(module, src, str(source), {r.name: _resources(r) for r in compiled.resources})
    timings["program"] = time.perf_counter() - t
    cancel.check()

    report("model", 0.7)
    kernels = tuple(_kernel_report(program, fn, catalog, options) for fn in program.kernels)
    if not kernels:
        messages.append(_note(source, "no kernels (__global__ functions) in this file"))
    return AnalysisResult(**base, compiled=True, device_only=compiled.device_only, messages=tuple(messages),
                          kernels=kernels, timings=timings)


def _kernel_report(program: Program, fn: FunctionProgram, catalog: ArchCatalog,
                   options: AnalysisOptions) -> KernelReport:
    arch = catalog.arch(options.arch)
    facts = kernel_facts(program, fn, arch, options.default_trip_count)
    return KernelReport(
        name=fn.name, mangled=fn.mangled, line=fn.source_line, end_line=fn.source_end_line,
        resources=fn.resources or Resources(registers=0), launch=None, occupancy=None,
        instruction_mix=facts.instruction_mix, flops_per_thread=facts.flops_per_thread,
        bytes_per_thread=facts.bytes_per_thread, facts=facts.facts, lines=facts.lines,
    )
