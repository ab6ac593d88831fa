"""Captured launches reach the model: they become `captured` assumptions and win over what the
source folds to (a real capture of a real program, analysed by the real pipeline)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope.analysis.options import scalar_value
from kernelscope.analysis.capture.run import with_capture
from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.pipeline import analyze
from kernelscope.analysis.frontend.toolchain import ToolchainError, locate_toolchain

PROGRAMS = Path(__file__).parent / "programs"


@pytest.fixture(scope="module", autouse=True)
def _nvcc():
    try:
        locate_toolchain()
    except ToolchainError as e:
        pytest.skip(f"no nvcc: {e}")


def _by_name(result):
    return {k.name.split("(")[0].split()[-1]: k for k in result.kernels}


def test_captured_launches_are_what_the_model_uses(tmp_path):
    src = PROGRAMS / "launches.cu"
    out = with_capture(src, AnalysisOptions())
    # each kernel by its base name and each instance by its full name, as the program model names it
    assert out.message is None and set(out.options.captured) == {
        "saxpy", "scale", "saxpy(int, float, float const*, float*)", "void scale<128>(float*, long)"}
    kernels = _by_name(analyze(src.resolve(), out.options, depth="quick"))
    saxpy, scale = kernels["saxpy"], kernels["scale<128>"]
    assert (saxpy.launch.grid, saxpy.launch.block) == ((4096, 1, 1), (256, 1, 1))
    assert (scale.launch.grid, scale.launch.block, scale.launch.dynamic_smem) == ((4, 2, 1), (128, 1, 1), 64)
    got = {a.name: (a.value, a.source) for a in saxpy.assumptions}
    assert got["n"] == ("1048576", "captured")
    assert got["launches"] == ("4", "captured") and got["grid"][1] == got["block"][1] == "captured"


def test_without_capture_the_same_kernels_use_other_sources():
    kernels = _by_name(analyze((PROGRAMS / "launches.cu").resolve(), AnalysisOptions(), depth="quick"))
    assert all(a.source != "captured" for k in kernels.values() for a in k.assumptions)


def test_a_program_that_stops_early_says_so_and_keeps_its_launches():
    out = with_capture(PROGRAMS / "early_exit.cu", AnalysisOptions())
    assert "stopped early (exit 1)" in out.message
    assert out.options.captured["fill"].grid == (32, 1, 1) and out.options.captured["fill"].launches == 1


def test_a_file_without_main_is_left_to_the_static_sources(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k(int* p) { p[0] = 1; }\n")
    out = with_capture(src, AnalysisOptions())
    assert out.capture is None and "no main()" in out.message and out.options == AnalysisOptions()


@pytest.mark.parametrize("hexed,ty,want", [
    ("ffffffff", "int", -1), ("ffffffff", "unsigned int", 4294967295), ("0000803f", "float", None),
    ("4d00000000000000", "long", 77), ("0010000000000000", "const size_t", 4096), ("00", "float*", None),
])
def test_integer_arguments_decode_by_their_declared_type(hexed, ty, want):
    assert scalar_value(hexed, ty) == want
