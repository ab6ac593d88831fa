"""Compile an example and build its Program with the project's own stages (no mocks)."""

from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path

from kernelscope.analysis.frontend.compile import compile_cuda
from kernelscope.analysis.frontend.conditional import compile_passes
from kernelscope.analysis.frontend.program import Program, build_program
from kernelscope.analysis.frontend.resources import by_function
from kernelscope.analysis.frontend.sass import disassemble
from kernelscope.analysis.frontend.source import parse_source


#: programs built in this test process, by (file, its content, compiler, arch, flags): the corpus
#: checks of several modules read the same programs, and a Program is immutable
_BUILT: dict[tuple, Program] = {}


def build_example(path: Path, toolchain, arch: str = "sm_90", flags: tuple[str, ...] = ()) -> Program:
    key = (str(path), hashlib.sha256(path.read_bytes()).hexdigest(), str(toolchain.nvcc), arch, tuple(flags))
    if key not in _BUILT:
        _BUILT[key] = _build(path, toolchain, arch, tuple(flags))
    return _BUILT[key]


def _build(path: Path, toolchain, arch: str, flags: tuple[str, ...]) -> Program:
    work = Path(tempfile.mkdtemp(prefix="ks-emu-"))
    res = compile_cuda(path, arch=arch, user_flags=flags, toolchain=toolchain, workdir=work)
    assert res.success, [m.message for m in res.errors]
    module = disassemble(res.cubin_path, toolchain.nvdisasm)
    resources = by_function(res.resources)
    source = parse_source(path.read_text(), compile_passes(res.command, arch, toolchain.version))  # as the pipeline reads it
    return build_program(module, source, str(path), resources)


ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "tests" / "data" / "real"  # real programs from public repositories (README there)
PUBLIC = ROOT / "tests" / "data" / "public-kernels"  # public kernels new to the model (README there)


#: fixtures that are not kernels to model: made not to compile (broken.cu), made to take minutes
#: (slow_template.cu), or compiled only through the file that includes them (kernels_impl.cu)
_NOT_MODELED = {"broken.cu", "slow_template.cu", "kernels_impl.cu"}
#: every kernel source the tests compile: the examples and each `.cu` under tests/
CORPUS = tuple(sorted((ROOT / "examples").glob("*.cu"))) + tuple(
    sorted(p for p in (ROOT / "tests").rglob("*.cu") if p.name not in _NOT_MODELED))


def real_flags(src: Path) -> tuple[str, ...]:
    """The nvcc flags that build `src`: a program of tests/data/real or a source of
    tests/data/public-kernels with its folder's build_flags.json (minus link flags: a -cubin
    compile links nothing), other cuda-samples code under tests/data with the samples' Common
    headers."""
    folder = next((f for f in (REAL, PUBLIC) if f in src.parents), None)
    if folder is None:
        return (f"-I{REAL / 'cuda-samples' / 'Common'}",) if "cuda-samples" in src.parts else ()
    table = json.loads((folder / "build_flags.json").read_text())
    named = (*table.get("*", ()), *table.get(src.relative_to(folder).as_posix(), ()))
    return tuple(f.format(real=folder) for f in named if not f.startswith("-l"))
