"""Memory-access facts (uncoalesced global accesses, shared bank conflicts) on real compiled kernels.

The facts come from the emulator's address analysis with the launch's block shape, through the
pipeline's own `analyze`; lines are found by searching the source text.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.pipeline import analyze
from kernelscope.analysis.results import KernelReport

OPTIONS = AnalysisOptions(arch="sm_90", emulate=False)


def line_of(text: str, marker: str) -> int:
    return next(n for n, t in enumerate(text.splitlines(), 1) if marker in t)


def kernel(path: Path, toolchain, name: str) -> KernelReport:
    result = analyze(path, OPTIONS, toolchain=toolchain)
    assert result.compiled, [m.message for m in result.messages]
    return next(k for k in result.kernels if k.name.startswith(name))


def facts(k: KernelReport, kind: str, line: int | None = None):
    return [f for f in k.facts if f.kind == kind and (line is None or f.line == line)]


def test_strided_read_is_uncoalesced(examples_dir, toolchain):
    path = examples_dir / "strided_access.cu"
    k = kernel(path, toolchain, "strided_copy")
    read = line_of(path.read_text(), "in[(size_t)i * stride]")
    (fact,) = facts(k, "uncoalesced_access")
    assert fact.line == read
    # stride 32 floats: every lane its own sector (32), where a coalesced warp read touches 4.
    assert re.search(r"\b32 32-byte sectors\b", fact.detail) and "touches 4" in fact.detail, fact.detail
    assert "128 B apart" in fact.detail, fact.detail
    assert not facts(k, "bank_conflict")


def test_sgemm_naive_loads_are_not_uncoalesced(examples_dir, toolchain):
    """B[k*n+col] is coalesced along threadIdx.x; A[row*n+k] is the same word for a row of threads."""
    path = examples_dir / "sgemm_naive.cu"
    k = kernel(path, toolchain, "sgemm_naive")
    loads = line_of(path.read_text(), "A[row * n + k] * B[k * n + col]")
    sass = next(lr.sass for lr in k.lines if lr.line == loads)
    assert sum("LDG" in s for s in sass) >= 2  # the analysis had the loads to look at
    assert not facts(k, "uncoalesced_access"), [f.detail for f in k.facts]


SHARED = """
__global__ void transpose_tile(const float* __restrict__ in, float* __restrict__ out)
{
    __shared__ float s[32 * 32 + 32];
    unsigned t = threadIdx.x;
    s[t * STRIDE] = in[blockIdx.x * 32 + t];  // WRITE
    __syncthreads();
    out[blockIdx.x * 32 + t] = s[t * STRIDE] * 2.0f;  // READ
}

void run(const float* in, float* out) { transpose_tile<<<1024, 32>>>(in, out); }
"""


@pytest.mark.parametrize("stride, ways", [(32, 32), (2, 2), (1, None), (33, None)])
def test_shared_bank_conflicts(stride, ways, toolchain, tmp_path):
    src = f"#define STRIDE {stride}\n" + SHARED
    path = tmp_path / "k.cu"
    path.write_text(src)
    k = kernel(path, toolchain, "transpose_tile")
    found = facts(k, "bank_conflict")
    if ways is None:  # s[t] and s[t * 33]: lanes hit 32 distinct banks
        assert not found, [f.detail for f in found]
        return
    assert sorted(f.line for f in found) == [line_of(src, "// WRITE"), line_of(src, "// READ")]
    for f in found:
        assert f.detail.startswith(f"{ways}-way shared-memory bank conflict"), f.detail
        assert f"{4 * stride} B apart" in f.detail, f.detail
    assert not facts(k, "uncoalesced_access")


def test_no_memory_facts_without_a_block(examples_dir, toolchain):
    """Which threads share a warp is a launch fact: without the block shape nothing is claimed."""
    import tempfile

    from kernelscope.analysis.machine.arch import load_arch_specs
    from kernelscope.analysis.frontend.compile import compile_cuda
    from kernelscope.analysis.frontend.program import build_program
    from kernelscope.analysis.frontend.sass import disassemble
    from kernelscope.analysis.frontend.source import parse_source
    from kernelscope.analysis.advisor.static_facts import kernel_facts

    path = examples_dir / "strided_access.cu"
    with tempfile.TemporaryDirectory() as work:
        compiled = compile_cuda(path, arch="sm_90", user_flags=(), toolchain=toolchain, compile_command=None,
                                timeout=120, workdir=Path(work))
        module = disassemble(compiled.cubin_path, toolchain.nvdisasm)
    program = build_program(module, parse_source(path.read_text()), str(path), {})
    arch = load_arch_specs().arch("sm_90")
    (fn,) = program.kernels
    assert not [f for f in kernel_facts(program, fn, arch).facts if f.kind == "uncoalesced_access"]
    with_block = kernel_facts(program, fn, arch, block=(256, 1, 1), values={"n": 1 << 20, "stride": 32})
    assert [f.kind for f in with_block.facts].count("uncoalesced_access") == 1
