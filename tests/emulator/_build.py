"""Compile an example and build its Program with the project's own stages (no mocks)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from kernelscope.analysis.compile import compile_cuda
from kernelscope.analysis.program import Program, build_program
from kernelscope.analysis.results import Resources
from kernelscope.analysis.sass import disassemble
from kernelscope.analysis.source import parse_source


def build_example(path: Path, toolchain, arch: str = "sm_90", flags: tuple[str, ...] = ()) -> Program:
    work = Path(tempfile.mkdtemp(prefix="ks-emu-"))
    res = compile_cuda(path, arch=arch, user_flags=flags, toolchain=toolchain, workdir=work)
    assert res.success, [m.message for m in res.errors]
    module = disassemble(res.cubin_path, toolchain.nvdisasm)
    resources = {r.name: Resources(registers=r.registers, barriers=r.barriers, static_smem=r.shared_bytes,
                                   stack_frame=r.stack_frame_bytes, spill_stores=r.spill_store_bytes,
                                   spill_loads=r.spill_load_bytes, local_bytes=r.local_bytes)
                 for r in res.resources}
    source = parse_source(path.read_text())
    return build_program(module, source, str(path), resources)
