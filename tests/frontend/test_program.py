"""The program model's SASS loops, checked against nvdisasm's own listing of the same cubin.

sgemm_naive's k loop has a run-time bound (`n`), so the compiler unrolls it with remainder
loops: NVVM by 4 with a rolled remainder, and ptxas the 4-way loop again. Each source
iteration loads A[..] and B[..] (two LDG on one line), so a SASS loop body holding 2k LDG runs
k source iterations per trip.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from kernelscope.analysis.frontend.compile import compile_cuda
from kernelscope.analysis.frontend.program import FunctionProgram, build_program
from kernelscope.analysis.frontend.resources import by_function
from kernelscope.analysis.frontend.sass import disassemble
from kernelscope.analysis.frontend.source import parse_source

LOADS_PER_ITERATION = 2  # acc += A[row * n + k] * B[k * n + col];

_INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
_LABEL = re.compile(r"^\s*(\.L_x_\d+):")
_BRANCH = re.compile(r"\bBRA\s+`\((\.L_x_\d+)\)")


@pytest.fixture(scope="module")
def compiled(toolchain, examples_dir, tmp_path_factory) -> tuple[FunctionProgram, str]:
    path = examples_dir / "sgemm_naive.cu"
    work = tmp_path_factory.mktemp("program")
    res = compile_cuda(path, arch="sm_90", toolchain=toolchain, workdir=work)
    assert res.success, [m.message for m in res.errors]
    program = build_program(disassemble(res.cubin_path, toolchain.nvdisasm), parse_source(path.read_text()),
                            str(path), by_function(res.resources))
    listing = subprocess.run([str(toolchain.nvdisasm), "-c", str(res.cubin_path)], capture_output=True,
                             text=True, check=True).stdout
    (kernel,) = program.kernels
    return kernel, listing


def _nvdisasm_loops(listing: str) -> dict[int, int]:
    """Header PC -> LDG count of each backward branch's span [target, branch]; no loop nests here.

    The `BRA` to itself after the last EXIT is nvdisasm's end-of-code padding, not a loop.
    """
    instructions: list[tuple[int, str]] = []
    labels: dict[str, int] = {}
    pending: list[str] = []
    for line in listing.splitlines():
        if (m := _LABEL.match(line)) is not None:
            pending.append(m.group(1))
        elif (m := _INSTRUCTION.search(line)) is not None:
            pc = int(m.group(1), 16)
            instructions.append((pc, m.group(2)))
            labels.update((name, pc) for name in pending)
            pending = []
    loops = {}
    for pc, text in instructions:
        if (m := _BRANCH.search(text)) is not None and labels[m.group(1)] < pc:
            head = labels[m.group(1)]
            loops[head] = sum(1 for p, t in instructions if head <= p <= pc and re.search(r"\bLDG\b", t))
    return loops


def test_unrolled_loop_roles_and_factors_match_the_sass(compiled):
    kernel, listing = compiled
    expected = _nvdisasm_loops(listing)
    assert len(expected) >= 2, "the k loop is expected to be unrolled with a remainder loop"
    assert all(n % LOADS_PER_ITERATION == 0 for n in expected.values()), expected

    cfg = kernel.cfg
    found = {cfg.blocks[loop.header].start_pc: info for loop, info in zip(cfg.loops, kernel.loops)}
    assert set(found) == set(expected)
    k_line = 27  # `for (int k = 0; k < n; ++k)`
    for pc, ldg in expected.items():
        info = found[pc]
        assert info.source_line == k_line
        assert info.unroll_factor == ldg // LOADS_PER_ITERATION, (hex(pc), info)

    by_pc = sorted(found.items())
    factors = [info.unroll_factor for _, info in by_pc]
    main_pc, main = max(by_pc, key=lambda item: item[1].unroll_factor)
    assert main.role == "main" and main.max_trip_count is None
    assert [info.role for _, info in by_pc].count("main") == 1
    assert main.unroll_factor >= 4  # NVVM's runtime unroll by 4 at least
    remainders = [(pc, info) for pc, info in by_pc if info.role == "remainder"]
    assert len(remainders) == len(by_pc) - 1
    assert all(pc > main_pc for pc, _ in remainders)  # placed after the main loop
    assert min(factors) == 1  # the last remainder is rolled
    for _, info in remainders:
        assert main.unroll_factor % info.unroll_factor == 0
        # fewer source iterations than the next larger factor remain for it
        larger = min(f for f in factors if f > info.unroll_factor)
        assert info.max_trip_count == (larger - 1) // info.unroll_factor
        assert info.max_trip_count * info.unroll_factor < main.unroll_factor


def test_a_lone_loop_is_the_only_one(toolchain, tmp_path):
    src = tmp_path / "k.cu"
    src.write_text(
        "__global__ void k(float* a, int n) {\n"
        "#pragma unroll 1\n"
        "  for (int i = threadIdx.x; i < n; i += blockDim.x) a[i] *= 2.0f;\n"
        "}\n"
    )
    res = compile_cuda(src, arch="sm_90", toolchain=toolchain, workdir=tmp_path)
    assert res.success, [m.message for m in res.errors]
    program = build_program(disassemble(res.cubin_path, toolchain.nvdisasm), parse_source(src.read_text()),
                            str(src), by_function(res.resources))
    (kernel,) = program.kernels
    (info,) = kernel.loops
    assert (info.role, info.unroll_factor, info.max_trip_count, info.source_line) == ("only", 1, None, 3)
