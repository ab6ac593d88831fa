"""Inclusion context (issue #14 item 4): a file that nvcc does not compile on its own but that
another file of the workspace #includes is analysed in that file's translation unit, and the
results are for its own lines. tests/inputs/inclusion/ is the layout: main.cu includes kernels.cuh
(templates, an annotation) and kernels_impl.cu (which needs a macro main.cu defines first).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kernelscope.analysis.emulator.launch import kernel_annotation, resolve_launch
from kernelscope.analysis.frontend.inclusion import includers, with_context
from kernelscope.analysis.options import AnalysisOptions
from kernelscope.analysis.pipeline import analyze
from kernelscope.analysis.frontend.source import parse_source

HERE = Path(__file__).resolve().parent / "inclusion"
MAIN, HEADER, IMPL = HERE / "main.cu", HERE / "kernels.cuh", HERE / "kernels_impl.cu"


def _assumed(kernel) -> dict[str, tuple[str, str]]:
    return {a["name"]: (a["value"], a["source"]) for a in kernel["assumptions"]}


def test_the_includer_of_a_header_and_of_a_kernel_file_is_found(toolchain):
    assert includers(HEADER, (), toolchain) == (MAIN,)
    assert includers(IMPL, (), toolchain) == (MAIN,)
    assert includers(MAIN, (), toolchain) == ()


def test_a_header_is_analysed_in_its_includers_unit_from_the_command_line(toolchain):
    proc = subprocess.run([sys.executable, "-m", "kernelscope.cli", "analyze", str(HEADER), "--quick", "--json"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["compiled"] and not [m for m in result["messages"] if m["severity"] == "error"]
    assert any("analysed in the translation unit of" in m["message"] and str(MAIN) in m["message"]
               for m in result["messages"])
    # only the header's kernels, at the header's lines; main.cu's unrolled_add is another file's
    kernels = {k["name"].split("(")[0]: k for k in result["kernels"]}
    assert set(kernels) == {"void tiled_scale<128>", "fill"}
    assert (kernels["void tiled_scale<128>"]["line"], kernels["fill"]["line"]) == (7, 13)
    header_lines = len(HEADER.read_text().splitlines())
    assert all(0 < lr["line"] <= header_lines for k in kernels.values() for lr in k["lines"])
    # the launches are main.cu's: dim3 grid(CEIL_DIV(n, tile)) with constexpr tile = 128, n = 1 << 20
    scale = kernels["void tiled_scale<128>"]
    assert (scale["launch"]["grid"], scale["launch"]["block"]) == ([8192, 1, 1], [128, 1, 1])
    assert _assumed(scale)["n"] == ("1048576", "launch_site") and _assumed(scale)["reps"] == ("3", "launch_site")
    assert "main.cu:" in next(a["detail"] for a in scale["assumptions"] if a["name"] == "grid")


def test_a_kernel_file_that_does_not_compile_alone_shows_no_false_errors():
    result = analyze(IMPL, AnalysisOptions(), depth="quick")
    assert result.compiled and not [m for m in result.messages if m.severity == "error"]
    (k,) = result.kernels
    assert k.name.startswith("unrolled_add") and k.line == 3
    # CEIL_DIV(n, 256 * ELEMS_PER_THREAD) blocks, ELEMS_PER_THREAD defined in main.cu
    assert (k.launch.grid, k.launch.block) == ((1024, 1, 1), (256, 1, 1))


def test_the_includer_sees_its_header_kernels_parameters_and_annotation(toolchain):
    src = with_context(parse_source(MAIN.read_text()), MAIN, MAIN, (), toolchain)
    assert {c.path for c in src.context} == {str(HEADER), str(IMPL)}
    got = {a.name: (a.value, a.source) for a in resolve_launch("void tiled_scale<128>(float*, int, int)", src,
                                                               AnalysisOptions(), 132).assumptions}
    assert got["n"] == ("1048576", "launch_site") and got["reps"] == ("3", "launch_site")
    # `// kernelscope: trip=7` above the template line in the header
    ann = kernel_annotation(src, "void tiled_scale<128>(float*, int, int)")
    assert ann is not None and ann.value("trip") == 7


def test_a_kernel_file_that_compiles_alone_takes_its_launches_from_its_includer(tmp_path, toolchain):
    # kernels.cu compiles on its own, so it is analysed alone; its kernel is launched only by the
    # main.cu that includes it, whose launch is then the kernel's, not a default
    (tmp_path / "kernels.cu").write_text("__global__ void k(float *x, int n) { x[threadIdx.x] = n; }\n")
    (tmp_path / "main.cu").write_text('#include "kernels.cu"\nint main() { k<<<64, 128>>>(0, 7); }\n')
    kernels = tmp_path / "kernels.cu"
    src = with_context(parse_source(kernels.read_text()), kernels, kernels, (), toolchain)
    got = {a.name: (a.value, a.source) for a in resolve_launch("k", src, AnalysisOptions(), 132).assumptions}
    assert (got["grid"], got["block"], got["n"]) == (("(64, 1, 1)", "launch_site"), ("(128, 1, 1)", "launch_site"),
                                                     ("7", "launch_site"))
    assert "main.cu:2" in next(a.detail for a in resolve_launch("k", src, AnalysisOptions(), 132).assumptions
                               if a.name == "grid")


def test_a_header_kernels_loops_are_the_headers_not_the_includers_lines(tmp_path):
    # main.cu has a host loop at line 9, the line of tiled_scale's `for (r < reps)` in the header:
    # the kernel's trips come from its own loop and the launch's reps = 3, never from main.cu's
    (tmp_path / "kernels.cuh").write_text(HEADER.read_text())
    loop_line = next(i for i, t in enumerate(HEADER.read_text().splitlines(), 1) if "r < reps" in t)
    lines = ["#include <cuda_runtime.h>", '#include "kernels.cuh"', "int main() {", "    float *x = 0;",
             "    int s = 0;"]
    lines += ["    s += 1;"] * (loop_line - 1 - len(lines))
    lines += ["    for (int j = 0; j < 1000000; ++j) s += j;",
              "    tiled_scale<128><<<(1 << 20) / 128, 128>>>(x, 1 << 20, 3);", "    return s;", "}"]
    (tmp_path / "main.cu").write_text("\n".join(lines) + "\n")
    result = analyze(tmp_path / "main.cu", AnalysisOptions(), depth="quick")
    (k,) = [k for k in result.kernels if "tiled_scale" in k.name]
    trips = [a for a in k.assumptions if a.name.startswith("trip_count@")]
    assert trips and not any("1000000" in a.detail for a in trips), trips
    # reps = 3 from the launch: folded from the loop's bound, or (since 2026-11-29, when the
    # header's parameter names give the walked warp its arguments) the loop's own condition
    # executed over it
    assert any(a.value == "3" and a.source == "launch_site" for a in trips), trips


def test_a_header_kernels_values_include_its_headers_constants(tmp_path, toolchain):
    # the loop bound TILE is a #define of the header, not of the .cu analysed
    (tmp_path / "k.cuh").write_text("#define TILE 48\n__global__ void k(float *x) {\n"
                                    "  for (int i = 0; i < TILE; ++i) x[i] += 1.0f;\n}\n")
    (tmp_path / "main.cu").write_text('#include "k.cuh"\nint main() { k<<<1, 32>>>(0); }\n')
    main = tmp_path / "main.cu"
    src = with_context(parse_source(main.read_text()), main, main, (), toolchain)
    assert resolve_launch("k(float*)", src, AnalysisOptions(), 132).values["TILE"] == 48
