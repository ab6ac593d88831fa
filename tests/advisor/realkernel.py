"""Compile a real CUDA snippet with the real toolchain, emulate it, and run the advisor on it.

This follows the pipeline's own stages (compile -> disassemble -> program -> facts -> emulate
-> advise) so the tests exercise exactly what users get.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from kernelscope.analysis.advisor.advice import Advice
from kernelscope.analysis.advisor.ranking import advise
from kernelscope.analysis.context import AnalysisContext
from kernelscope.analysis.machine.arch import load_arch_specs
from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.frontend.program import Program
from kernelscope.analysis.machine.roofline import roofline_model


@dataclass(frozen=True)
class Analysed:
    program: Program
    advice: tuple[Advice, ...]
    source: str

    def by(self, optimizer: str) -> list[Advice]:
        """The items `optimizer` found: its own, and those it shares with another's (one fix, one item:
        `x[4 * i + j]` is both a strided access and four loads one float4 makes)."""
        return [a for a in self.advice if a.optimizer == optimizer or optimizer in a.also]

    def line_of(self, marker: str) -> int:
        """1-based line holding `marker` in the source."""
        return next(n for n, t in enumerate(self.source.splitlines(), 1) if marker in t)


def analyse(source: str, toolchain, tmp_path: Path, *, emulate: bool = True, arch: str = "sm_90",
            options: AnalysisOptions | None = None, with_what_if: bool = False) -> Analysed:
    from kernelscope.analysis.frontend.compile import compile_cuda
    from kernelscope.analysis.emulator.launch import resolve_launch
    from kernelscope.analysis.frontend.resources import by_function
    from kernelscope.analysis.frontend.program import build_program
    from kernelscope.analysis.frontend.sass import disassemble
    from kernelscope.analysis.frontend.source import parse_source
    from kernelscope.analysis.advisor.static_facts import kernel_facts

    options = options or AnalysisOptions(arch=arch)
    path = tmp_path / "k.cu"
    path.write_text(source)
    with tempfile.TemporaryDirectory() as work:
        compiled = compile_cuda(path, arch=options.arch, user_flags=(), toolchain=toolchain, compile_command=None,
                                timeout=120, workdir=Path(work))
        assert compiled.success, [m.message for m in compiled.messages]
        module = disassemble(compiled.cubin_path, toolchain.nvdisasm)
    src = parse_source(source)
    program = build_program(module, src, str(path), by_function(compiled.resources))
    cat = load_arch_specs()
    arch_spec = cat.arch(options.arch)
    device = cat.default_device(arch_spec)
    launches = {fn.mangled: resolve_launch(fn.name, src, options, device.sm_count) for fn in program.kernels}
    executed = {}
    if emulate:  # the walked warp's memory shapes, as the pipeline gives the facts (stages._executed)
        from kernelscope.analysis.advisor.static_facts import executed_shapes
        from kernelscope.analysis.emulator.model import EmulationError, prepare
        for fn in program.kernels:
            try:
                executed[fn.mangled] = executed_shapes(prepare(AnalysisContext.of(arch_spec, device, options, src, program), fn))
            except EmulationError:
                pass
    facts = {fn.mangled: kernel_facts(program, fn, arch_spec, options.default_trip_count,
                                      block=launches[fn.mangled].launch.block, values=launches[fn.mangled].values,
                                      executed=executed.get(fn.mangled)).facts
             for fn in program.kernels}
    profiles, what_ifs = [], {}
    if emulate:
        try:
            from kernelscope.analysis.emulator import emulate as run_emulator
        except ImportError as e:  # the emulator is optional at this stage of the project
            pytest.skip(f"emulator unavailable: {e}")
        from kernelscope.analysis.emulator import what_if
        profiles = [run_emulator(AnalysisContext.of(arch_spec, device, options, src, program=program), fn) for fn in program.kernels]
        if with_what_if:
            what_ifs = {fn.mangled: what_if(AnalysisContext.of(arch_spec, device, options, src, program=program), fn) for fn in program.kernels}
    context = replace(AnalysisContext.of(arch_spec, device, options, src, program=program), text=source)
    adv = advise(context, profiles, facts=facts,
                 roofline_model=roofline_model(cat, device), what_if=what_ifs, memory=executed)
    return Analysed(program=program, advice=adv, source=source)
