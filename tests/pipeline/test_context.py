"""The analysis context (analysis/context.py, issue 36): resolved once, frozen, and read by the
stages instead of resolving again. A real example's kernel is modeled from a context whose launch
was replaced: the emulator runs that launch, so it read the context, not the source."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from kernelscope.analysis.context import AnalysisContext
from kernelscope.analysis.emulator.launch import resolve_launch
from kernelscope.analysis.emulator.model import emulate, prepare
from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.pipeline import analyze
from kernelscope.analysis.profile import LaunchConfig

from emulator._build import build_example

REPO = Path(__file__).resolve().parents[2]


def test_the_context_resolves_each_kernel_once_and_the_emulator_reads_it(toolchain):
    program = build_example(REPO / "examples" / "sgemm_naive.cu", toolchain)
    ctx = AnalysisContext.resolve(AnalysisOptions()).with_program(program)
    (k,) = program.kernels
    resolved = resolve_launch(k.name, program.source, ctx.options, ctx.device.sm_count)
    assert ctx.launches[k.mangled] == resolved
    assert ctx.occupancy[k.mangled].block_size == resolved.launch.threads_per_block
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.program = None  # type: ignore[misc]
    # another launch in the context: the emulator models it, so it did not resolve the source again
    other = dataclasses.replace(resolved, launch=LaunchConfig(grid=(7, 1, 1), block=(64, 1, 1)))
    other_ctx = dataclasses.replace(ctx, launches={k.mangled: other})
    assert prepare(other_ctx, k).launch == other.launch != prepare(ctx, k).launch
    assert emulate(other_ctx, k).launch.grid == (7, 1, 1)


def test_the_pipeline_gives_the_same_result_as_a_context_built_apart(toolchain):
    """What `analyze` reports of a kernel's launch is what the context resolved for it."""
    source = REPO / "examples" / "strided_access.cu"
    result = analyze(source, AnalysisOptions(), toolchain=toolchain, depth="quick")
    program = build_example(source, toolchain)
    ctx = AnalysisContext.resolve(AnalysisOptions(), path=source, data=source.read_bytes()).with_program(program)
    assert ctx.text == source.read_text()
    for report in result.kernels:
        assert report.launch == ctx.launches[report.mangled].launch
        assert report.occupancy.occupancy == ctx.occupancy[report.mangled].occupancy
